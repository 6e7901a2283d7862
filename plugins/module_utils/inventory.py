"""Reading the inventory: one variable of one host, integers, addresses, and which address a host has.

Every role's model (Kafka, ZooKeeper, firewall, Spark) reads hostvars through these functions, so a
missing host, a null value or a string "3" is treated the same way everywhere. Pure functions.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
# Where a host's address comes from, first match wins (then the inventory name, if it is an IP or a fully
# qualified name). Kafka nodes: the advertised host, else the connection address. ZooKeeper servers put
# zookeeper_address in front, so brokers' zookeeper.connect and the ensemble's zoo.cfg agree.
KAFKA_ADDRESS = ("kafka_advertised_host", "ansible_host")
ZOOKEEPER_ADDRESS = ("zookeeper_address", *KAFKA_ADDRESS)
# Spark hosts: the advertised host, else the connection address, else the inventory name as it is.
SPARK_ADDRESS = ("spark_advertised_host", "ansible_host")
# The source address of a host's packets (firewall rules) and where other hosts reach its exporters.
FIREWALL_ADDRESS = ("firewall_address", "ansible_host")


def get(hostvars: Mapping[str, Any], host: str, name: str, default: Any = None) -> Any:
    """One variable of one host; `default` when the host or the variable is missing or null."""
    try:
        value = hostvars[host][name]
    except (KeyError, TypeError):
        return default
    return default if value is None else value


def as_int(value: Any) -> int | None:
    """An int from an int or a string of digits (an optional leading -); None for anything else, bools included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and text.count("-") <= 1 and not text.endswith("-"):
            return int(text)
    return None


def as_bool(value: Any) -> bool | None:
    """A bool from a bool or the text true/false (a templated default arrives as text); None for anything else."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value if isinstance(value, bool) else None


# The classes of networks an inventory names instead of CIDRs (the firewall role's), and the variable listing each.
NETWORK_CLASSES = {
    "admin": "firewall_admin_networks",
    "clients": "firewall_client_networks",
    "monitoring": "firewall_monitoring_networks",
}


def normalise_network(text: Any) -> tuple[str | None, str | None]:
    """(network as ufw writes it, None) or (None, why it is not a network).

    A single address is written without /32 (or /128), as ufw itself shows it.
    """
    raw = str(text).strip()
    try:
        net = ipaddress.ip_network(raw, strict=True)
    except ValueError as exc:
        try:
            loose = ipaddress.ip_network(raw, strict=False)
        except ValueError:
            return None, f"'{raw}' is not a network (CIDR such as 192.0.2.0/24, or one address): {exc}"
        return None, (
            f"'{raw}' has host bits set: write {loose} for the network, or "
            f"{raw.split('/', 1)[0]}/{loose.max_prefixlen} for the one address"
        )
    if net.prefixlen == net.max_prefixlen:
        return str(net.network_address), None
    return str(net), None


def unknown_keys(item: Mapping[str, Any], known: set[str], where: str, who: str = "it") -> list[str]:
    """The problem of a declared mapping (a connector, a mirror, a subject) with keys its kind does not know, as
    `<where>: unknown key(s) ...; <who> knows ... Fix the spelling.`; [] when every key is known."""
    unknown = sorted(set(item) - known)
    if not unknown:
        return []
    return [f"{where}: unknown key(s) {', '.join(unknown)}; {who} knows {', '.join(sorted(known))}. Fix the spelling."]


def is_port(value: Any) -> bool:
    """A TCP/UDP port number, 1..65535."""
    port = as_int(value)
    return port is not None and 0 < port < 65536


def exporter_port(
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    host: str,
    variable: str,
    default: Any,
    service: tuple[str, int],
    problems: list[str],
) -> int | None:
    """A service's metrics exporter port on a host (`variable`, else `default`): None without monitoring hosts, as
    nothing would scrape it. A value that is no TCP port, or the service's own (`service`: its variable and port), is
    a problem, and None."""
    if not groups.get("monitoring"):
        return None
    raw = get(hostvars, host, variable, default)
    if not is_port(raw) or int(str(raw)) == service[1]:
        problems.append(
            f"{host}: {variable} is {raw!r}: it must be a TCP port (1-65535) other than {service[0]} ({service[1]}). "
            "Fix it."
        )
        return None
    return int(str(raw))


def exporter_services(name: str, ports: Mapping[str, int | None], groups: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The firewall records of an exporter: one per port (instances on one machine each have their own), open to
    Prometheus's hosts (group monitoring) and the monitoring networks."""
    by_port: dict[int, list[str]] = {}
    for host, port in ports.items():
        if port:
            by_port.setdefault(port, []).append(host)
    return [
        {
            "name": name,
            "hosts": members,
            "port": port,
            "from_hosts": sorted(groups.get("monitoring") or []),
            "from_networks": ["monitoring"],
        }
        for port, members in sorted(by_port.items())
    ]


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def valid_address(value: Any) -> bool:
    """An IP address or a syntactically valid DNS name."""
    return is_ip(value) or bool(HOSTNAME.match(str(value)))


