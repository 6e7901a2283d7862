"""The Kafka cluster model: who votes, who serves, which listeners each node opens and advertises.

Everything a node's server.properties depends on that involves other hosts is computed here, once,
from the inventory, and every cross-host rule (unique node ids, an odd controller quorum, listener
names and ports, replication settings) is checked here too. The preflight play fails on the
returned `problems` before any host is touched; the role renders properties from `nodes`.

Two modes (settings["mode"]): `kraft` (the default: KRaft controllers, node.id) and `zookeeper`
(Kafka 3.x only: no controllers, broker.id, zookeeper.connect built from the ZooKeeper ensemble's
addresses). The ensemble itself (myid, quorum size) is the zookeeper role's model to check.
In ZooKeeper mode, hosts already in the controller group are standby controllers: no node of the
model, prepared for playbooks/migrate_to_kraft.yml. That playbook (and rollback_to_zookeeper.yml)
sets settings["migration_phase"], which gives every node the stage it runs in that phase
(MIGRATION_PHASES): brokers in ZooKeeper mode, ZooKeeper mode with the migration on, or KRaft;
controllers with the migration on (dual write) or finalized.

The listener rules are in plugin_utils/kafka_listeners.py and the settings rules in
plugin_utils/kafka_cluster_checks.py; this file applies them in order and builds the model.

Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    KAFKA_ADDRESS,
    as_bool,
    as_int,
    checked_address,
    get,
    instance_dirs,
    is_port,
    machine,
    unique_ids,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.replication import replication_problems
from ansible_collections.kafkalab.kafka.plugins.plugin_utils.kafka_cluster_checks import (
    MIGRATION_PHASES,
    _check_instance_name,
    _check_machines,
    _check_migration,
    _check_migration_instances,
    _check_owned_properties,
    _check_settings,
    _check_zookeeper_mode,
    _metrics_port,
    _zookeeper_connect,
)
from ansible_collections.kafkalab.kafka.plugins.plugin_utils.kafka_listeners import (
    _check_advertised_unique,
    _check_listeners,
    _host_listeners,
    _host_overrides,
)

# Named by tests and roles/kafka/README.md as this module's: the phases stay importable from here.
__all__ = ["MIGRATION_PHASES", "FilterModule", "kafka_cluster_model"]

# The protocols that run TLS: SSL (the certificate is the identity) and SASL_SSL (SCRAM users over TLS).
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
MODES = ("kraft", "zookeeper")
# With broker.id.generation.enable (on by default in ZooKeeper mode) ids above this are refused.
RESERVED_BROKER_MAX_ID = 1000
# The name the metrics exporter's port goes by in the per-host port checks (listeners, ZooKeeper, instances).
METRICS_PORT_NAME = "metrics (kafka_metrics_port)"


@dataclass(frozen=True)
class _Cluster:
    """What the per-host rules and the returned model read, once the groups are settled (in ZooKeeper mode
    `controllers` is empty: the controller group's hosts are standby, no node of the model)."""

    hostvars: Mapping[str, Any]
    settings: Mapping[str, Any]
    controllers: list[str]
    brokers: list[str]
    zookeepers: list[str]
    listeners: list[Mapping[str, Any]]
    controller_listener: dict[str, Any]
    inter_broker_name: str
    mode: str
    phase: str

    @property
    def zookeeper_mode(self) -> bool:
        return self.mode == "zookeeper"


def _check_tls_outside_kraft(
    listeners: list[Mapping[str, Any]],
    controller_listener: Mapping[str, Any],
    mode: str,
    phase: str,
    problems: list[str],
) -> bool:
    """Whether any listener runs TLS; reported outside plain KRaft (ZooKeeper mode or a migration phase)."""
    tls_listeners = [
        str(item.get("name"))
        for item in [*listeners, controller_listener]
        if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS
    ]
    tls = bool(tls_listeners)
    if tls and (mode == "zookeeper" or phase):
        problems.append(
            f"listener(s) {', '.join(tls_listeners)} (kafka_listeners / kafka_controller_listener) run TLS (SSL or "
            "SASL_SSL), but the "
            "cluster runs on ZooKeeper or migrates off it "
            f"(kafka_mode {mode}, kafka_migration_phase '{phase}'): TLS is supported in KRaft mode only for now. "
            "Keep PLAINTEXT (kafka_listeners, kafka_controller_listener) until the migration is finalized, then set "
            "SSL."
        )
    return tls


def _check_groups(
    hostvars: Mapping[str, Any],
    controllers: list[str],
    brokers: list[str],
    zookeepers: list[str],
    settings: Mapping[str, Any],
    zookeeper_mode: bool,
    phase: str,
    problems: list[str],
) -> tuple[list[str], list[str], str]:
    """The groups against the mode and the migration phase: (standby controllers, controllers, zookeeper.connect)."""
    zookeeper_connect = ""
    standby: list[str] = []
    if zookeeper_mode:
        _check_zookeeper_mode(settings, problems)
        zookeeper_connect = _zookeeper_connect(hostvars, zookeepers, settings, problems, "kafka_mode is zookeeper")
        # Prepared for the migration (Java, firewall), but no Kafka runs there until migrate_to_kraft.yml.
        standby, controllers = controllers, []
    elif phase:
        _check_migration(controllers, brokers, settings, phase, problems)
        zookeeper_connect = _zookeeper_connect(
            hostvars, zookeepers, settings, problems, "the ZooKeeper -> KRaft migration reads from ZooKeeper"
        )
    elif zookeepers:
        problems.append(
            f"the ZooKeeper group has hosts ({', '.join(zookeepers)}) but kafka_mode is kraft, so no broker would "
            "use them. Set kafka_mode: zookeeper (with kafka_version 3.9.x), or empty group zookeeper "
            "(kafka_zookeeper_group). To move a ZooKeeper-mode cluster to KRaft, run playbooks/migrate_to_kraft.yml "
            "(or rollback_to_zookeeper.yml); empty the group once the migration is finalized."
        )
    if not zookeeper_mode and not controllers:
        problems.append(
            "the KRaft controller group is empty: put 1, 3 or 5 hosts in group kafka_controller "
            "(kafka_controller_group)."
        )
    elif not zookeeper_mode and len(controllers) % 2 == 0 and not settings.get("quorum_change"):
        problems.append(
            f"the KRaft controller quorum has {len(controllers)} hosts ({', '.join(controllers)}): it must be odd "
            "(1, 3 or 5) so a majority survives a failure. An even count is allowed only while the quorum changes: "
            "run playbooks/add_controller.yml or remove_controller.yml for the host you add or remove."
        )
    if not brokers:
        problems.append("the broker group is empty: put at least one host in group kafka_broker (kafka_broker_group).")
    return standby, controllers, zookeeper_connect


def _node_ids(
    hostvars: Mapping[str, Any], hosts: list[str], zookeeper_mode: bool, problems: list[str]
) -> dict[str, int | None]:
    """Each Kafka host's kafka_node_id, checked unique and in the range its mode accepts."""
    # In ZooKeeper mode kafka_node_id becomes broker.id; the messages say so.
    becomes = " (it becomes broker.id)" if zookeeper_mode else ""
    # Node ids are non-negative; with broker.id.generation.enable (on by default in ZooKeeper mode) ids above
    # reserved.broker.max.id are refused by the broker.
    valid_ids = range(RESERVED_BROKER_MAX_ID + 1) if zookeeper_mode else range(2**31)
    why_ids = "ZooKeeper mode refuses ids above reserved.broker.max.id" if zookeeper_mode else "KRaft node ids"
    return unique_ids(hostvars, hosts, "kafka_node_id", valid_ids, "every Kafka host", why_ids, problems, becomes)


def _controller_port(cluster: _Cluster, host: str, problems: list[str]) -> int | None:
    """The host's controller listener port: kafka_controller_port if it is a port, else the listener's."""
    raw_port = get(cluster.hostvars, host, "kafka_controller_port")
    controller_port = as_int(cluster.controller_listener.get("port"))
    if raw_port is not None:
        if is_port(raw_port):
            controller_port = as_int(raw_port)
        else:
            problems.append(
                f"{host}: kafka_controller_port '{raw_port}' is not a TCP port number. Fix it in host_vars/{host}."
            )
    return controller_port


def _node_ports(
    cluster: _Cluster,
    host: str,
    host_listeners: list[dict[str, Any]],
    controller_port: int | None,
    metrics_port: int | None,
    problems: list[str],
) -> dict[int, str]:
    """The ports one host opens (port -> listener name), each used once, ZooKeeper's on that host included."""
    controller_name = cluster.controller_listener.get("name")
    ports: dict[int, str] = {}
    for item in [
        *host_listeners,
        {"name": controller_name, "port": controller_port},
        {"name": METRICS_PORT_NAME, "port": metrics_port},
    ]:
        if item["port"] is None:
            continue
        if host not in cluster.controllers and item["name"] == controller_name:
            continue
        if item["port"] in ports and METRICS_PORT_NAME in (item["name"], ports[item["port"]]):
            other = ports[item["port"]] if item["name"] == METRICS_PORT_NAME else item["name"]
            problems.append(
                f"{host}: kafka_metrics_port {item['port']} is also the port of listener {other}. Give the "
                f"metrics exporter another port (kafka_metrics_port of {host}, default 7071)."
            )
        elif item["port"] in ports:
            problems.append(
                f"{host}: listeners {ports[item['port']]} and {item['name']} both use port {item['port']}. "
                "Give each listener its own port (kafka_listeners / kafka_listener_overrides)."
            )
        ports[item["port"]] = str(item["name"])
    if (cluster.zookeeper_mode or cluster.phase) and host in cluster.zookeepers:
        for what, variable in (
            ("client", "kafka_zookeeper_client_port / zookeeper_client_port"),
            ("peer", "zookeeper_peer_port"),
            ("election", "zookeeper_election_port"),
        ):
            zk_port = as_int(cluster.settings.get(f"zookeeper_{what}_port"))
            if zk_port in ports:
                problems.append(
                    f"{host}: runs a ZooKeeper server on {what} port {zk_port} ({variable}), which listener "
                    f"{ports[zk_port]} also uses. Give one of them another port."
                )
    return ports


def _stage(cluster: _Cluster, host: str) -> str:
    """What the node runs as in the mode and migration phase (MIGRATION_PHASES)."""
    if cluster.zookeeper_mode:
        return "zookeeper"
    if cluster.phase in MIGRATION_PHASES:
        return MIGRATION_PHASES[cluster.phase][0 if host in cluster.brokers else 1]
    return "kraft"


def _node(
    cluster: _Cluster, host: str, node_id: int | None, problems: list[str]
) -> tuple[dict[str, Any], dict[int, str]]:
    """One host's node of the model, and the ports it opens (for the checks across the hosts of one machine)."""
    hostvars = cluster.hostvars
    address = checked_address(hostvars, host, KAFKA_ADDRESS, problems)
    overrides = _host_overrides(host, get(hostvars, host, "kafka_listener_overrides", {}), problems)
    host_listeners = (
        _host_listeners(host, cluster.listeners, overrides, address, problems) if host in cluster.brokers else []
    )
    instance = _check_instance_name(hostvars, host, problems)
    controller_port = _controller_port(cluster, host, problems)
    metrics_port = _metrics_port(hostvars, host, cluster.settings, problems)
    ports = _node_ports(cluster, host, host_listeners, controller_port, metrics_port, problems)
    _check_owned_properties(hostvars, host, problems)
    roles = [r for r, group in (("broker", cluster.brokers), ("controller", cluster.controllers)) if host in group]
    host_dirs = get(hostvars, host, "kafka_data_dirs", cluster.settings.get("data_dirs"))
    node = {
        "host": host,
        "node_id": node_id,
        "address": str(address or ""),
        "roles": roles,
        "listeners": host_listeners,
        "stage": _stage(cluster, host),
        # Several inventory hosts on one machine run one Kafka instance each (kafka@<instance>).
        "instance": instance,
        "machine": machine(hostvars, host),
        "controller_port": controller_port if host in cluster.controllers else None,
        "data_dirs": instance_dirs(host_dirs if isinstance(host_dirs, list) else [], instance),
        # The JMX exporter agent's port (None: no agent on this node).
        "metrics_port": metrics_port,
        # What the node's TLS certificate names (subjectAltName): every name and address it is reached by.
        "tls_names": list(
            dict.fromkeys(
                n for n in [host, str(address or ""), *(item["advertised_host"] for item in host_listeners)] if n
            )
        ),
    }
    return node, ports


def _nodes(cluster: _Cluster, problems: list[str]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[int, str]]]:
    """Every Kafka host's node (the controllers first, then the brokers), and the ports each opens."""
    hosts = list(dict.fromkeys([*cluster.controllers, *cluster.brokers]))
    node_ids = _node_ids(cluster.hostvars, hosts, cluster.zookeeper_mode, problems)
    nodes: dict[str, dict[str, Any]] = {}
    host_ports: dict[str, dict[int, str]] = {}
    for host in hosts:
        nodes[host], host_ports[host] = _node(cluster, host, node_ids[host], problems)
    return nodes, host_ports


