"""The ZooKeeper ensemble model: which servers there are, their myids and addresses, and zoo.cfg.

Every cross-host rule of the ensemble (an odd number of servers, a unique myid in 1..255 per
server, an address for each) is checked here once, from the inventory; the preflight play fails on
the returned `problems` before any host is touched, and each server's zoo.cfg is rendered from the
model. Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    ZOOKEEPER_ADDRESS,
    as_bool,
    as_int,
    checked_address,
    is_port,
    unique_ids,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import to_properties

MYID_RANGE = range(1, 256)
# The four-letter words the health checks need (ruok: alive; srvr and mntr: mode and state).
HEALTH_WORDS = ("ruok", "srvr", "mntr")


def zookeeper_ensemble_model(
    hostvars: Mapping[str, Any], servers: Iterable[str], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Build the ensemble from the inventory and list every problem found in it.

    settings: client_port, peer_port, election_port, group (the inventory group's name, for messages).
    An empty group is no problem here (nothing to install); the kafka role refuses ZooKeeper mode
    without an ensemble. Returns {"servers": {host: server}, "connect": str,
    "ports": {client_port, peer_port, election_port[, metrics_port]}, "problems": [str]}.
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
        name: as_int(settings.get(name)) for name in ("client_port", "peer_port", "election_port")
    }
    for name, port in ports.items():
        if not is_port(port):
            problems.append(f"zookeeper_{name} '{settings.get(name)}' is not a TCP port number.")
    # The JMX exporter agent's port, when metrics are on (zookeeper_metrics_enabled): one for the whole ensemble.
    enabled = as_bool(settings.get("metrics_enabled", False))
    if enabled is None:
        problems.append(f"zookeeper_metrics_enabled must be true or false, not {settings.get('metrics_enabled')!r}.")
        enabled = False
    if enabled and servers:
        ports["metrics_port"] = as_int(settings.get("metrics_port"))
        if not is_port(ports["metrics_port"]):
            problems.append(f"zookeeper_metrics_port '{settings.get('metrics_port')}' is not a TCP port number.")
    numbers = [p for p in ports.values() if p is not None]
    if len(set(numbers)) != len(numbers):
        metrics = " (and zookeeper_metrics_port)" if "metrics_port" in ports else ""
        problems.append(
            f"zookeeper_client_port, zookeeper_peer_port and zookeeper_election_port{metrics} must differ "
            f"(got {numbers})."
        )

    myids = unique_ids(
        hostvars,
        servers,
        "zookeeper_myid",
        MYID_RANGE,
        f"every host in group {group}",
        "ZooKeeper's server ids",
        problems,
    )
    model: dict[str, dict[str, Any]] = {}
    for host in servers:
        myid = myids[host]
        address = checked_address(hostvars, host, ZOOKEEPER_ADDRESS, problems, " for ZooKeeper")
        model[host] = {"host": host, "myid": myid, "address": str(address or "")}

    connect = ",".join(f"{s['address']}:{ports['client_port']}" for s in model.values())
    return {"servers": model, "connect": connect, "ports": ports, "problems": problems}


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
    if as_bool(settings.get("tls")):
        config.update(zookeeper_tls_config(str(settings["tls_dir"])))
        # Clients reach the port with TLS only: without clientPort nothing listens in plaintext.
        config["secureClientPort"] = config.pop("clientPort")
    for server in sorted(model["servers"].values(), key=lambda s: s["myid"] or 0):
        config[f"server.{server['myid']}"] = f"{server['address']}:{settings['peer_port']}:{settings['election_port']}"
    return config


def zookeeper_tls_config(tls_dir: str) -> dict[str, str]:
    """zoo.cfg's TLS: the client port (Netty, every client shows a certificate from the project CA and is known by
    its subject, the x509 auth scheme Kafka's znode ACLs name) and the quorum (peers and election, each server
    checking the other's certificate names its address). Key stores in PEM: the server's unencrypted PKCS#8 key
    and its certificate in node.pem, the project CA in ca.pem; no password anywhere."""
    stores = {
        "keyStore.location": f"{tls_dir}/node.pem",
        "keyStore.type": "PEM",
        "trustStore.location": f"{tls_dir}/ca.pem",
        "trustStore.type": "PEM",
    }
    return {
        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        # NettyServerCnxnFactory authenticates TLS clients with the provider named x509, which only this
        # registers; without it every TLS client is dropped ("X509 Auth provider not found").
        "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        "ssl.clientAuth": "need",
        **{f"ssl.{key}": value for key, value in stores.items()},
        "sslQuorum": "true",
        **{f"ssl.quorum.{key}": value for key, value in stores.items()},
    }


def zookeeper_cfg_text(config: Mapping[str, Any]) -> str:
    """zoo.cfg text (Java properties): server.N lines in myid order, everything else sorted."""

    def order(key: str) -> tuple[int, int, str]:
        if key.startswith("server.") and key[7:].isdigit():
            return (1, int(key[7:]), key)
        return (0, 0, key)

    return to_properties(config, order=order)


def zookeeper_firewall_services(model: Mapping[str, Any], brokers: Iterable[str]) -> list[dict[str, Any]]:
    """Who must reach each ZooKeeper port (the firewall role's `firewall_services` records): the client port
    the brokers (and the servers' own checks), the quorum ports the servers only."""
    servers, brokers = list(model.get("servers", {})), list(brokers)
    if not servers:
        return []
    ports = model.get("ports", {})
    return [
        {
            "name": "zookeeper client",
            "hosts": servers,
            "port": ports.get("client_port"),
            "from_hosts": list(dict.fromkeys([*brokers, *servers])),
        },
        {"name": "zookeeper peer", "hosts": servers, "port": ports.get("peer_port"), "from_hosts": servers},
        {"name": "zookeeper election", "hosts": servers, "port": ports.get("election_port"), "from_hosts": servers},
    ]


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "zookeeper_ensemble_model": zookeeper_ensemble_model,
            "zookeeper_config": zookeeper_config,
            "zookeeper_cfg_text": zookeeper_cfg_text,
            "zookeeper_firewall_services": zookeeper_firewall_services,
        }
