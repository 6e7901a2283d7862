"""What the Kafka cluster model gives the hosts and the other roles: each node's server.properties, and the
firewall role's records of who must reach each Kafka port.

The model itself (roles, quorum, listeners) is kafka_cluster.py, its checks plugin_utils/kafka_listeners.py and
kafka_cluster_checks.py; these filters only read it.
Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import instance_dirs
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import to_properties
from ansible_collections.kafkalab.kafka.plugins.module_utils.share_groups import SINCE as SHARE_GROUPS_SINCE
from ansible_collections.kafkalab.kafka.plugins.module_utils.share_groups import broker_properties, release


def kafka_server_properties(model: Mapping[str, Any], host: str, settings: Mapping[str, Any]) -> dict[str, str]:
    """The role's server.properties for one host (before the user's custom properties are merged)."""
    node = model["nodes"][host]
    zookeeper_mode = model.get("mode") == "zookeeper"
    is_broker = "broker" in node["roles"]
    is_controller = "controller" in node["roles"]

    listeners: list[str] = []
    advertised: list[str] = []
    protocol_map: dict[str, str] = {}
    for item in node["listeners"]:
        listeners.append(f"{item['name']}://{item['bind_host']}:{item['port']}")
        advertised.append(f"{item['name']}://{item['advertised_host']}:{item['advertised_port']}")
        protocol_map[item["name"]] = item["protocol"]

    # What the node runs: a ZooKeeper-mode broker, the same with the ZooKeeper -> KRaft migration on, or
    # a KRaft node (a controller in migration mode is a KRaft node with the migration on).
    stage = str(node.get("stage") or ("zookeeper" if zookeeper_mode else "kraft"))
    controller_listener = settings.get("controller_listener") or {}
    ctrl_name = str(controller_listener.get("name", ""))
    props: dict[str, str]
    if is_broker and stage in ("zookeeper", "migration"):
        # No process.roles: the broker finds the cluster through ZooKeeper.
        props = {
            "broker.id": str(node["node_id"]),
            "zookeeper.connect": str(model["zookeeper_connect"]),
        }
        if stage == "migration":
            # Registers with the KRaft controllers, which take the metadata over once every broker has.
            protocol_map[ctrl_name] = str(controller_listener.get("protocol", "PLAINTEXT"))
            props.update(
                {
                    "zookeeper.metadata.migration.enable": "true",
                    "controller.quorum.voters": str(model["quorum_voters"]),
                    "controller.listener.names": ctrl_name,
                    # The migration needs the brokers' protocol pinned to the release line (3.9).
                    "inter.broker.protocol.version": ".".join(str(model.get("version", "")).split(".")[:2]),
                }
            )
    else:
        if is_controller:
            bind = controller_listener.get("bind_host") or ""
            port = node.get("controller_port") or controller_listener["port"]
            listeners.append(f"{ctrl_name}://{bind}:{port}")
        # Every node must know the controller listener's protocol, brokers included, to reach the quorum.
        protocol_map[ctrl_name] = str(controller_listener.get("protocol", "PLAINTEXT"))
        props = {
            "process.roles": ",".join(node["roles"]),
            "node.id": str(node["node_id"]),
            "controller.listener.names": ctrl_name,
        }
        if str(settings.get("quorum") or "static") == "dynamic" and stage == "kraft":
            # KIP-853: the voters are in the metadata log (formatted with --initial-controllers, changed by
            # add-controller / remove-controller); every node only needs somewhere to start looking.
            props["controller.quorum.bootstrap.servers"] = str(model["controller_bootstrap"])
            if is_controller:
                # What add-controller registers as the voter's endpoint (the listener itself binds to all).
                advertised.append(
                    f"{ctrl_name}://{node['address']}:{node.get('controller_port') or controller_listener['port']}"
                )
        else:
            props["controller.quorum.voters"] = str(model["quorum_voters"])
        if stage == "migration":
            # Copies ZooKeeper's metadata, then writes every change to both until finalized; it reaches the
            # ZooKeeper-mode brokers on their inter-broker listener.
            inter_broker = str(model.get("inter_broker_listener_name") or settings["inter_broker_listener_name"])
            protocol_map[inter_broker] = str(model.get("inter_broker_protocol") or "PLAINTEXT")
            props.update(
                {
                    "zookeeper.metadata.migration.enable": "true",
                    "zookeeper.connect": str(model["zookeeper_connect"]),
                    "inter.broker.listener.name": inter_broker,
                }
            )
    props.update(
        {
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in sorted(protocol_map.items())),
            # An instance's own dirs under the configured ones (kafka_instance: several on one machine).
            "log.dirs": ",".join(instance_dirs(settings["data_dirs"], str(node.get("instance") or ""))),
        }
    )
    rf = str(settings["default_replication_factor"])
    min_isr = str(settings["min_insync_replicas"])
    if is_broker or (is_controller and stage != "zookeeper"):
        # The topic defaults and the election rule, on KRaft controllers too: the active controller applies
        # num.partitions and default.replication.factor to CreateTopics requests that leave them out, decides
        # unclean elections, and (eligible leader replicas, on by default since 4.1) seeds the cluster-level
        # min.insync.replicas from its own static value, which then overrides every broker's: a dedicated
        # controller without it gave the cluster a min.insync.replicas of 1.
        props.update(
            {
                "num.partitions": str(settings.get("num_partitions", 3)),
                "default.replication.factor": rf,
                "min.insync.replicas": min_isr,
                "unclean.leader.election.enable": "false",
            }
        )
    if advertised and (is_broker or "controller.quorum.bootstrap.servers" in props):
        props["advertised.listeners"] = ",".join(advertised)
    if is_broker:
        props.update(
            {
                "inter.broker.listener.name": str(settings["inter_broker_listener_name"]),
                "offsets.topic.replication.factor": rf,
                "transaction.state.log.replication.factor": rf,
                "transaction.state.log.min.isr": min_isr,
                "auto.create.topics.enable": "false",
            }
        )
        if release(settings.get("version")) >= SHARE_GROUPS_SINCE:
            # The share coordinator's state topic, sized as the other internal topics (only where that differs
            # from Kafka's 3 and 2: a cluster at the defaults keeps its file as it was).
            props.update(
                {
                    key: value
                    for key, value, default in (
                        ("share.coordinator.state.topic.replication.factor", rf, "3"),
                        ("share.coordinator.state.topic.min.isr", min_isr, "2"),
                    )
                    if value != default
                }
            )
        props.update(broker_properties(settings))
    return props


def kafka_firewall_services(model: Mapping[str, Any], client_hosts: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Who must reach each Kafka port (the firewall role's `firewall_services` records), from the model.

    Every broker listener is open to its client networks (the listener's client_networks, else the
    `clients` class); the inter-broker listener also to the other brokers and to the in-cluster clients
    (client_hosts: the Spark job's hosts). The KRaft controller listener is open to every Kafka node and
    nothing else.
    """
    nodes = model.get("nodes", {})
    brokers = [h for h, n in nodes.items() if "broker" in n.get("roles", [])]
    controllers = [h for h, n in nodes.items() if "controller" in n.get("roles", [])]
    inter_broker = model.get("inter_broker_listener_name")
    services = []
    for host in brokers:
        for item in nodes[host].get("listeners", []):
            networks = item.get("client_networks")
            services.append(
                {
                    "name": f"kafka {item['name']}",
                    "hosts": [host],
                    "port": item["port"],
                    # During a ZooKeeper -> KRaft migration the controllers reach the ZooKeeper-mode brokers here.
                    "from_hosts": (
                        [*brokers, *(controllers if model.get("migration_phase") else []), *client_hosts]
                        if item["name"] == inter_broker
                        else []
                    ),
                    "from_networks": list(networks) if networks is not None else ["clients"],
                }
            )
    if model.get("mode") != "zookeeper" and controllers:
        # One record per port: instances on one machine each have their own (kafka_controller_port).
        default_port = model.get("controller_listener", {}).get("port")
        by_port: dict[Any, list[str]] = {}
        for host in controllers:
            by_port.setdefault(nodes[host].get("controller_port") or default_port, []).append(host)
        for port, hosts in by_port.items():
            services.append(
                {
                    "name": "kafka controller quorum",
                    "hosts": hosts,
                    "port": port,
                    "from_hosts": list(dict.fromkeys([*controllers, *brokers])),
                    "from_networks": [],
                }
            )
    return services


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_server_properties": kafka_server_properties,
            "kafka_firewall_services": kafka_firewall_services,
            "to_properties": to_properties,
        }
