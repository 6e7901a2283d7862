"""The ZooKeeper ensemble model: which servers there are, their myids and addresses, and zoo.cfg.

Every cross-host rule of the ensemble (an odd number of servers, a unique myid in 1..255 per
server, an address for each) is checked here once, from the inventory; the preflight play fails on
the returned `problems` before any host is touched, and each server's zoo.cfg is rendered from the
model. Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
MYID_RANGE = range(1, 256)
# The four-letter words the health checks need (ruok: alive; srvr and mntr: mode and state).
HEALTH_WORDS = ("ruok", "srvr", "mntr")


def _get(hostvars: Mapping[str, Any], host: str, name: str) -> Any:
    try:
        return hostvars[host][name]
    except (KeyError, TypeError):
        return None


def _valid_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return bool(HOSTNAME.match(value))


def zookeeper_address(hostvars: Mapping[str, Any], host: str) -> str | None:
    """The address peers and clients use for a server.

    zookeeper_address, else kafka_advertised_host (the host's address when it also runs Kafka), else
    ansible_host, else the inventory name when it is an IP or a fully qualified name. The kafka
    role builds zookeeper.connect with the same rule.
    """
    for name in ("zookeeper_address", "kafka_advertised_host", "ansible_host"):
        value = _get(hostvars, host, name)
        if value:
            return str(value)
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return host if "." in host and HOSTNAME.match(host) else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def zookeeper_ensemble_model(
    hostvars: Mapping[str, Any], servers: Iterable[str], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Build the ensemble from the inventory and list every problem found in it.

    settings: client_port, peer_port, election_port, group (the inventory group's name, for messages).
    An empty group is no problem here (nothing to install); the kafka role refuses ZooKeeper mode
    without an ensemble. Returns {"servers": {host: server}, "connect": str, "problems": [str]}.
    """
    servers = list(servers)
    group = str(settings.get("group") or "zookeeper")
    problems: list[str] = []
    if len(servers) % 2 == 0 and servers:
        problems.append(
            f"the ZooKeeper ensemble has {len(servers)} servers ({', '.join(servers)}): it must be odd (1, 3 or 5) "
            f"so a majority survives a failure. Add or remove one host in group {group}."
        )
    ports: dict[str, int | None] = {
        name: _as_int(settings.get(name)) for name in ("client_port", "peer_port", "election_port")
    }
    for name, port in ports.items():
        if port is None or not 0 < port < 65536:
            problems.append(f"zookeeper_{name} '{settings.get(name)}' is not a TCP port number.")
    numbers = [p for p in ports.values() if p is not None]
    if len(set(numbers)) != len(numbers):
        problems.append(
            f"zookeeper_client_port, zookeeper_peer_port and zookeeper_election_port must differ (got {numbers})."
        )

    seen: dict[int, str] = {}
    model: dict[str, dict[str, Any]] = {}
    for host in servers:
        raw = _get(hostvars, host, "zookeeper_myid")
        myid = _as_int(raw)
        if raw is None:
            problems.append(
                f"{host}: zookeeper_myid is not set. Give every host in group {group} a unique zookeeper_myid "
                f"({MYID_RANGE.start}..{MYID_RANGE.stop - 1}) in the inventory."
            )
        elif myid is None or myid not in MYID_RANGE:
            problems.append(
                f"{host}: zookeeper_myid '{raw}' is not an integer in {MYID_RANGE.start}..{MYID_RANGE.stop - 1}."
            )
        elif myid in seen:
            problems.append(
                f"{host}: zookeeper_myid {myid} is already used by {seen[myid]}. Each server needs its own myid; "
                f"change zookeeper_myid of {host} or {seen[myid]}."
            )
        else:
            seen[myid] = host
        address = zookeeper_address(hostvars, host)
        if not address:
            problems.append(
                f"{host}: no address for ZooKeeper: set ansible_host (or zookeeper_address) for this host in the "
                "inventory, or name the host by its fully qualified DNS name."
            )
        elif not _valid_address(address):
            problems.append(f"{host}: ZooKeeper address '{address}' is not a valid host name or IP.")
        model[host] = {"host": host, "myid": myid, "address": str(address or "")}

    connect = ",".join(f"{s['address']}:{ports['client_port']}" for s in model.values())
    return {"servers": model, "connect": connect, "problems": problems}


def zookeeper_config(model: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, str]:
    """The role's zoo.cfg (the same on every server; the server finds itself by its myid file)."""
    words = list(dict.fromkeys([*HEALTH_WORDS, *(settings.get("four_letter_words") or [])]))
    config = {
        "tickTime": str(settings["tick_time"]),
        "initLimit": str(settings["init_limit"]),
        "syncLimit": str(settings["sync_limit"]),
        "dataDir": str(settings["data_dir"]),
        "clientPort": str(settings["client_port"]),
        "4lw.commands.whitelist": ",".join(words),
        # The AdminServer (Jetty on 8080) is not needed for health checks and would clash with other
        # services on shared hosts.
        "admin.enableServer": "false",
        "autopurge.snapRetainCount": str(settings["autopurge_snap_retain_count"]),
        "autopurge.purgeInterval": str(settings["autopurge_purge_interval"]),
    }
    for server in sorted(model["servers"].values(), key=lambda s: s["myid"] or 0):
        config[f"server.{server['myid']}"] = f"{server['address']}:{settings['peer_port']}:{settings['election_port']}"
    return config


def zookeeper_cfg_text(config: Mapping[str, Any]) -> str:
    """zoo.cfg text (Java properties): server.N lines in myid order, everything else sorted."""

    def order(key: str) -> tuple[int, int, str]:
        if key.startswith("server.") and key[7:].isdigit():
            return (1, int(key[7:]), key)
        return (0, 0, key)

    lines = []
    for key in sorted(config, key=order):
        raw = config[key]
        text = ("true" if raw else "false") if isinstance(raw, bool) else str(raw)
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "zookeeper_ensemble_model": zookeeper_ensemble_model,
            "zookeeper_config": zookeeper_config,
            "zookeeper_cfg_text": zookeeper_cfg_text,
        }
