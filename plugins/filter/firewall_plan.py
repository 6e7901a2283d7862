"""The firewall plan: which ufw rules each host gets, computed once on the controller from the inventory.

Each service role says what it listens on and who must reach it, as plain "service" records
(kafka: listeners and the controller quorum; zookeeper: client, peer and election ports; spark: its
peers and web UIs):

    {"name": "kafka INTERNAL", "hosts": [listening inventory hosts], "port": 9092 | "7000:7100" | "",
     "proto": "tcp", "from_hosts": [inventory hosts], "from_networks": ["clients" | "monitoring" |
     "admin" | a CIDR, ...]}

This module turns them into per-host allow rules (source address, port, protocol): inventory hosts
become their addresses, network classes become the networks the inventory lists for them. SSH from
the admin networks comes first on every host. Nothing else is allowed in: the role sets ufw's
incoming default to deny and deletes any rule the plan does not name.

`problems` lists bad input (a malformed network, no admin network, a host without an IP) so the
preflight play stops before any host is changed. Pure functions over plain data; the only outside
call, name resolution for hosts given by DNS name, is a parameter.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils import inventory
from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import get, normalise_network

# The network classes a service may name, and the variable that lists each (module_utils/inventory, shared with the
# other models that take network classes).
NETWORK_CLASSES = inventory.NETWORK_CLASSES
PROTOCOLS = ("tcp", "udp")
# Where the source address of a host's packets comes from, first match wins (then the inventory name).
FIREWALL_ADDRESS = inventory.FIREWALL_ADDRESS
# ufw's tuple for "from anywhere / to anywhere" in /etc/ufw/user.rules.
ANY_V4, ANY_V6 = "0.0.0.0/0", "::/0"


def _resolve(name: str) -> str | None:
    try:
        return socket.gethostbyname(name)
    except OSError:
        return None


def _ip(value: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        return None


def host_address(hostvars: Mapping[str, Any], host: str, resolve: Callable[[str], str | None] = _resolve) -> str | None:
    """The IP other hosts' packets come from: firewall_address, ansible_host, the inventory name, or DNS.

    ufw rules need an IP; a DNS name is resolved on the controller (the same answer the hosts should get).
    firewall_address is taken as it is: it must be an IP.
    """
    address = str(inventory.host_address(hostvars, host, FIREWALL_ADDRESS, bare_names=True))
    if get(hostvars, host, "firewall_address"):
        return _ip(address)
    return _ip(address) or resolve(address)


def _networks(value: Any, where: str, problems: list[str]) -> list[str]:
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        problems.append(f"{where} must be a list of networks (CIDR), e.g. ['192.0.2.0/24'], not {value!r}.")
        return []
    result = []
    for item in value:
        net, why = normalise_network(item)
        if why:
            problems.append(f"{where}: {why}.")
        elif net is not None:
            result.append(net)
    return result


def _port(value: Any) -> str | None:
    """'' for any port, 'N' or 'N:M' for a port or range; None if malformed."""
    text = str(value if value is not None else "").strip()
    if text == "":
        return ""
    parts = text.split(":")
    if len(parts) in (1, 2) and all(p.isdigit() and 0 < int(p) < 65536 for p in parts):
        return text
    return None


class _Rules:
    """One host's allow rules, deduplicated by (source, port, protocol); SSH rules keep their place first."""

    def __init__(self, own: str | None) -> None:
        self.own = own
        self.rules: dict[tuple[str, str, str], dict[str, str]] = {}

    def add(self, src: str, port: str, proto: str, comment: str) -> None:
        if src == self.own:
            return  # a host's traffic to itself goes over loopback, which ufw always accepts
        key = (src, port, proto)
        if key in self.rules:
            if comment not in self.rules[key]["comment"].split(", "):
                self.rules[key]["comment"] += f", {comment}"
        else:
            self.rules[key] = {"src": src, "port": port, "proto": proto, "comment": comment}

    def ordered(self) -> list[dict[str, str]]:
        return sorted(
            self.rules.values(),
            key=lambda r: (not r["comment"].startswith("ssh"), _port_key(r["port"]), r["proto"], r["src"]),
        )


