"""Bad inventories, each refused by the controller preflight with the exact message it must produce.

Each case changes one thing in a good three-node cluster and runs the function the preflight runs for it
(the Kafka cluster model, the ZooKeeper ensemble, the Spark cluster, the firewall plan, the declared
topics, the variables against the roles' argument specs). No container, no host: these are the checks
that stop a run before any host changes. tests/unit/test_preflight_playbook.py proves the preflight
playbook runs them, whatever the tags, in check mode too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.vars.hostvars import HostVars as HostVarsOfAnsible
from ansible.vars.manager import VariableManager
from ansible_collections.kafkalab.kafka.plugins.filter.firewall_plan import firewall_plan
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_sasl import kafka_sasl_settings
from ansible_collections.kafkalab.kafka.plugins.filter.preflight import inventory_variable_problems
from ansible_collections.kafkalab.kafka.plugins.filter.prometheus_model import prometheus_model
from ansible_collections.kafkalab.kafka.plugins.filter.spark_consumer_sizing import spark_consumer_sizing
from ansible_collections.kafkalab.kafka.plugins.filter.spark_model import spark_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.zookeeper_ensemble import zookeeper_ensemble_model
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_topics_plan import check as topics_check
from ansible_collections.kafkalab.kafka.plugins.plugin_utils.variables import (
    spread_problems,
    type_problems,
    unknown_problems,
)

ROOT = Path(__file__).resolve().parents[2]
SPECS = {
    p.parent.parent.name: yaml.safe_load(p.read_text()) for p in sorted(ROOT.glob("roles/*/meta/argument_specs.yml"))
}
NAMES = ["kafka1", "kafka2", "kafka3"]
HostVars = dict[str, dict[str, Any]]


def hosts() -> HostVars:
    """A good three-node cluster: addresses and node ids."""
    return {h: {"ansible_host": f"192.0.2.{11 + i}", "kafka_node_id": i + 1} for i, h in enumerate(NAMES)}


KAFKA = {
    "mode": "kraft",
    "version": "4.3.1",
    "heap_size": "1g",
    "data_dirs": ["/var/lib/kafka/data"],
    "listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "PLAINTEXT"}],
    "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "PLAINTEXT"},
    "inter_broker_listener_name": "INTERNAL",
    "default_replication_factor": 3,
    "min_insync_replicas": 2,
    "num_partitions": 3,
    "zookeeper_client_port": 2181,
    "zookeeper_chroot": "",
    "archive_source": "url",
    "archive_sha512": "",
    "archive_local_path": "",
    "cluster_id": "",
}
ZK = {"group": "zookeeper", "client_port": 2181, "peer_port": 2888, "election_port": 3888}


def kafka(
    hv: HostVars | None = None,
    s: dict[str, Any] | None = None,
    controllers: list[str] = NAMES,
    brokers: list[str] = NAMES,
    zookeepers: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The Kafka cluster model's problems (KRaft unless the settings say otherwise)."""
    hv = hv or hosts()
    return kafka_cluster_model(hv, controllers, brokers, {**KAFKA, **(s or {})}, zookeepers)["problems"]


def zk_mode(
    hv: HostVars | None = None,
    s: dict[str, Any] | None = None,
    brokers: list[str] = NAMES,
    zookeepers: list[str] = NAMES,
) -> list[str]:
    """The Kafka cluster model's problems in ZooKeeper mode (Kafka 3.9.2)."""
    hv = hv or hosts()
    return kafka_cluster_model(
        hv, [], brokers, {**KAFKA, "mode": "zookeeper", "version": "3.9.2", **(s or {})}, zookeepers
    )["problems"]


def ensemble(hv: HostVars | None = None, s: dict[str, Any] | None = None, servers: list[str] = NAMES) -> list[str]:
    """The ZooKeeper ensemble model's problems."""
    hv = hv or {h: {"ansible_host": f"192.0.2.{11 + i}", "zookeeper_myid": i + 1} for i, h in enumerate(NAMES)}
    return zookeeper_ensemble_model(hv, servers, {**ZK, **(s or {})})["problems"]


def spark(
    masters: list[str],
    workers: list[str],
    shared_path: str = "/srv/spark-shared",
    resources: dict[str, dict[str, Any]] | None = None,
    authenticate: dict[str, bool] | None = None,
) -> list[str]:
    """The Spark cluster model's problems (resources: spark_worker_cores and spark_worker_memory per worker;
    authenticate: spark_authenticate per host)."""
    hv = {"spark1": {"ansible_host": "192.0.2.21"}, "spark2": {"ansible_host": "192.0.2.22"}}
    settings = {
        "master_port": 7077,
        "shared_path": shared_path,
        "worker_resources": resources or {},
        "authenticate": authenticate or {},
    }
    return spark_cluster_model(hv, masters, workers, settings)["problems"]


def sizing(cores: int, memory_mb: int, partitions: int = 6, mode: str = "realtime") -> list[str]:
    """The consumer job's sizing problems on two workers of that size."""
    workers = {h: {"cores": cores, "memory_mb": memory_mb} for h in ("spark1", "spark2")}
    settings = {"input_partitions": partitions, "realtime": True, "realtime_mode": mode}
    return spark_consumer_sizing(workers, settings)["problems"]


FW = {
    "firewall_enabled": True,
    "firewall_admin_networks": ["192.0.2.1/32"],
    "firewall_client_networks": [],
    "firewall_monitoring_networks": [],
    "firewall_ssh_port": 22,
    "firewall_extra_rules": [],
}


def firewall(changes: dict[str, Any], host_changes: HostVars | None = None) -> list[str]:
    """The firewall plan's problems (the role defaults changed, hosts changed); no name resolves."""
    hv = hosts()
    for h, c in (host_changes or {}).items():
        hv[h].update(c)
    return firewall_plan(hv, NAMES, [], {**FW, **changes}, resolve=lambda n: None)["problems"]


def topics(declared: list[dict[str, Any]], brokers: int = 3, known_configs: set[str] | None = None) -> list[str]:
    """The declared topics' problems (config names against known_configs, the release's list, when given)."""
    return topics_check(declared, brokers, known_configs)


SASL_USERS = [
    {"name": "admin", "password": "Adm1n-pass-word"},
    {"name": "broker", "password": "Br0ker-pass-word"},
    {"name": "app", "password": "App-pass-word-1"},
    {"name": "retired", "state": "absent"},
]


def quotas(declared: Any) -> list[str]:
    """The problems of kafka_quotas on the good cluster with a SASL_SSL listener, users admin, broker, app (and
    retired, declared absent)."""
    listeners = [{"name": "INTERNAL", "port": 9092, "protocol": "SASL_SSL"}]
    model = kafka_cluster_model(hosts(), NAMES, NAMES, {**KAFKA, "listeners": listeners, "tls_ca_dir": "/inv/.pki"})
    assert model["problems"] == []
    return kafka_sasl_settings(model, SASL_USERS, "admin", "broker", False, [], declared)["problems"]