def _check_across_hosts(
    cluster: _Cluster, nodes: dict[str, dict[str, Any]], host_ports: dict[str, dict[int, str]], problems: list[str]
) -> None:
    """The rules over several nodes: shared machines, the migration, advertised addresses, replication."""
    hosts = list(nodes)
    # ZooKeeper's ports count on a shared machine only while Kafka uses ZooKeeper (in KRaft the group is empty).
    zookeepers = cluster.zookeepers if (cluster.zookeeper_mode or cluster.phase) else []
    _check_machines(cluster.hostvars, hosts, nodes, host_ports, zookeepers, cluster.settings, problems)
    _check_migration_instances(hosts, nodes, cluster.phase, problems)
    _check_advertised_unique(cluster.brokers, nodes, problems)
    problems.extend(
        replication_problems(
            cluster.settings.get("default_replication_factor"),
            cluster.settings.get("min_insync_replicas"),
            len(cluster.brokers),
            rf_name="kafka_default_replication_factor",
            min_isr_name="kafka_min_insync_replicas",
        )
    )


def _endpoints(cluster: _Cluster, nodes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Where the nodes and the clients find the quorum and the brokers, and the inter-broker listener's protocol."""
    controllers, brokers, inter_broker_name = cluster.controllers, cluster.brokers, cluster.inter_broker_name
    voters = ",".join(
        f"{nodes[h]['node_id']}@{nodes[h]['address']}:{nodes[h]['controller_port']}" for h in controllers if h in nodes
    )
    bootstrap = ",".join(
        f"{item['advertised_host']}:{item['advertised_port']}"
        for h in brokers
        for item in nodes[h]["listeners"]
        if item["name"] == inter_broker_name
    )
    controller_bootstrap = ",".join(
        f"{nodes[h]['address']}:{nodes[h]['controller_port']}" for h in controllers if h in nodes
    )
    inter_broker_protocol = next(
        (str(item["protocol"]) for h in brokers for item in nodes[h]["listeners"] if item["name"] == inter_broker_name),
        "PLAINTEXT",
    )
    return {
        "inter_broker_protocol": inter_broker_protocol,
        "quorum_voters": voters,
        "controller_bootstrap": controller_bootstrap,
        "bootstrap_servers": bootstrap,
    }


def _security(
    cluster: _Cluster, tls: bool, zookeeper_connect: str, inter_broker_protocol: str, problems: list[str]
) -> dict[str, Any]:
    """The model's TLS, SASL and client settings fields, in the model's order."""
    settings, listeners, controller_listener = cluster.settings, cluster.listeners, cluster.controller_listener
    zookeeper_mode, phase = cluster.zookeeper_mode, cluster.phase
    # TLS, SASL and the client settings only in plain KRaft (_check_tls_outside_kraft reports the rest).
    kraft_tls = tls and not zookeeper_mode and not phase
    # Where the controller machine's clients of bootstrap_servers find their TLS settings (kafka_tls_ca_dir), when
    # that listener runs TLS; '' otherwise.
    ca_dir = str(settings.get("tls_ca_dir") or "").rstrip("/")
    client_tls_dir = ca_dir if inter_broker_protocol in TLS_PROTOCOLS and kraft_tls else ""
    zookeeper_tls = as_bool(settings.get("zookeeper_tls", False))
    if zookeeper_tls is None:
        problems.append(
            f"kafka_zookeeper_tls (zookeeper_tls) must be true or false, not {settings.get('zookeeper_tls')!r}."
        )
    return {
        # TLS between the Kafka nodes that talk to ZooKeeper (zookeeper_clients) and the ensemble.
        "zookeeper_tls": bool(zookeeper_connect) and bool(zookeeper_tls),
        # Who talks to ZooKeeper: the brokers, and during a migration the controllers too.
        "zookeeper_clients": (cluster.brokers + cluster.controllers)
        if phase
        else (cluster.brokers if zookeeper_mode else []),
        "inter_broker_protocol": inter_broker_protocol,
        # The settings file (Kafka client properties) the controller machine's clients of bootstrap_servers read:
        # the project CA to trust, written by tasks/tls.yml; '' when that listener is PLAINTEXT (nothing to read).
        "client_config": f"{client_tls_dir}/client.properties" if client_tls_dir else "",
        # What those clients trust (beside client_config): trust.pem, the project CA, or both CAs in the middle of a
        # CA rotation (roles/pki); '' with client_config. The lag exporter and the Spark job get a copy.
        "client_ca": f"{client_tls_dir}/trust.pem" if client_tls_dir else "",
        # The project CA's directory on the controller machine (kafka_tls_ca_dir): the CA, the client settings, and
        # which SCRAM passwords were set last (roles/kafka_topics).
        "tls_ca_dir": ca_dir,
        # Per client listener that runs TLS, by name: the settings file (beside the CA) for a client on the
        # controller machine of that listener (its CA, and on SASL_SSL the admin's login), written by tasks/tls.yml.
        # The nodes' admin tools get the same per listener, as <conf_dir>/client-<name>.properties.
        "listener_client_configs": {
            str(item.get("name")): f"{ca_dir}/client-{str(item.get('name')).lower()}.properties"
            for item in listeners
            if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS and kraft_tls
        },
        # TLS on any listener (the controller's, a client or the inter-broker one): every node has a key and a
        # certificate from the project CA (tasks/tls.yml).
        "tls": kraft_tls,
        # The listeners (by name) that run TLS, with their ssl.client.auth.
        "tls_listeners": {
            str(item.get("name")): str(
                item.get("client_auth") or ("required" if item is controller_listener else "none")
            )
            for item in [*listeners, *([controller_listener] if not zookeeper_mode else [])]
            if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS
        },
        # The listeners (by name) whose clients log in with SCRAM-SHA-512 users (kafka_users; kafka_sasl.py).
        "sasl_listeners": sorted(
            str(item.get("name"))
            for item in listeners
            if str(item.get("protocol", "PLAINTEXT")) == "SASL_SSL" and not zookeeper_mode and not phase
        ),
    }


def _controller_listener_model(cluster: _Cluster) -> dict[str, Any]:
    """The controller listener as the nodes open it ({} in ZooKeeper mode, where none does)."""
    controller_listener = cluster.controller_listener
    if cluster.zookeeper_mode:
        return {}
    return {
        "name": str(controller_listener.get("name")),
        "port": as_int(controller_listener.get("port")),
        "protocol": str(controller_listener.get("protocol", "PLAINTEXT")),
        "client_auth": str(
            controller_listener.get("client_auth")
            or ("required" if str(controller_listener.get("protocol")) == "SSL" else "none")
        ),
    }


def kafka_cluster_model(
    hostvars: Mapping[str, Any],
    controllers: Iterable[str],
    brokers: Iterable[str],
    settings: Mapping[str, Any],
    zookeepers: Iterable[str] = (),
) -> dict[str, Any]:
    """Build the cluster model from the inventory and list every problem found in it.

    settings: mode, version, listeners, controller_listener, inter_broker_listener_name,
    default_replication_factor, min_insync_replicas, data_dirs, zookeeper_client_port,
    zookeeper_chroot (the role's variables, passed in so this stays pure).
    zookeepers: the hosts of the ZooKeeper group (used in ZooKeeper mode; must be empty in KRaft mode).
    Returns {"mode": str, "nodes": {host: node}, "quorum_voters": str, "controller_bootstrap": str,
    "bootstrap_servers": str, "zookeeper_connect": str, "problems": [str]}.
    """
    controllers, brokers, zookeepers = list(controllers), list(brokers), list(zookeepers)
    problems: list[str] = []
    mode = str(settings.get("mode") or "kraft")
    zookeeper_mode = mode == "zookeeper"
    if mode not in MODES:
        problems.append(f"kafka_mode '{mode}' is not one of: {', '.join(MODES)}.")
    _check_settings(settings, problems)
    listeners, controller_listener, inter_broker_name = _check_listeners(settings, zookeeper_mode, problems)
    phase = str(settings.get("migration_phase") or "")
    tls = _check_tls_outside_kraft(listeners, controller_listener, mode, phase, problems)
    standby, controllers, zookeeper_connect = _check_groups(
        hostvars, controllers, brokers, zookeepers, settings, zookeeper_mode, phase, problems
    )
    cluster = _Cluster(
        hostvars=hostvars,
        settings=settings,
        controllers=controllers,
        brokers=brokers,
        zookeepers=zookeepers,
        listeners=listeners,
        controller_listener=controller_listener,
        inter_broker_name=inter_broker_name,
        mode=mode,
        phase=phase,
    )
    nodes, host_ports = _nodes(cluster, problems)
    _check_across_hosts(cluster, nodes, host_ports, problems)
    endpoints = _endpoints(cluster, nodes)
    security = _security(cluster, tls, zookeeper_connect, endpoints["inter_broker_protocol"], problems)
    return {
        "mode": mode,
        "migration_phase": phase,
        "standby_controllers": standby,
        **security,
        "version": str(settings.get("version") or ""),
        "nodes": nodes,
        "inter_broker_listener_name": inter_broker_name,
        "controller_listener": _controller_listener_model(cluster),
        "quorum_voters": endpoints["quorum_voters"],
        "controller_bootstrap": endpoints["controller_bootstrap"],
        "bootstrap_servers": endpoints["bootstrap_servers"],
        "zookeeper_connect": zookeeper_connect,
        "problems": problems,
    }


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_cluster_model": kafka_cluster_model,
        }