def host_address(
    hostvars: Mapping[str, Any], host: str, precedence: Sequence[str], bare_names: bool = False
) -> str | None:
    """The address of a host: the first variable in `precedence` that is set, else the inventory name.

    The inventory name is taken when it is an IP or a fully qualified name (as Ansible would connect to
    it). A short alias such as `kafka2` is taken only with bare_names: for cluster peers it is almost
    always an inventory that forgot ansible_host. None when there is no address.
    """
    for name in precedence:
        value = get(hostvars, host, name)
        if value:
            return str(value)
    if bare_names or is_ip(host) or ("." in host and HOSTNAME.match(host)):
        return host
    return None


def checked_address(
    hostvars: Mapping[str, Any], host: str, precedence: Sequence[str], problems: list[str], what: str = ""
) -> str | None:
    """host_address, or None with a problem that names the host and the variables to set when the host has
    no address or an invalid one. what: whose address it is (" for ZooKeeper"), for the message."""
    address = host_address(hostvars, host, precedence)
    variables = " or ".join(precedence)
    if not address:
        problems.append(
            f"{host}: no address{what}: set {variables} for this host in the inventory, or name the host by its "
            "fully qualified DNS name."
        )
        return None
    if not valid_address(address):
        problems.append(
            f"{host}: address '{address}'{what} (from {variables}) is not a valid host name or IP. Fix it in the "
            "inventory."
        )
        return None
    return address


def unique_ids(
    hostvars: Mapping[str, Any],
    hosts: Sequence[str],
    name: str,
    valid: range,
    who: str,
    why_range: str,
    problems: list[str],
    note: str = "",
) -> dict[str, int | None]:
    """Each host's integer id in variable `name` (node ids, ZooKeeper myids): set, in `valid`, unique.

    Every problem names the host, the variable and the bad value; who says which hosts need one ("every
    Kafka host"), why_range why ids lie in `valid`, note what the id becomes (" (it becomes broker.id)").
    Returns host -> id (None when bad).
    """
    ids: dict[str, int | None] = {}
    seen: dict[int, str] = {}
    bounds = f"{valid.start} or more" if valid.stop > 2**31 - 1 else f"{valid.start}..{valid.stop - 1}"
    for host in hosts:
        raw = get(hostvars, host, name)
        value = as_int(raw)
        ids[host] = value
        if raw is None:
            problems.append(f"{host}: {name} is not set. Give {who} a unique {name} ({bounds}) in the inventory{note}.")
        elif value is None or value not in valid:
            problems.append(
                f"{host}: {name} '{raw}' is not an integer, {bounds} ({why_range}). Fix {name} of {host}{note}."
            )
        elif value in seen:
            problems.append(
                f"{host}: {name} {value} is already used by {seen[value]}{note}. Each host needs its own; change "
                f"{name} of {host} or {seen[value]}."
            )
        else:
            seen[value] = host
    return ids


def machine(hostvars: Mapping[str, Any], host: str) -> str:
    """The machine an inventory host runs on: its ansible_host (and ansible_port), else its inventory name.

    Several inventory hosts on one machine are the classroom layout: each runs one Kafka instance
    (kafka_instance), and what the machine has once (packages, the release, ufw) is done by the first.
    """
    address = str(get(hostvars, host, "ansible_host") or host)
    port = get(hostvars, host, "ansible_port")
    return f"{address}:{port}" if port else address


def machine_firsts(hostvars: Mapping[str, Any], hosts: Sequence[str]) -> list[str]:
    """The first of `hosts` on each machine, in their order: the hosts that do a machine's shared work."""
    seen: set[str] = set()
    firsts = []
    for host in hosts:
        key = machine(hostvars, host)
        if key not in seen:
            seen.add(key)
            firsts.append(host)
    return firsts


def instance_dirs(dirs: Sequence[str], instance: str) -> list[str]:
    """An instance's own dirs under the configured ones (/var/lib/kafka/data -> /var/lib/kafka/data/2)."""
    if not instance:
        return list(dirs)
    return [f"{str(item).rstrip('/')}/{instance}" for item in dirs]