def variables(
    host_changes: HostVars, groups: dict[str, list[str]] | None = None, controller: dict[str, Any] | None = None
) -> list[str]:
    """The variables checked against the roles' argument specs: types, unknown names, cluster-wide spread."""
    hv = hosts()
    for h, c in host_changes.items():
        hv[h].update(c)
    groups = groups or {"kafka": NAMES}
    hv["localhost"] = dict(controller or {})
    return (
        type_problems(hv, NAMES, SPECS)
        + unknown_problems(hv, NAMES, SPECS)
        + spread_problems(hv, groups, controller or {})
    )


PROMETHEUS = {
    **yaml.safe_load((ROOT / "roles" / "prometheus" / "defaults" / "main.yml").read_text()),
    "group": "monitoring",
    "port": 9090,
    "lag_exporter_port": 9308,
    "node_exporter_enabled": True,
    "node_exporter_port": 9100,
}


def monitoring(
    hv: HostVars | None = None,
    s: dict[str, Any] | None = None,
    servers: list[str] | tuple[str, ...] = ("mon1",),
    kafka_settings: dict[str, Any] | None = None,
    spark: dict[str, Any] | None = None,
) -> list[str]:
    """The Kafka model's and the monitoring model's problems, on the good cluster with metrics on (plus a monitoring
    host mon1)."""
    hv = hv or hosts()
    hv.setdefault("mon1", {"ansible_host": "192.0.2.30"})
    model = kafka_cluster_model(
        hv, NAMES, NAMES, {**KAFKA, "metrics_enabled": True, "metrics_port": 7071, **(kafka_settings or {})}
    )
    groups = {"kafka": NAMES, "monitoring": list(servers)}
    zookeeper: dict[str, Any] = {"servers": {}, "ports": {}}
    if spark:
        hv.setdefault("spark1", {"ansible_host": "192.0.2.21"})
    problems = prometheus_model(hv, groups, model, zookeeper, {**PROMETHEUS, **(s or {})}, spark)["problems"]
    return model["problems"] + problems


# The consumer job's archive on a one-host Spark cluster, its metrics on metrics_port.
def spark_job(metrics_port: int) -> dict[str, Any]:
    return {
        "cluster": {
            "master": "spark1",
            "addresses": {"spark1": "192.0.2.21"},
            "workers": {"spark1": {"cores": 2, "memory_mb": 2048}},
            "webui_ports": {"master": 8080, "worker": 8081},
        },
        "job": {
            "host": "spark1",
            "address": "192.0.2.21",
            "apps": [
                {"name": "consumer", "ui_port": 4040, "metrics_port": metrics_port,
                 "metrics_port_variable": "spark_consumer_metrics_port"},
            ],
        },
    }  # fmt: skip


def with_host(name: str, **changes: Any) -> HostVars:
    """The good inventory with one host's variables changed."""
    hv = hosts()
    hv[name].update(changes)
    return hv