def firewall_plan(
    hostvars: Mapping[str, Any],
    managed: Iterable[str],
    services: Iterable[Mapping[str, Any]],
    defaults: Mapping[str, Any],
    resolve: Callable[[str], str | None] = _resolve,
) -> dict[str, Any]:
    """Per-host rules and every problem in the inventory's firewall settings.

    managed: the hosts whose firewall the role owns (a host with firewall_enabled false is left alone
    but still counts as a source). defaults: the role's values of firewall_enabled, firewall_ssh_port
    and the three network lists, used where a host's own variables do not set them.
    Returns {"hosts": {host: {"enabled": bool, "address": str, "rules": [rule]}}, "problems": [str]}
    with rule = {"src": str, "port": str, "proto": str, "comment": str}, SSH rules first.
    """
    problems: list[str] = []
    managed = list(dict.fromkeys(managed))
    services = list(services)

    def setting(host: str, name: str) -> Any:
        return get(hostvars, host, name, defaults.get(name))

    addresses: dict[str, str] = {}
    referenced = [h for s in services for h in s.get("from_hosts", [])]
    referenced += [
        h
        for host in managed
        for r in (setting(host, "firewall_extra_rules") or [])
        if isinstance(r, dict)
        for h in r.get("from_hosts", [])
    ]
    for host in dict.fromkeys([*managed, *referenced]):
        address = host_address(hostvars, host, resolve)
        if address is None:
            problems.append(
                f"{host}: no IP address for the firewall rules of its peers: ansible_host "
                f"'{get(hostvars, host, 'ansible_host', host)}' is not an IP and does not resolve on the controller. "
                f"Set firewall_address (the IP this host's cluster traffic comes from) for {host}."
            )
        else:
            addresses[host] = address

    networks: dict[str, dict[str, list[str]]] = {}
    for host in managed:
        networks[host] = {
            cls: _networks(setting(host, var), f"{host}: {var}", problems) for cls, var in NETWORK_CLASSES.items()
        }

    plan: dict[str, dict[str, Any]] = {}
    # Inventory hosts that reach one machine (one Kafka instance each, kafka_instance) share its ufw: one rule
    # set, the union of theirs, which the first of a run's hosts on the machine applies (roles/firewall).
    shared: dict[str, _Rules] = {}
    machine_of = {host: inventory.machine(hostvars, host) for host in managed}
    for host in managed:
        enabled = setting(host, "firewall_enabled")
        if not isinstance(enabled, bool):
            problems.append(f"{host}: firewall_enabled must be true or false, not {enabled!r}.")
            enabled = bool(enabled)
        ssh_port = _port(setting(host, "firewall_ssh_port"))
        if not ssh_port or ":" in ssh_port:
            problems.append(f"{host}: firewall_ssh_port '{setting(host, 'firewall_ssh_port')}' is not a TCP port.")
            ssh_port = "22"
        if enabled and not networks[host]["admin"]:
            problems.append(
                f"{host}: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run "
                "could not reach this host. List the networks you administer from (at least the controller's "
                "address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host."
            )
        rules = shared.setdefault(machine_of[host], _Rules(own=addresses.get(host)))
        for net in networks[host]["admin"]:
            rules.add(net, ssh_port, "tcp", "ssh")
        extra = setting(host, "firewall_extra_rules") or []
        if not isinstance(extra, list):
            problems.append(f"{host}: firewall_extra_rules must be a list of rules, not {extra!r}.")
            extra = []
        for service in [*services, *({**rule, "hosts": [host]} for rule in extra if isinstance(rule, dict))]:
            if host not in service.get("hosts", []):
                continue
            name = str(service.get("name"))
            port = _port(service.get("port"))
            proto = str(service.get("proto") or "tcp")
            if port is None or proto not in PROTOCOLS:
                problems.append(f"{host}: service {name}: port '{service.get('port')}' / proto '{proto}' is malformed.")
                continue
            for source in service.get("from_hosts", []):
                if source in addresses:
                    rules.add(addresses[source], port, proto, name)
            for item in service.get("from_networks", []):
                if item in NETWORK_CLASSES:
                    for net in networks[host][item]:
                        rules.add(net, port, proto, name)
                    continue
                own_net, why = normalise_network(item)
                if why:
                    problems.append(f"{host}: service {name}: network {why}.")
                elif own_net is not None:
                    rules.add(own_net, port, proto, name)
        plan[host] = {"enabled": enabled, "address": addresses.get(host, ""), "rules": []}
    for host in managed:
        plan[host]["rules"] = shared[machine_of[host]].ordered()
    return {"hosts": plan, "problems": problems}


