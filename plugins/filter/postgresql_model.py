"""The PostgreSQL model: which hosts run a PostgreSQL server for change data capture, the users, databases and
publications they keep, who may log in from where (pg_hba.conf and ufw alike), and every problem in those settings.
Built once on the controller (roles/postgresql/tasks/preflight.yml) from the inventory and the Kafka role's models.

    {"servers": {host: {"address": ip, "port": 5432, "names": [SANs],
                        "metrics_port": 9187 | None (no monitoring hosts: no exporter)}},
     "tls": true, "ca_dir": the project CA's directory on the controller ("" without one),
     "users": [{"name", "replication": bool}],            # passwords stay in the variable, never in the model
     "databases": [{"name", "owner", "publication": "" | name, "readers": [users]}],
     "hba": [{"database", "user", "address": CIDR}],      # one hostssl/host scram-sha-256 line each
     "firewall_services": [firewall role records], "problems": [str]}

Logical replication (Debezium's pgoutput) logs in to a database, not to `replication`: its pg_hba.conf line is the
database's. Nothing in the model drops anything: a user, database or publication the inventory no longer declares
stays on the server (the role never deletes data).

Pure functions over plain data (unit tested in tests/unit/test_postgresql_model.py).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    FIREWALL_ADDRESS,
    NETWORK_CLASSES,
    exporter_port,
    exporter_services,
    get,
    host_address,
    is_ip,
    is_port,
    normalise_network,
    unknown_keys,
)

# An unquoted SQL identifier the role may use as is (lower case, as PostgreSQL folds them), and no longer than
# NAMEDATALEN - 1.
IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Roles PostgreSQL or Debian's package own, and the exporter's login (a role without a password, peer login only).
RESERVED_USERS = {"postgres", "public", "pg_monitor"}
EXPORTER_USER = "prometheus"
USER_KEYS = {"name", "password", "replication"}
DATABASE_KEYS = {"name", "owner", "publication", "readers"}
CLIENT_KEYS = {"user", "database", "from_hosts", "from_networks"}
# max_slot_wal_keep_size: a size PostgreSQL reads (a number and a unit), or -1 (unbounded, refused: a slot whose
# consumer is gone would keep WAL until the disk is full).
SIZE = re.compile(r"^[0-9]+\s*(kB|MB|GB|TB)$")


def _list(raw: Any, name: str, what: str, problems: list[str]) -> list[Any]:
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(f"{name} is a {type(raw).__name__}: it must be a list of {what}. Fix {name} in group_vars.")
        return []
    return raw


def _users(raw: Any, problems: list[str]) -> tuple[list[dict[str, Any]], set[str]]:
    users: list[dict[str, Any]] = []
    names: set[str] = set()
    for index, item in enumerate(_list(raw, "postgresql_users", "users (name, password, replication)", problems)):
        where = f"postgresql_users[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is not a mapping: each user is {{name, password, replication}}.")
            continue
        name = str(item.get("name") or "")
        where = f"{where} ({name or 'no name'})"
        problems += unknown_keys(item, USER_KEYS, where, "a user")
        if not IDENTIFIER.match(name):
            problems.append(
                f"{where}: name {name!r} must be lower-case letters, digits and '_' (not starting with a digit, at "
                "most 63). Rename the user."
            )
            continue
        if name in RESERVED_USERS:
            problems.append(f"{where}: {name} is PostgreSQL's own role; the role never manages it. Pick another name.")
            continue
        if name == EXPORTER_USER:
            problems.append(
                f"{where}: {name} is the metrics exporter's login (no password, local peer login only). Pick another "
                "name."
            )
            continue
        if name in names:
            problems.append(f"{where}: user {name} is declared twice. Declare each user once.")
            continue
        password = item.get("password")
        if not isinstance(password, str) or not password:
            problems.append(
                f"{where}: password is missing or not a string: every user logs in with SCRAM. Give it a password "
                "(from ansible-vault)."
            )
        replication = item.get("replication", False)
        if not isinstance(replication, bool):
            problems.append(f"{where}: replication is {replication!r}; it must be true or false.")
            replication = False
        names.add(name)
        users.append({"name": name, "replication": replication})
    return users, names


def _databases(raw: Any, users: set[str], problems: list[str]) -> list[dict[str, Any]]:
    databases: list[dict[str, Any]] = []
    seen: set[str] = set()
    what = "databases (name, owner, publication, readers)"
    for index, item in enumerate(_list(raw, "postgresql_databases", what, problems)):
        where = f"postgresql_databases[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is not a mapping: each database is {{name, owner, publication, readers}}.")
            continue
        name = str(item.get("name") or "")
        where = f"{where} ({name or 'no name'})"
        problems += unknown_keys(item, DATABASE_KEYS, where, "a database")
        if not IDENTIFIER.match(name) or name in ("postgres", "template0", "template1"):
            problems.append(
                f"{where}: name {name!r} must be a lower-case identifier of your own (not postgres or a template). "
                "Rename the database."
            )
            continue
        if name in seen:
            problems.append(f"{where}: database {name} is declared twice. Declare each database once.")
            continue
        seen.add(name)
        owner = str(item.get("owner") or "")
        if owner not in users:
            problems.append(
                f"{where}: owner {owner!r} is not a user postgresql_users declares. Declare it, or fix the owner."
            )
        publication = str(item.get("publication") or "")
        if publication and not IDENTIFIER.match(publication):
            problems.append(
                f"{where}: publication {publication!r} must be a lower-case identifier (e.g. kafkalab_cdc). Rename it."
            )
        readers = item.get("readers") or []
        if not isinstance(readers, list):
            problems.append(f"{where}: readers must be a list of users, not {readers!r}.")
            readers = []
        for reader in readers:
            if str(reader) not in users:
                problems.append(
                    f"{where}: reader {reader!r} is not a user postgresql_users declares. Declare it, or remove it."
                )
        databases.append(
            {"name": name, "owner": owner, "publication": publication, "readers": [str(r) for r in readers]}
        )
    return databases


def _sources(
    item: Mapping[str, Any],
    where: str,
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    server: str,
    problems: list[str],
) -> tuple[list[str], list[str], list[str]]:
    """A client's sources: (inventory hosts, network classes and CIDRs for the firewall, CIDRs for pg_hba.conf)."""
    hosts: list[str] = []
    for source in item.get("from_hosts") or []:
        source = str(source)
        if source in groups and source not in ("all", "ungrouped"):
            hosts += list(groups.get(source) or [])
        elif source in (groups.get("all") or []):
            hosts.append(source)
        else:
            problems.append(
                f"{where}: from_hosts names {source!r}, which is neither a host nor a group of the inventory. Fix the "
                "name."
            )
    hosts = sorted(set(hosts))
    cidrs: list[str] = []
    for host in hosts:
        address = host_address(hostvars, host, FIREWALL_ADDRESS)
        if address is None or not is_ip(address):
            problems.append(
                f"{where}: client host {host} has no IP address (firewall_address or ansible_host) for pg_hba.conf "
                "and the firewall. Set firewall_address for it."
            )
            continue
        cidrs.append(str(ipaddress.ip_network(address)))
    networks: list[str] = []
    for entry in item.get("from_networks") or []:
        entry = str(entry)
        if entry in NETWORK_CLASSES:
            # The class's networks as the firewall reads them (a malformed one is the firewall plan's to refuse).
            listed = [normalise_network(n)[0] for n in get(hostvars, server, NETWORK_CLASSES[entry], [])]
            networks.append(entry)
            cidrs += [str(ipaddress.ip_network(n)) for n in listed if n]
            continue
        network, why = normalise_network(entry)
        if network is None:
            problems.append(
                f"{where}: from_networks entry {entry!r} is neither a network class ({', '.join(NETWORK_CLASSES)}) nor "
                f"a network: {why}. Fix it."
            )
            continue
        networks.append(entry)
        # pg_hba.conf wants a mask even for one address.
        cidrs.append(str(ipaddress.ip_network(network)))
    return hosts, networks, list(dict.fromkeys(cidrs))