CASES = [
    # --- kafka cluster shape
    pytest.param(
        lambda: kafka(controllers=[]),
        [
            "the KRaft controller group is empty: put 1, 3 or 5 hosts in group kafka_controller (kafka_controller_group).",
        ],
        id="empty-controller-group",
    ),
    pytest.param(
        lambda: kafka(controllers=NAMES[:2]),
        [
            "the KRaft controller quorum has 2 hosts (kafka1, kafka2): it must be odd (1, 3 or 5) so a majority survives a failure. An even count is allowed only while the quorum changes: run playbooks/add_controller.yml or remove_controller.yml for the host you add or remove.",
        ],
        id="even-controller-quorum",
    ),
    pytest.param(
        lambda: kafka(brokers=[]),
        [
            "the broker group is empty: put at least one host in group kafka_broker (kafka_broker_group).",
        ],
        id="empty-broker-group",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_node_id=None)),
        [
            "kafka2: kafka_node_id is not set. Give every Kafka host a unique kafka_node_id (0 or more) in the inventory.",
        ],
        id="node-id-missing",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_node_id=-1)),
        [
            "kafka2: kafka_node_id '-1' is not an integer, 0 or more (KRaft node ids). Fix kafka_node_id of kafka2.",
        ],
        id="node-id-negative",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_node_id="two")),
        [
            "kafka2: kafka_node_id 'two' is not an integer, 0 or more (KRaft node ids). Fix kafka_node_id of kafka2.",
        ],
        id="node-id-not-a-number",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka3", kafka_node_id=1)),
        [
            "kafka3: kafka_node_id 1 is already used by kafka1. Each host needs its own; change kafka_node_id of kafka3 or kafka1.",
        ],
        id="node-id-duplicate",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_host_custom_properties={"node.id": 1})),
        [
            "kafka2: kafka_host_custom_properties sets node.id, which the role derives from kafka_node_id. Remove node.id from kafka_host_custom_properties and set kafka_node_id instead.",
        ],
        id="node-id-in-custom-properties",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka1", kafka_custom_properties={"log.dirs": "/x"})),
        [
            "kafka1: kafka_custom_properties sets log.dirs, which the role derives from kafka_data_dirs. Remove log.dirs from kafka_custom_properties and set kafka_data_dirs instead.",
        ],
        id="log-dirs-in-custom-properties",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka1", kafka_custom_properties="a=b")),
        [
            "kafka1: kafka_custom_properties must be a mapping of server properties, not 'a=b'.",
        ],
        id="custom-properties-not-a-mapping",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", ansible_host=None)),
        [
            "kafka2: no address: set kafka_advertised_host or ansible_host for this host in the inventory, or name the host by its fully qualified DNS name.",
        ],
        id="host-without-address",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka1", kafka_advertised_host="bad_name!"), brokers=NAMES[1:]),
        [
            "kafka1: address 'bad_name!' (from kafka_advertised_host or ansible_host) is not a valid host name or IP. Fix it in the inventory.",
            "kafka_default_replication_factor 3 is larger than the number of brokers (2): lower it to at most 2 or add brokers.",
        ],
        id="controller-address-invalid",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka3", kafka_advertised_host="-bad-")),
        [
            "kafka3: address '-bad-' (from kafka_advertised_host or ansible_host) is not a valid host name or IP. Fix it in the inventory.",
        ],
        id="broker-address-invalid",
    ),
    # --- listeners
    pytest.param(
        lambda: kafka(s={"listeners": "INTERNAL://:9092"}),
        [
            "kafka_listeners must be a list of listeners (each with name, port, protocol), not 'INTERNAL://:9092': e.g. [{name: INTERNAL, port: 9092, protocol: PLAINTEXT}].",
            "kafka_inter_broker_listener_name 'INTERNAL' is not defined in kafka_listeners (defined: ).",
        ],
        id="listeners-a-string",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": ["INTERNAL"]}),
        [
            "kafka_listeners[0] is 'INTERNAL', not a listener (a mapping with name, port, protocol).",
            "kafka_inter_broker_listener_name 'INTERNAL' is not defined in kafka_listeners (defined: ).",
        ],
        id="listener-item-a-string",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "internal", "port": 9092}], "inter_broker_listener_name": "internal"}),
        [
            "listener name 'internal' must be upper case letters, digits and _ (kafka_listeners / kafka_controller_listener).",
        ],
        id="listener-name-lowercase",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 99999}]}),
        [
            "listener INTERNAL: port '99999' is not a TCP port number.",
        ],
        id="listener-port-bad",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "TLS"}]}),
        [
            "listener INTERNAL: protocol 'TLS' is not one of ['PLAINTEXT', 'SASL_PLAINTEXT', 'SASL_SSL', 'SSL'].",
        ],
        id="listener-protocol-unknown",
    ),
    pytest.param(
        lambda: kafka(
            s={"listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "PLAINTEXT", "client_auth": "required"}]}
        ),
        [
            "listener INTERNAL: client_auth 'required' needs protocol SSL and one of required, requested, none (ssl.client.auth; default: required on the controller listener, mutual TLS; none on the others).",
        ],
        id="client-auth-on-plaintext-client-listener",
    ),
    pytest.param(
        lambda: kafka(s={"controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SASL_SSL"}}),
        [
            "kafka_controller_listener: protocol SASL_SSL is not supported: controllers and brokers authenticate each other on the controller listener by their certificates (mutual TLS). Use SSL.",
        ],
        id="controller-listener-sasl",
    ),
    pytest.param(
        lambda: kafka(
            s={
                "controller_listener": {
                    "name": "CONTROLLER",
                    "port": 9093,
                    "protocol": "PLAINTEXT",
                    "client_auth": "required",
                }
            }
        ),
        [
            "listener CONTROLLER: client_auth 'required' needs protocol SSL and one of required, requested, none (ssl.client.auth; default: required on the controller listener, mutual TLS; none on the others).",
        ],
        id="controller-listener-client-auth-without-tls",
    ),
    pytest.param(
        lambda: kafka(
            s={"controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL", "client_auth": "yes"}}
        ),
        [
            "listener CONTROLLER: client_auth 'yes' needs protocol SSL and one of required, requested, none (ssl.client.auth; default: required on the controller listener, mutual TLS; none on the others).",
        ],
        id="controller-listener-client-auth-unknown",
    ),
    pytest.param(
        lambda: kafka(
            s={"controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL", "external": True}}
        ),
        [
            "listener CONTROLLER: unknown key(s) external (known: bind_host, client_auth, name, port, protocol).",
        ],
        id="controller-listener-unknown-key",
    ),
    pytest.param(
        lambda: zk_mode(s={"controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL"}}),
        [
            "listener(s) CONTROLLER (kafka_listeners / kafka_controller_listener) run TLS (SSL or SASL_SSL), but the cluster runs on ZooKeeper or migrates off it (kafka_mode zookeeper, kafka_migration_phase ''): TLS is supported in KRaft mode only for now. Keep PLAINTEXT (kafka_listeners, kafka_controller_listener) until the migration is finalized, then set SSL.",
        ],
        id="controller-listener-tls-in-zookeeper-mode",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9092, "adress": "x"}]}),
        [
            "listener INTERNAL: unknown key(s) adress (known: advertised_host, advertised_port, bind_host, client_auth, client_networks, external, name, port, protocol).",
        ],
        id="listener-unknown-key",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9092}, {"name": "INTERNAL", "port": 9094}]}),
        [
            "kafka_listeners defines INTERNAL more than once: listener names must be unique.",
        ],
        id="listener-duplicate-name",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9093}]}),
        [
            "kafka1: listeners INTERNAL and CONTROLLER both use port 9093. Give each listener its own port (kafka_listeners / kafka_listener_overrides).",
            "kafka2: listeners INTERNAL and CONTROLLER both use port 9093. Give each listener its own port (kafka_listeners / kafka_listener_overrides).",
            "kafka3: listeners INTERNAL and CONTROLLER both use port 9093. Give each listener its own port (kafka_listeners / kafka_listener_overrides).",
        ],
        id="listener-port-clash-with-controller",
    ),
    pytest.param(
        lambda: kafka(s={"inter_broker_listener_name": "REPLICATION"}),
        [
            "kafka_inter_broker_listener_name 'REPLICATION' is not defined in kafka_listeners (defined: INTERNAL).",
        ],
        id="inter-broker-listener-undefined",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9092, "external": True}]}),
        [
            "kafka_inter_broker_listener_name 'INTERNAL' names an external listener: brokers would replicate through NAT addresses meant for outside clients. Replicate over an internal listener.",
            "kafka1: listener INTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.INTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka1.",
            "kafka2: listener INTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.INTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka2.",
            "kafka3: listener INTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.INTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka3.",
        ],
        id="inter-broker-listener-external",
    ),
    pytest.param(
        lambda: kafka(s={"controller_listener": {"name": "INTERNAL", "port": 9093}}),
        [
            "kafka_controller_listener.name 'INTERNAL' is also in kafka_listeners: the controller listener must be its own listener, never advertised to clients.",
        ],
        id="controller-listener-in-listeners",
    ),
    pytest.param(
        lambda: kafka(s={"controller_listener": "CONTROLLER:9093"}),
        [
            "kafka_controller_listener must be a mapping (name, port, protocol), not 'CONTROLLER:9093': e.g. {name: CONTROLLER, port: 9093, protocol: PLAINTEXT}.",
        ],
        id="controller-listener-a-string",
    ),
    pytest.param(
        lambda: kafka(s={"listeners": [{"name": "INTERNAL", "port": 9092, "client_networks": "10.0.0.0/8"}]}),
        [
            "listener INTERNAL: client_networks must be a list of networks (CIDR), e.g. [192.0.2.0/24].",
        ],
        id="listener-client-networks-not-a-list",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_listener_overrides="EXTERNAL")),
        [
            "kafka2: kafka_listener_overrides must be a mapping of listener name to settings, not 'EXTERNAL': e.g. {EXTERNAL: {advertised_host: kafka1.example.com}}. Fix it in host_vars/kafka2.",
        ],
        id="override-a-string",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_listener_overrides={"INTERNAL": "kafka2.example.com"})),
        [
            "kafka2: kafka_listener_overrides.INTERNAL must be a mapping (advertised_host, advertised_port, bind_host, port), not 'kafka2.example.com'.",
        ],
        id="override-item-a-string",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_listener_overrides={"EXTRENAL": {"advertised_host": "x.example.com"}})),
        [
            "kafka2: kafka_listener_overrides names listener 'EXTRENAL' (it would be advertised in advertised.listeners), which kafka_listeners does not define (defined: INTERNAL). Fix the name or add the listener to kafka_listeners.",
        ],
        id="override-unknown-listener",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_listener_overrides={"INTERNAL": {"host": "x"}})),
        [
            "kafka2: kafka_listener_overrides.INTERNAL has unknown key(s) host (known: advertised_host, advertised_port, bind_host, port).",
        ],
        id="override-unknown-key",
    ),
    pytest.param(
        lambda: kafka(
            s={"listeners": [{"name": "INTERNAL", "port": 9092}, {"name": "EXTERNAL", "port": 9094, "external": True}]}
        ),
        [
            "kafka1: listener EXTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.EXTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka1.",
            "kafka2: listener EXTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.EXTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka2.",
            "kafka3: listener EXTERNAL is external (advertised to clients outside the cluster network), so this host needs kafka_listener_overrides.EXTERNAL.advertised_host (and advertised_port if the NAT or load balancer maps the port): the address outside clients reach it by. Set it in host_vars/kafka3.",
        ],
        id="external-listener-without-advertised-host",
    ),
    pytest.param(
        lambda: kafka(with_host("kafka2", kafka_advertised_host="192.0.2.11")),
        [
            "kafka2: listener INTERNAL advertises 192.0.2.11:9092, which kafka1 INTERNAL advertises too: clients would reach one broker for two. Give each its own advertised_port (kafka_listener_overrides.INTERNAL.advertised_port).",
        ],
        id="advertised-address-shared",
    ),
    # --- replication and settings
    pytest.param(
        lambda: kafka(s={"default_replication_factor": 4}),
        [
            "kafka_default_replication_factor 4 is larger than the number of brokers (3): lower it to at most 3 or add brokers.",
        ],
        id="rf-above-brokers",
    ),
    pytest.param(
        lambda: kafka(s={"default_replication_factor": 0}),
        [
            "kafka_default_replication_factor '0' must be a positive integer.",
        ],
        id="rf-zero",
    ),
    pytest.param(
        lambda: kafka(s={"min_insync_replicas": 4}),
        [
            "kafka_min_insync_replicas 4 is larger than kafka_default_replication_factor 3: producers with acks=all could never write. Lower it.",
        ],
        id="min-isr-above-rf",
    ),
    pytest.param(
        lambda: kafka(s={"num_partitions": 0}),
        [
            "kafka_num_partitions '0' must be a positive integer (num.partitions).",
        ],
        id="num-partitions-zero",
    ),
    pytest.param(
        lambda: kafka(s={"data_dirs": "/var/lib/kafka/data"}),
        [
            "kafka_data_dirs '/var/lib/kafka/data' must be a non-empty list of absolute paths, e.g. [/var/lib/kafka/data].",
        ],
        id="data-dirs-a-string",
    ),
    pytest.param(
        lambda: kafka(s={"data_dirs": []}),
        [
            "kafka_data_dirs [] must be a non-empty list of absolute paths, e.g. [/var/lib/kafka/data].",
        ],
        id="data-dirs-empty",
    ),
    pytest.param(
        lambda: kafka(s={"data_dirs": ["data/kafka"]}),
        [
            "kafka_data_dirs has 'data/kafka', which is not an absolute path: Kafka would resolve it against its working directory. Write it from / (e.g. /var/lib/kafka/data).",
        ],
        id="data-dir-relative",
    ),
    pytest.param(
        lambda: kafka(s={"heap_size": "2 GB"}),
        [
            "kafka_heap_size '2 GB' is not a JVM size such as 1g or 512m. Fix kafka_heap_size.",
        ],
        id="heap-size-malformed",
    ),
    pytest.param(
        lambda: kafka(s={"share_groups": {"delivery_count_limit": 11, "record_lock_duration_ms": "30s"}}),
        [
            "kafka_share_group_record_lock_duration_ms '30s' must be an integer from 1000 to 3600000 (group.share.record.lock.duration.ms; Kafka's default is 30000). Fix kafka_share_group_record_lock_duration_ms.",
            "kafka_share_group_delivery_count_limit '11' must be an integer from 2 to 10 (group.share.delivery.count.limit; Kafka's default is 5). Fix kafka_share_group_delivery_count_limit.",
        ],
        id="share-group-sizes-out-of-range",
    ),
    pytest.param(
        lambda: kafka(s={"version": "4.1.1", "share_groups": {"max_size": 50, "enabled": "sometimes"}}),
        [
            "kafka_share_groups_enabled must be true or false, not 'sometimes'.",
            "kafka_share_group_max_size set, but kafka_version 4.1.1 has no generally available share groups (Kafka 4.2 and later). Remove them, or set kafka_version to 4.2 or later.",
        ],
        id="share-group-sizes-before-4.2",
    ),
    pytest.param(
        lambda: kafka(s={"version": "4.3"}),
        [
            "kafka_version '4.3' is not a release number x.y.z (e.g. 4.3.1). Fix kafka_version.",
        ],
        id="version-malformed",
    ),
    pytest.param(
        lambda: kafka(s={"archive_sha512": "abc123"}),
        [
            "kafka_archive_sha512 'abc123...' is not a sha512 (128 hex digits). Copy it from the release's .sha512 file, or leave it empty with kafka_archive_source: url to use the published one.",
        ],
        id="sha512-malformed",
    ),
    pytest.param(
        lambda: kafka(s={"archive_source": "local", "archive_local_path": "/tmp/k.tgz"}),
        [
            "kafka_archive_source is local but kafka_archive_sha512 is empty: a local archive is verified against the sha512 you pin. Set kafka_archive_sha512 (128 hex digits).",
        ],
        id="local-archive-without-sha512",
    ),
    pytest.param(
        lambda: kafka(s={"archive_source": "local", "archive_sha512": "a" * 128}),
        [
            "kafka_archive_source is local but kafka_archive_local_path is empty. Set it to the archive's path on the controller.",
        ],
        id="local-archive-without-path",
    ),
    pytest.param(
        lambda: kafka(s={"cluster_id": "not-an-id"}),
        [
            "kafka_cluster_id 'not-an-id' is not a cluster id (22 base64url characters, as kafka-storage random-uuid prints). Fix it, or leave it empty to have one generated.",
        ],
        id="cluster-id-malformed",
    ),
    # --- zookeeper mode
    pytest.param(
        lambda: zk_mode(s={"version": "4.3.1"}),
        [
            "kafka_mode is zookeeper but kafka_version is 4.3.1: Kafka 4 removed ZooKeeper mode (it runs KRaft only). Pin kafka_version: 3.9.2 (the newest 3.9.x) for ZooKeeper mode, or set kafka_mode: kraft.",
        ],
        id="zookeeper-mode-with-kafka-4",
    ),
    # --- ZooKeeper -> KRaft migration (playbooks/migrate_to_kraft.yml builds the model with a phase)
    pytest.param(
        lambda: kafka_cluster_model(
            hosts(), NAMES, NAMES, {**KAFKA, "version": "3.9.2", "migration_phase": "controllers"}, NAMES
        )["problems"],
        [
            f"{h}: is in both kafka_controller and kafka_broker, but Kafka 3.9 migrates to dedicated KRaft controllers "
            "only (not combined broker+controller nodes). Give the controllers their own hosts."
            for h in NAMES
        ],
        id="migration-to-combined-nodes",
    ),
    pytest.param(
        lambda: kafka_cluster_model(
            {
                **hosts(),
                **{f"c{i}": {"ansible_host": f"192.0.2.{20 + i}", "kafka_node_id": 3000 + i} for i in (1, 2, 3)},
            },
            ["c1", "c2", "c3"],
            NAMES,
            {**KAFKA, "version": "4.3.1", "migration_phase": "controllers", "zookeeper_election_port": 9093},
            ["c1", "c2", "c3"],
        )["problems"],
        [
            "the ZooKeeper -> KRaft migration runs on Kafka 3.9 but kafka_version is 4.3.1. Keep kafka_version: 3.9.2 for "
            "the migration, and upgrade with playbooks/upgrade.yml once it is finalized.",
        ]
        + [
            f"c{i}: runs a ZooKeeper server on election port 9093 (zookeeper_election_port), which listener CONTROLLER "
            "also uses. Give one of them another port."
            for i in (1, 2, 3)
        ],
        id="migration-on-kafka-4-with-controllers-on-zookeeper-ports",
    ),
    pytest.param(
        lambda: zk_mode(zookeepers=[]),
        [
            "kafka_mode is zookeeper but the ZooKeeper group is empty or missing: put 1, 3 or 5 hosts in group zookeeper (kafka_zookeeper_group).",
        ],
        id="zookeeper-mode-without-ensemble",
    ),
    pytest.param(
        lambda: zk_mode(s={"cluster_id": "MkU3OEVBNTcwNTJENDM2Qk"}),
        [
            "kafka_cluster_id is set but kafka_mode is zookeeper: ZooKeeper assigns the cluster id in that mode. Leave kafka_cluster_id empty.",
        ],
        id="zookeeper-mode-with-cluster-id",
    ),
    pytest.param(
        lambda: zk_mode(s={"zookeeper_client_port": 9092}),
        [
            "kafka1: runs a ZooKeeper server on client port 9092 (kafka_zookeeper_client_port / zookeeper_client_port), which listener INTERNAL also uses. Give one of them another port.",
            "kafka2: runs a ZooKeeper server on client port 9092 (kafka_zookeeper_client_port / zookeeper_client_port), which listener INTERNAL also uses. Give one of them another port.",
            "kafka3: runs a ZooKeeper server on client port 9092 (kafka_zookeeper_client_port / zookeeper_client_port), which listener INTERNAL also uses. Give one of them another port.",
        ],
        id="zookeeper-client-port-clashes-with-listener",
    ),
    pytest.param(
        lambda: zk_mode(s={"zookeeper_chroot": "kafka/"}),
        [
            "kafka_zookeeper_chroot 'kafka/' is not a ZooKeeper path: it must start with /, not end with /, and use only letters, digits, _ . - between slashes (e.g. /kafka), or be empty.",
        ],
        id="zookeeper-chroot-malformed",
    ),
    pytest.param(
        lambda: zk_mode(with_host("kafka1", kafka_node_id=1001)),
        [
            "kafka1: kafka_node_id '1001' is not an integer, 0..1000 (ZooKeeper mode refuses ids above reserved.broker.max.id). Fix kafka_node_id of kafka1 (it becomes broker.id).",
        ],
        id="broker-id-above-reserved",
    ),
    pytest.param(
        lambda: kafka(zookeepers=NAMES),
        [
            "the ZooKeeper group has hosts (kafka1, kafka2, kafka3) but kafka_mode is kraft, so no broker would use them. Set kafka_mode: zookeeper (with kafka_version 3.9.x), or empty group zookeeper (kafka_zookeeper_group). To move a ZooKeeper-mode cluster to KRaft, run playbooks/migrate_to_kraft.yml (or rollback_to_zookeeper.yml); empty the group once the migration is finalized.",
        ],
        id="ensemble-hosts-in-kraft-mode",
    ),
    pytest.param(
        lambda: ensemble(servers=NAMES[:2]),
        [
            "the ZooKeeper ensemble has 2 servers (kafka1, kafka2): it must be odd (1, 3 or 5) so a majority survives a failure. Add or remove one host in group zookeeper.",
        ],
        id="ensemble-even",
    ),
    pytest.param(
        lambda: ensemble(
            {
                "kafka1": {"ansible_host": "192.0.2.11"},
                "kafka2": {"ansible_host": "192.0.2.12", "zookeeper_myid": 2},
                "kafka3": {"ansible_host": "192.0.2.13", "zookeeper_myid": 3},
            }
        ),
        [
            "kafka1: zookeeper_myid is not set. Give every host in group zookeeper a unique zookeeper_myid (1..255) in the inventory.",
        ],
        id="myid-missing",
    ),
    pytest.param(
        lambda: ensemble(
            {
                "kafka1": {"ansible_host": "192.0.2.11", "zookeeper_myid": 256},
                "kafka2": {"ansible_host": "192.0.2.12", "zookeeper_myid": 2},
                "kafka3": {"ansible_host": "192.0.2.13", "zookeeper_myid": 3},
            }
        ),
        [
            "kafka1: zookeeper_myid '256' is not an integer, 1..255 (ZooKeeper's server ids). Fix zookeeper_myid of kafka1.",
        ],
        id="myid-out-of-range",
    ),
    pytest.param(
        lambda: ensemble(
            {
                "kafka1": {"ansible_host": "192.0.2.11", "zookeeper_myid": 2},
                "kafka2": {"ansible_host": "192.0.2.12", "zookeeper_myid": 2},
                "kafka3": {"ansible_host": "192.0.2.13", "zookeeper_myid": 3},
            }
        ),
        [
            "kafka2: zookeeper_myid 2 is already used by kafka1. Each host needs its own; change zookeeper_myid of kafka2 or kafka1.",
        ],
        id="myid-duplicate",
    ),
    pytest.param(
        lambda: ensemble(s={"peer_port": 2181}),
        [
            "zookeeper_client_port, zookeeper_peer_port and zookeeper_election_port must differ (got [2181, 2181, 3888]).",
        ],
        id="zookeeper-ports-equal",
    ),
    # --- monitoring
    pytest.param(
        lambda: monitoring(servers=()),
        [
            "metrics exporters are on for kafka1 (kafka_metrics_enabled), kafka2 (kafka_metrics_enabled), kafka3 (kafka_metrics_enabled), kafka1 (node_exporter_enabled), kafka2 (node_exporter_enabled), kafka3 (node_exporter_enabled) but group monitoring has no host, so nothing would scrape them. Put the host that runs Prometheus in group monitoring, or set kafka_metrics_enabled, zookeeper_metrics_enabled and node_exporter_enabled to false.",
        ],
        id="exporters-on-monitoring-group-empty",
    ),
    pytest.param(
        lambda: monitoring(with_host("kafka2", kafka_metrics_port=9092)),
        [
            "kafka2: kafka_metrics_port 9092 is also the port of listener INTERNAL. Give the metrics exporter another port (kafka_metrics_port of kafka2, default 7071).",
        ],
        id="metrics-port-is-a-listener-port",
    ),
    pytest.param(
        lambda: monitoring(with_host("kafka1", kafka_metrics_port="seventy")),
        [
            "kafka1: kafka_metrics_port 'seventy' is not a TCP port number (1-65535). Fix kafka_metrics_port of kafka1.",
        ],
        id="metrics-port-not-a-port",
    ),
    pytest.param(
        lambda: monitoring(with_host("kafka1", kafka_metrics_enabled="perhaps")),
        [
            "kafka1: kafka_metrics_enabled must be true or false, not 'perhaps'.",
        ],
        id="metrics-enabled-a-word",
    ),
    pytest.param(
        lambda: monitoring(with_host("kafka3", node_exporter_port=9093)),
        [
            "kafka3: node_exporter_port of kafka3 is 9093, which the KRaft controller port of kafka3 uses too on the same machine. Give one of them another port.",
        ],
        id="node-exporter-port-is-the-controller-port",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_down_for": 60}),
        [
            "prometheus_alert_down_for is 60: it must be a Prometheus duration such as 30s, 5m or 1h (a quoted string). Fix prometheus_alert_down_for in group_vars.",
        ],
        id="alert-window-a-number",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_connect_failed_for": 60, "prometheus_alert_mirror_latency_ms": "30s"}),
        [
            "prometheus_alert_connect_failed_for is 60: it must be a Prometheus duration such as 30s, 5m or 1h (a quoted string). Fix prometheus_alert_connect_failed_for in group_vars.",
            "prometheus_alert_mirror_latency_ms is '30s': it must be a whole number of milliseconds (e.g. 30000). Fix prometheus_alert_mirror_latency_ms in group_vars.",
        ],
        id="connect-alert-window-and-mirror-latency",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_lag_records": "lots"}),
        [
            "prometheus_alert_lag_records is 'lots': it must be a whole number of records (e.g. 1000). Fix prometheus_alert_lag_records in group_vars.",
        ],
        id="lag-threshold-a-word",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_disk_used_ratio": 85}),
        [
            "prometheus_alert_disk_used_ratio is 85: it must be a number above 0 and at most 1 (0.85 alerts at 85 % full). Fix prometheus_alert_disk_used_ratio in group_vars.",
        ],
        id="disk-ratio-a-percentage",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_spark_stalled_reports": 0}),
        [
            "prometheus_alert_spark_stalled_reports is 0: it must be a whole number of report intervals, at least 1 (e.g. 5). Fix prometheus_alert_spark_stalled_reports in group_vars.",
        ],
        id="spark-stalled-reports-zero",
    ),
    pytest.param(
        lambda: monitoring(s={"prometheus_alert_certificate_days": "2w", "prometheus_alert_certificate_for": 60}),
        [
            "prometheus_alert_certificate_for is 60: it must be a Prometheus duration such as 30s, 5m or 1h (a quoted string). Fix prometheus_alert_certificate_for in group_vars.",
            "prometheus_alert_certificate_days is '2w': it must be a whole number of days, at least 1 (e.g. 14). Fix prometheus_alert_certificate_days in group_vars.",
        ],
        id="certificate-alert-days-and-window",
    ),
    pytest.param(
        lambda: monitoring(spark=spark_job(8081)),
        [
            "spark1: spark_consumer_metrics_port (the metrics of consumer) is 8081, which spark_worker_webui_port of spark1 uses too on the same machine. Give one of them another port.",
        ],
        id="spark-job-metrics-port-is-the-worker-ui",
    ),
    # --- spark
    pytest.param(
        lambda: spark(["spark1", "spark2"], ["spark1"]),
        [
            "group spark_master has 2 hosts (spark1, spark2): a standalone Spark cluster has one master. Keep one host in spark_master (spark_master_group).",
        ],
        id="two-spark-masters",
    ),
    pytest.param(
        lambda: spark(["spark1"], []),
        [
            "group spark_master has spark1 but group spark_worker is empty: no executor could run the job. Put at least one host in spark_worker (spark_worker_group); the master's host may be one.",
        ],
        id="spark-master-without-workers",
    ),
    pytest.param(
        lambda: spark([], ["spark1", "spark2"]),
        [
            "group spark_worker has hosts (spark1, spark2) but group spark_master is empty: the workers would have no master. Put one host in spark_master (spark_master_group).",
        ],
        id="spark-workers-without-master",
    ),
    pytest.param(
        lambda: spark(["spark1"], ["spark1", "spark2"], shared_path=""),
        [
            "the Spark cluster has 2 hosts (spark1, spark2) but spark_shared_storage_path is empty: executors on every host write the job's output and checkpoints, so those must be on storage every Spark host mounts at the same path. Set spark_shared_storage_path to that mount point (and spark_shared_storage_mount to have the role mount it, e.g. NFS), or keep one host in the spark groups.",
        ],
        id="spark-multi-host-without-shared-storage",
    ),
    pytest.param(
        lambda: spark(["spark1"], ["spark1", "spark2"], shared_path="srv/shared"),
        [
            "spark_shared_storage_path 'srv/shared' is not an absolute path: give the mount point every Spark host shares, e.g. /srv/spark-shared.",
        ],
        id="spark-shared-storage-relative",
    ),
    pytest.param(
        lambda: spark(["spark1"], ["spark1", "spark2"], resources={"spark1": {"cores": 0, "memory": "4g"}}),
        [
            "spark1: spark_worker_cores is 0: give the number of cores the worker offers to executors, a whole number of at least 1 (e.g. spark_worker_cores: 8).",
        ],
        id="spark-worker-without-cores",
    ),
    pytest.param(
        lambda: spark(["spark1"], ["spark1", "spark2"], resources={"spark2": {"cores": 8, "memory": "4 gigs"}}),
        [
            "spark2: spark_worker_memory is '4 gigs': give the memory the worker offers to executors as a Spark size of at least 512m (e.g. spark_worker_memory: 24g).",
        ],
        id="spark-worker-memory-malformed",
    ),
    pytest.param(
        lambda: spark(["spark1"], ["spark1", "spark2"], authenticate={"spark1": True, "spark2": False}),
        [
            "spark_authenticate is false on spark2 but true on the other Spark hosts: a worker or job without the shared secret cannot talk to a master that asks for it, and the other way round. Set spark_authenticate once for the whole Spark cluster (group_vars/all or group_vars/spark).",
        ],
        id="spark-authenticate-mixed",
    ),
    pytest.param(
        lambda: sizing(cores=3, memory_mb=4096),
        [
            "the Spark workers offer 6 cores in all (spark_worker_cores: spark1: 3, spark2: 3) but the consumer job needs at least 8: 6 for the low-latency path in Real-time Mode (one per input partition) and one per worker for the archive (2). Raise spark_worker_cores to 4 on every worker, lower spark_consumer_topic_partitions, or set spark_consumer_realtime_mode: microbatch.",
        ],
        id="spark-workers-too-few-cores-for-real-time-mode",
    ),
    pytest.param(
        lambda: sizing(cores=8, memory_mb=768),
        [
            "the smallest Spark worker offers 768 MiB (spark_worker_memory) but the consumer job's executors need at least 512 MiB each on it (1 archive and 3 low-latency cores per worker). Raise spark_worker_memory to at least 2g on every worker.",
        ],
        id="spark-workers-too-little-memory",
    ),
    # --- firewall
    pytest.param(
        lambda: firewall({"firewall_admin_networks": []}),
        [
            "kafka1: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
            "kafka2: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
            "kafka3: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
        ],
        id="admin-networks-empty",
    ),
    pytest.param(
        lambda: firewall({"firewall_admin_networks": ["192.0.2.1/24"]}),
        [
            "kafka1: firewall_admin_networks: '192.0.2.1/24' has host bits set: write 192.0.2.0/24 for the network, or 192.0.2.1/32 for the one address.",
            "kafka2: firewall_admin_networks: '192.0.2.1/24' has host bits set: write 192.0.2.0/24 for the network, or 192.0.2.1/32 for the one address.",
            "kafka3: firewall_admin_networks: '192.0.2.1/24' has host bits set: write 192.0.2.0/24 for the network, or 192.0.2.1/32 for the one address.",
            "kafka1: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
            "kafka2: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
            "kafka3: firewall_admin_networks is empty, so SSH would be closed to everyone and the next run could not reach this host. List the networks you administer from (at least the controller's address, e.g. 192.0.2.10/32), or set firewall_enabled: false for this host.",
        ],
        id="admin-network-host-bits",
    ),
    pytest.param(
        lambda: firewall({"firewall_client_networks": "10.0.0.0/8"}),
        [
            "kafka1: firewall_client_networks must be a list of networks (CIDR), e.g. ['192.0.2.0/24'], not '10.0.0.0/8'.",
            "kafka2: firewall_client_networks must be a list of networks (CIDR), e.g. ['192.0.2.0/24'], not '10.0.0.0/8'.",
            "kafka3: firewall_client_networks must be a list of networks (CIDR), e.g. ['192.0.2.0/24'], not '10.0.0.0/8'.",
        ],
        id="client-networks-not-a-list",
    ),
    pytest.param(
        lambda: firewall({"firewall_enabled": "yes"}),
        [
            "kafka1: firewall_enabled must be true or false, not 'yes'.",
            "kafka2: firewall_enabled must be true or false, not 'yes'.",
            "kafka3: firewall_enabled must be true or false, not 'yes'.",
        ],
        id="firewall-enabled-not-bool",
    ),
    pytest.param(
        lambda: firewall({"firewall_ssh_port": "ssh"}),
        [
            "kafka1: firewall_ssh_port 'ssh' is not a TCP port.",
            "kafka2: firewall_ssh_port 'ssh' is not a TCP port.",
            "kafka3: firewall_ssh_port 'ssh' is not a TCP port.",
        ],
        id="ssh-port-bad",
    ),
    pytest.param(
        lambda: firewall({}, {"kafka2": {"ansible_host": "kafka2.invalid"}}),
        [
            "kafka2: no IP address for the firewall rules of its peers: ansible_host 'kafka2.invalid' is not an IP and does not resolve on the controller. Set firewall_address (the IP this host's cluster traffic comes from) for kafka2.",
        ],
        id="firewall-address-not-ip",
    ),
    # --- topics
    pytest.param(
        lambda: topics([{"name": "t", "partitions": 1, "replication_factor": 4}]),
        [
            "topic 't': replication_factor 4 is larger than the number of brokers (3): lower it to at most 3 or add brokers.",
        ],
        id="topic-rf-above-brokers",
    ),
    pytest.param(
        lambda: topics(
            [{"name": "t", "partitions": 1, "replication_factor": 2, "configs": {"min.insync.replicas": 3}}]
        ),
        [
            "topic 't': configs.min.insync.replicas 3 is larger than replication_factor 2: producers with acks=all could never write. Lower it.",
        ],
        id="topic-min-isr-above-rf",
    ),
    pytest.param(
        lambda: topics([{"name": "t", "partitions": 0, "replication_factor": 1}]),
        [
            "topic 't': partitions '0' must be a positive integer.",
        ],
        id="topic-partitions-zero",
    ),
    pytest.param(
        lambda: topics([{"name": "bad name", "partitions": 1, "replication_factor": 1}]),
        [
            "topic 'bad name': invalid name: use 1-249 characters from a-z A-Z 0-9 . _ - (and not '.' or '..').",
        ],
        id="topic-name-invalid",
    ),
    pytest.param(
        lambda: topics([{"name": "t", "partitions": 1, "replication_factor": 1}] * 2),
        [
            "topic 't': declared more than once.",
        ],
        id="topic-declared-twice",
    ),
    pytest.param(
        lambda: topics([{"name": "t", "partitions": 1, "replication_factor": 1, "retention": 1}]),
        [
            "kafka_topics[0]: unknown field(s) retention; allowed: configs, name, partitions, replication_factor, state.",
        ],
        id="topic-unknown-field",
    ),
    # --- variables against the specs
    pytest.param(
        lambda: topics(
            [{"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"retention.msx": 1}}],
            known_configs={"retention.ms", "retention.bytes"},
        ),
        [
            "topic 't': configs.retention.msx is not a topic config this Kafka release knows; did you mean retention.ms?",
        ],
        id="topic-config-misspelt",
    ),
    pytest.param(
        lambda: topics(
            [{"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"message.format.version": "3.0"}}],
            known_configs={"retention.ms", "cleanup.policy"},
        ),
        [
            "topic 't': configs.message.format.version is not a topic config this Kafka release knows (see Kafka's topic configs for this release).",
        ],
        id="topic-config-removed-in-the-release",
    ),
    # --- client quotas (kafka_quotas)
    pytest.param(
        lambda: quotas([{"user": "app", "producer_byterate": 1048576}]),
        [
            "kafka_quotas[0] (user=app): producer_byterate is not a quota key; did you mean producer_byte_rate?",
        ],
        id="quota-key-misspelt",
    ),
    pytest.param(
        lambda: quotas([{"user": "app", "producer_byte_rate": 1048576, "burst": 2}]),
        [
            "kafka_quotas[0] (user=app): burst is not a quota key; known: user, client_id, producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, state.",
        ],
        id="quota-key-unknown",
    ),
    pytest.param(
        lambda: quotas([{"user": "mallory", "producer_byte_rate": 1048576}]),
        [
            "kafka_quotas[0] (user=mallory): user mallory is not a user kafka_users declares (present): declare the user, fix the name, or write '<default>' for every user without a quota of their own.",
        ],
        id="quota-for-an-undeclared-user",
    ),
    pytest.param(
        lambda: quotas([{"user": "retired", "consumer_byte_rate": 1048576}]),
        [
            "kafka_quotas[0] (user=retired): user retired is not a user kafka_users declares (present): declare the user, fix the name, or write '<default>' for every user without a quota of their own.",
        ],
        id="quota-for-a-user-declared-absent",
    ),
    pytest.param(
        lambda: quotas([{"client_id": "batch", "producer_byte_rate": 1.5, "request_percentage": 0}]),
        [
            "kafka_quotas[0] (client-id=batch): producer_byte_rate 1.5 is not a whole number of bytes per second (per broker), 1 or more.",
            "kafka_quotas[0] (client-id=batch): request_percentage 0 is not a number above 0 (percent of one request thread, per broker).",
        ],
        id="quota-values-not-positive-numbers",
    ),
    pytest.param(
        lambda: quotas([{"user": "<default>", "controller_mutation_rate": "fast"}]),
        [
            "kafka_quotas[0] (user=<default>): controller_mutation_rate 'fast' is not a number above 0 (partitions created or deleted per second).",
        ],
        id="quota-value-a-word",
    ),
    pytest.param(
        lambda: quotas([{"producer_byte_rate": 1048576}]),
        [
            "kafka_quotas[0] names no entity: set user (a user kafka_users declares, or '<default>' for every user without one of their own), client_id (a client id, or '<default>'), or both.",
        ],
        id="quota-without-an-entity",
    ),
    pytest.param(
        lambda: quotas([{"user": "app", "client_id": "bulk"}]),
        [
            "kafka_quotas[0] (user=app,client-id=bulk) sets no quota: give at least one of producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, or state: absent to remove the quotas it has.",
        ],
        id="quota-that-sets-nothing",
    ),
    pytest.param(
        lambda: quotas(
            [{"user": "app", "producer_byte_rate": 1048576}, {"user": "app", "consumer_byte_rate": 1048576}]
        ),
        [
            "kafka_quotas[1] (user=app): the same entity as kafka_quotas[0]; declare each entity once, with all its quotas.",
        ],
        id="quota-entity-declared-twice",
    ),
    pytest.param(
        lambda: quotas({"user": "app", "producer_byte_rate": 1048576}),
        [
            "kafka_quotas must be a list of quotas, not a dict: e.g. [{user: alice, producer_byte_rate: 1048576}].",
        ],
        id="quotas-not-a-list",
    ),
    pytest.param(
        lambda: variables({h: {"kafka_mode": "kraftt"} for h in NAMES}, controller={"kafka_mode": "kraftt"}),
        [
            "kafka1, kafka2, kafka3: kafka_mode is 'kraftt', but the kafka role needs one of kraft, zookeeper (roles/kafka/meta/argument_specs.yml). Fix kafka_mode in the inventory.",
        ],
        id="mode-misspelt",
    ),
    pytest.param(
        lambda: variables({"kafka1": {"kafka_heapsize": "2g"}}),
        [
            "kafka1: kafka_heapsize: no such variable; did you mean kafka_heap_size? Rename or remove it, or set kafkalab_allow_unknown_variables: true to go on anyway.",
        ],
        id="heap-size-misspelt-name",
    ),
    pytest.param(
        lambda: variables({"kafka2": {"kafka_frobnicate": 1}}),
        [
            "kafka2: kafka_frobnicate: no such variable; no role declares it (see the roles' READMEs). Rename or remove it, or set kafkalab_allow_unknown_variables: true to go on anyway.",
        ],
        id="unknown-variable-no-match",
    ),
    pytest.param(
        lambda: variables({"kafka3": {"kafka_num_partitions": "many"}}),
        [
            "kafka3: kafka_num_partitions is 'many', but the kafka role needs an integer (roles/kafka/meta/argument_specs.yml). Fix kafka_num_partitions in the inventory.",
        ],
        id="int-variable-a-word",
    ),
    pytest.param(
        lambda: variables({h: {"kafka_data_dirs": "/data"} for h in NAMES}),
        [
            "kafka1, kafka2, kafka3: kafka_data_dirs is '/data' (a string, not a list), but the kafka role needs a list of strings (roles/kafka/meta/argument_specs.yml). Fix kafka_data_dirs in the inventory.",
        ],
        id="list-variable-a-string",
    ),
    pytest.param(
        lambda: variables({"kafka1": {"firewall_enabled": "perhaps"}}),
        [
            "kafka1: firewall_enabled is 'perhaps', but the firewall role needs true or false (roles/firewall/meta/argument_specs.yml). Fix firewall_enabled in the inventory.",
        ],
        id="bool-variable-a-word",
    ),
    pytest.param(
        lambda: variables({"kafka1": {"kafka_version": "4.2.1"}}),
        [
            "kafka_version must be the same on every host of group kafka, but it differs (kafka1 '4.2.1'; kafka2, kafka3 (the role default)). Set it once, in group_vars/all.",
        ],
        id="version-set-per-host",
    ),
    pytest.param(
        lambda: variables({h: {"kafka_version": "4.2.1"} for h in NAMES}, controller={}),
        [
            "kafka_version is '4.2.1' on the hosts of group kafka but (the role default) where the preflight builds the cluster model (the controller sees group_vars/all only). Set it in group_vars/all.",
        ],
        id="version-set-for-group-only",
    ),
]


def test_the_table_covers_at_least_fifty_bad_inventories() -> None:
    assert len(CASES) >= 50


@pytest.mark.parametrize("problems,expected", CASES)
def test_bad_inventory_is_refused_with_its_exact_message(
    problems: Callable[[], list[str]], expected: list[str]
) -> None:
    assert problems() == expected


@pytest.mark.parametrize("on", [True, False])
def test_spark_rpc_is_encrypted_exactly_when_the_cluster_authenticates(on: bool) -> None:
    """spark_authenticate brings AES-GCM RPC encryption with it, and no unencrypted SASL fallback; off, neither."""
    hv = {"spark1": {"ansible_host": "192.0.2.21"}}
    settings = {"master_port": 7077, "shared_path": "/srv/spark-shared", "authenticate": {"spark1": on}}
    rpc = spark_cluster_model(hv, ["spark1"], ["spark1"], settings)["rpc_security"]
    if on:
        assert rpc == {
            "spark.authenticate": "true",
            "spark.network.crypto.enabled": "true",
            "spark.network.crypto.cipher": "AES/GCM/NoPadding",
            "spark.network.crypto.saslFallback": "false",
        }
    else:
        assert rpc == {"spark.authenticate": "false"}


def test_a_value_that_templates_through_hostvars_is_left_to_its_role_and_the_other_variables_are_still_checked(
    tmp_path: Path,
) -> None:
    """In the preflight's task, Ansible hands the filter each list or mapping unrendered (its items render when
    read) and hostvars is undefined where a host's own variables render: such a value cannot be checked there.
    It must be skipped (the role that reads it renders it in a task), not stop the whole check with an error
    that names no variable. Built by Ansible itself from an inventory on disk, called from a template as the
    preflight's task calls it."""
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(
        "all:\n"
        "  children:\n"
        "    kafka: {hosts: {kafka1: {kafka_num_partitions: many}}}\n"
        "    postgresql: {hosts: {pg1: {firewall_address: 192.0.2.50}}}\n"
    )
    (tmp_path / "group_vars" / "all.yml").write_text(
        "firewall_client_networks: [\"{{ hostvars[groups['postgresql'][0]]['firewall_address'] }}/32\"]\n"
    )
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.yml")])
    hostvars = HostVarsOfAnsible(
        inventory=inventory, variable_manager=VariableManager(loader, inventory), loader=loader
    )
    groups = {"all": ["kafka1", "pg1"], "kafka": ["kafka1"], "postgresql": ["pg1"]}

    def check(hv: Any) -> list[str]:
        return inventory_variable_problems(hv, groups["all"], groups)

    templar = Templar(loader=loader, variables={"hostvars": hostvars, "check": check})
    assert templar.template(trust_as_template("{{ check(hostvars) }}")) == [
        "kafka1: kafka_num_partitions is 'many', but the kafka role needs an integer (roles/kafka/meta/argument_specs.yml). Fix kafka_num_partitions in the inventory.",
    ]