def _port_key(port: str) -> tuple[int, int]:
    if not port:
        return (1, 0)
    return (0, int(port.split(":")[0]))


def address_in_networks(address: str, networks: Iterable[str]) -> bool:
    """True if address lies in one of the networks (used for the lock-out check on the hosts)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for net in networks:
        try:
            if ip in ipaddress.ip_network(str(net), strict=False):
                return True
        except ValueError:
            continue
    return False


def ufw_tuples(text: str) -> list[dict[str, str]]:
    """The rules in ufw's /etc/ufw/user.rules (or user6.rules), from its `### tuple ###` lines.

    Format (ufw 0.36): action proto dport dst sport src direction[_iface] [comment=hex].
    """
    found = []
    for line in text.splitlines():
        if not line.startswith("### tuple ###"):
            continue
        fields = line[len("### tuple ###") :].split()
        if len(fields) < 7:
            continue
        action, proto, dport, dst, sport, src, direction = fields[:7]
        found.append(
            {
                "action": action,
                "proto": proto,
                "dport": dport,
                "dst": dst,
                "sport": sport,
                "src": src,
                "direction": direction,
            }
        )
    return found


def _same_src(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_network(a, strict=False) == ipaddress.ip_network(b, strict=False)
    except ValueError:
        return a == b


def _holds(rule: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether a rule ufw holds is the planned rule: allow, in, from src, to any address, its port (or any),
    its protocol."""
    port = "" if rule["dport"] == "any" else rule["dport"]
    return (
        rule["action"] == "allow"
        and rule["direction"] == "in"
        and rule["dst"] in (ANY_V4, ANY_V6)
        and rule["sport"] == "any"
        and rule["proto"] == wanted["proto"]
        and port == wanted["port"]
        and _same_src(rule["src"], wanted["src"])
    )


def ufw_unwanted(current: Iterable[Mapping[str, str]], wanted: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """The rules ufw holds that the plan does not name, as arguments for community.general.ufw delete."""
    wanted = list(wanted)
    return [_delete_args(rule) for rule in current if not any(_holds(rule, w) for w in wanted)]


def ufw_missing(wanted: Iterable[Mapping[str, str]], current: Iterable[Mapping[str, str]]) -> list[Mapping[str, str]]:
    """The planned rules ufw does not hold yet, in the plan's order (SSH first): only these are added, so a
    run on a host whose rules are already right asks ufw nothing."""
    current = list(current)
    return [w for w in wanted if not any(_holds(rule, w) for rule in current)]


def _delete_args(rule: Mapping[str, str]) -> dict[str, str]:
    direction, _underscore, interface = rule["direction"].partition("_")
    return {
        "rule": rule["action"],
        "direction": direction,
        "from_ip": "any" if rule["src"] in (ANY_V4, ANY_V6) else rule["src"],
        "to_ip": "any" if rule["dst"] in (ANY_V4, ANY_V6) else rule["dst"],
        "from_port": "" if rule["sport"] == "any" else rule["sport"],
        "to_port": "" if rule["dport"] == "any" else rule["dport"],
        "proto": rule["proto"],
        "interface": interface,
    }


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "firewall_plan": firewall_plan,
            "firewall_address_in_networks": address_in_networks,
            "firewall_ufw_tuples": ufw_tuples,
            "firewall_ufw_unwanted": ufw_unwanted,
            "firewall_ufw_missing": ufw_missing,
        }