def postgresql_model(
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    kafka: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The model above. `settings`: the role's variables as the first PostgreSQL host sees them (defaults applied)."""
    group = str(settings.get("postgresql_group") or "postgresql")
    hosts = sorted(groups.get(group) or [])
    problems: list[str] = []
    model: dict[str, Any] = {
        "servers": {},
        "tls": bool(settings.get("postgresql_tls", True)),
        "ca_dir": "",
        "users": [],
        "databases": [],
        "hba": [],
        "firewall_services": [],
        "problems": problems,
    }
    if not hosts:
        return model
    tls = model["tls"]
    own_ca = str(settings.get("postgresql_tls_own_ca") or "")
    ca_dir = str(kafka.get("tls_ca_dir") or "")
    if tls and not own_ca and not ca_dir:
        problems.append(
            "postgresql_tls is true, but there is no CA to sign the servers' certificates: the Kafka cluster has no "
            "project CA (no listener runs TLS) and kafka_tls_own_ca is not set. Turn TLS on for a Kafka listener, "
            "supply your own CA, or set postgresql_tls: false."
        )
    model["ca_dir"] = ca_dir if tls and not own_ca else ""
    size = str(settings.get("postgresql_max_slot_wal_keep_size") or "")
    if not SIZE.match(size):
        problems.append(
            f"postgresql_max_slot_wal_keep_size is {settings.get('postgresql_max_slot_wal_keep_size')!r}: it must be a "
            "size such as 1GB (a slot whose consumer is gone keeps WAL up to it, then the slot is invalidated; "
            "unbounded would fill the disk). Fix it in group_vars."
        )
    for host in hosts:
        port = get(hostvars, host, "postgresql_port", settings.get("postgresql_port", 5432))
        if not is_port(port):
            problems.append(f"{host}: postgresql_port is {port!r}: it must be a TCP port (1-65535). Fix it.")
            continue
        address = host_address(hostvars, host, FIREWALL_ADDRESS, bare_names=True)
        names = list(dict.fromkeys([host, str(address)]))
        # The exporter (Debian's prometheus-postgres-exporter) runs where Prometheus would scrape it.
        metrics = exporter_port(
            hostvars,
            groups,
            host,
            "postgresql_metrics_port",
            settings.get("postgresql_metrics_port", 9187),
            ("postgresql_port", int(str(port))),
            problems,
        )
        model["servers"][host] = {
            "address": str(address),
            "port": int(str(port)),
            "names": names,
            "metrics_port": metrics,
        }

    users, user_names = _users(settings.get("postgresql_users"), problems)
    databases = _databases(settings.get("postgresql_databases"), user_names, problems)
    database_names = {d["name"] for d in databases}
    by_port: dict[int, list[str]] = {}
    for host, server in model["servers"].items():
        by_port.setdefault(server["port"], []).append(host)
    hba: list[dict[str, str]] = []
    services: list[dict[str, Any]] = []
    what = "clients (user, database, from_hosts, from_networks)"
    for index, item in enumerate(_list(settings.get("postgresql_clients"), "postgresql_clients", what, problems)):
        where = f"postgresql_clients[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is not a mapping: each client is {{user, database, from_hosts, from_networks}}.")
            continue
        user = str(item.get("user") or "")
        database = str(item.get("database") or "")
        where = f"{where} ({user or 'no user'}@{database or 'no database'})"
        problems += unknown_keys(item, CLIENT_KEYS, where, "a client")
        if user not in user_names:
            problems.append(f"{where}: user {user!r} is not a user postgresql_users declares. Declare it, or fix it.")
        if database not in database_names:
            problems.append(
                f"{where}: database {database!r} is not one postgresql_databases declares. Declare it, or fix it."
            )
        not_lists = [key for key in ("from_hosts", "from_networks") if not isinstance(item.get(key) or [], list)]
        if not_lists:
            problems.append(f"{where}: {not_lists[0]} must be a list, not {item.get(not_lists[0])!r}.")
            continue
        from_hosts, from_networks, cidrs = _sources(item, where, hostvars, groups, hosts[0], problems)
        if not cidrs:
            problems.append(
                f"{where}: no host or network may log in as it (from_hosts and from_networks give no address). "
                "Name the client's hosts or groups in from_hosts."
            )
        hba += [{"database": database, "user": user, "address": cidr} for cidr in cidrs]
        services += [
            {
                "name": f"postgresql {user}@{database}",
                "hosts": members,
                "port": port,
                "from_hosts": from_hosts,
                "from_networks": from_networks,
            }
            for port, members in sorted(by_port.items())
        ]
    # The exporter: Prometheus's hosts and the monitoring networks.
    services += exporter_services(
        "postgresql metrics", {h: s["metrics_port"] for h, s in model["servers"].items()}, groups
    )
    model.update({"users": users, "databases": databases, "hba": hba, "firewall_services": services})
    return model


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"postgresql_model": postgresql_model}
