"""Several Kafka instances on one machine (kafka_instance): the model, its refusals, the properties and the
firewall records. One inventory host per instance, all with the machine's ansible_host."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.firewall_plan import firewall_plan
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_outputs import (
    kafka_firewall_services,
    kafka_server_properties,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import machine_firsts
from test_kafka_cluster_model import SETTINGS as ONE_HOST_PER_NODE

# The cluster-wide settings of the model tests, with the classroom's controller port and ZooKeeper's ports.
SETTINGS: dict[str, Any] = {
    **ONE_HOST_PER_NODE,
    "controller_listener": {"name": "CONTROLLER", "port": 9192, "protocol": "PLAINTEXT"},
    "zookeeper_client_port": 2181,
    "zookeeper_peer_port": 2888,
    "zookeeper_election_port": 3888,
}
HOSTS = ["classroom-1", "classroom-2", "classroom-3"]


def classroom(**changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """inventories/single-host: three instances on 192.0.2.10, clients on 9092-9094, controllers on 9192-9194."""
    hostvars = {
        f"classroom-{i}": {
            "ansible_host": "192.0.2.10",
            "kafka_instance": str(i),
            "kafka_node_id": i,
            "kafka_listener_overrides": {"INTERNAL": {"port": 9091 + i}},
            "kafka_controller_port": 9191 + i,
        }
        for i in (1, 2, 3)
    }
    for host, values in changes.items():
        hostvars[host.replace("_", "-")] = {**hostvars[host.replace("_", "-")], **values}
    return hostvars


def model_of(hostvars: dict[str, Any], controllers: list[str] = HOSTS, brokers: list[str] = HOSTS, **settings: Any):
    return kafka_cluster_model(hostvars, controllers, brokers, {**SETTINGS, **settings}, settings.pop("zk", []))


def test_three_combined_instances_on_one_machine_get_their_own_ports_dirs_and_votes() -> None:
    model = model_of(classroom())
    assert model["problems"] == []
    assert model["quorum_voters"] == "1@192.0.2.10:9192,2@192.0.2.10:9193,3@192.0.2.10:9194"
    assert model["controller_bootstrap"] == "192.0.2.10:9192,192.0.2.10:9193,192.0.2.10:9194"
    assert model["bootstrap_servers"] == "192.0.2.10:9092,192.0.2.10:9093,192.0.2.10:9094"
    assert {model["nodes"][h]["machine"] for h in HOSTS} == {"192.0.2.10"}
    props = kafka_server_properties(model, "classroom-2", SETTINGS)
    assert props["listeners"] == "INTERNAL://:9093,CONTROLLER://:9193"
    assert props["advertised.listeners"] == "INTERNAL://192.0.2.10:9093"
    assert props["log.dirs"] == "/var/lib/kafka/data/2"
    assert model["nodes"]["classroom-3"]["data_dirs"] == ["/var/lib/kafka/data/3"]


def test_a_plain_host_keeps_its_plain_dirs_and_the_listener_port() -> None:
    hostvars = {f"k{i}": {"ansible_host": f"10.0.0.{i}", "kafka_node_id": i} for i in (1, 2, 3)}
    model = model_of(
        hostvars, ["k1", "k2", "k3"], ["k1", "k2", "k3"], controller_listener=SETTINGS["controller_listener"]
    )
    assert model["problems"] == []
    node = model["nodes"]["k1"]
    assert (node["instance"], node["machine"], node["controller_port"]) == ("", "10.0.0.1", 9192)
    assert kafka_server_properties(model, "k1", SETTINGS)["log.dirs"] == "/var/lib/kafka/data"


def test_one_controller_and_three_brokers_on_one_machine() -> None:
    hostvars = classroom()
    hostvars["classroom-0"] = {
        "ansible_host": "192.0.2.10",
        "kafka_instance": "controller",
        "kafka_node_id": 100,
        "kafka_controller_port": 9199,
    }
    model = model_of(hostvars, ["classroom-0"], HOSTS)
    assert model["problems"] == []
    assert model["quorum_voters"] == "100@192.0.2.10:9199"
    assert kafka_server_properties(model, "classroom-1", SETTINGS)["listeners"] == "INTERNAL://:9092"
    # The dedicated controller carries the topic defaults and the cluster's min.insync.replicas (the active
    # controller seeds the cluster-level value from its own), but no broker listener or broker-only setting.
    controller = kafka_server_properties(model, "classroom-0", SETTINGS)
    assert controller["process.roles"] == "controller"
    assert controller["listeners"] == "CONTROLLER://:9199"
    assert {k: controller[k] for k in ("min.insync.replicas", "default.replication.factor")} == {
        "min.insync.replicas": str(SETTINGS["min_insync_replicas"]),
        "default.replication.factor": str(SETTINGS["default_replication_factor"]),
    }
    assert controller["unclean.leader.election.enable"] == "false"
    assert "advertised.listeners" not in controller and "offsets.topic.replication.factor" not in controller


@pytest.mark.parametrize(
    "changes,expected",
    [
        (
            {"classroom_2": {"kafka_instance": ""}},
            "classroom-1, classroom-2, classroom-3: these inventory hosts reach one machine (192.0.2.10, their "
            "ansible_host) but classroom-2 set no kafka_instance",
        ),
        (
            {"classroom_3": {"kafka_instance": "2"}},
            "classroom-3: kafka_instance '2' is also classroom-2's on machine 192.0.2.10",
        ),
        (
            {"classroom_3": {"kafka_listener_overrides": {"INTERNAL": {"port": 9093}}}},
            "classroom-3: instance 3 on machine 192.0.2.10 opens port 9093 (listener INTERNAL), which classroom-2 "
            "(instance 2, listener INTERNAL) opens too",
        ),
        (
            {"classroom_2": {"kafka_controller_port": 9192}},
            "classroom-2: instance 2 on machine 192.0.2.10 opens port 9192 (listener CONTROLLER), which "
            "classroom-1 (instance 1, listener CONTROLLER) opens too",
        ),
        (
            {"classroom_1": {"kafka_instance": "one/two"}},
            "classroom-1: kafka_instance 'one/two' is not an instance name",
        ),
        (
            {"classroom_1": {"kafka_controller_port": 70000}},
            "classroom-1: kafka_controller_port '70000' is not a TCP port",
        ),
        (
            {"classroom_1": {"kafka_data_dirs": ["/var/lib/kafka/data/2"]}},
            "classroom-1: data dir /var/lib/kafka/data/2/1 (instance 1) overlaps /var/lib/kafka/data/2 of classroom-2",
        ),
        ({"classroom_2": {"kafka_node_id": 1}}, "classroom-2: kafka_node_id 1 is already used by classroom-1"),
    ],
    ids=[
        "no-instance",
        "same-instance",
        "same-port",
        "same-controller-port",
        "bad-name",
        "bad-port",
        "nested-dirs",
        "same-id",
    ],
)
def test_clashes_between_instances_on_one_machine_are_refused_naming_host_instance_and_variable(
    changes: dict[str, Any], expected: str
) -> None:
    problems = model_of(classroom(**changes))["problems"]
    assert any(expected in p for p in problems), problems


def test_a_zookeeper_server_on_the_machine_must_not_share_an_instances_port() -> None:
    hostvars = classroom(classroom_3={"kafka_listener_overrides": {"INTERNAL": {"port": 2181}}})
    hostvars["classroom"] = {"ansible_host": "192.0.2.10", "zookeeper_myid": 1}
    model = kafka_cluster_model(
        hostvars, [], HOSTS, {**SETTINGS, "mode": "zookeeper", "version": "3.9.2"}, ["classroom"]
    )
    assert any(
        "classroom: ZooKeeper's client port 2181 on machine 192.0.2.10 is also opened by classroom-3" in p
        for p in model["problems"]
    ), model["problems"]


def test_zookeeper_mode_one_zookeeper_and_three_brokers_on_one_machine() -> None:
    hostvars = classroom()
    hostvars["classroom"] = {"ansible_host": "192.0.2.10"}
    s = {**SETTINGS, "mode": "zookeeper", "version": "3.9.2"}
    model = kafka_cluster_model(hostvars, [], HOSTS, s, ["classroom"])
    assert model["problems"] == []
    props = kafka_server_properties(model, "classroom-3", s)
    assert props["zookeeper.connect"] == "192.0.2.10:2181"
    assert (props["broker.id"], props["listeners"], props["log.dirs"]) == (
        "3",
        "INTERNAL://:9094",
        "/var/lib/kafka/data/3",
    )


def test_the_migration_refuses_instance_hosts() -> None:
    model = kafka_cluster_model(
        classroom(), HOSTS, HOSTS, {**SETTINGS, "version": "3.9.2", "migration_phase": "controllers"}, ["zk"]
    )
    assert any("does not migrate clusters whose hosts run several Kafka instances" in p for p in model["problems"])


def test_the_machine_has_one_ufw_rule_set_the_union_of_its_instances_applied_by_the_first_in_the_run() -> None:
    hostvars = classroom()
    for values in hostvars.values():
        values["firewall_admin_networks"] = ["192.0.2.1/32"]
        values["firewall_client_networks"] = ["198.51.100.0/24"]
    model = model_of(hostvars)
    services = kafka_firewall_services(model)
    assert sorted(s["port"] for s in services if s["name"] == "kafka controller quorum") == [9192, 9193, 9194]
    plan = firewall_plan(hostvars, HOSTS, services, {"firewall_enabled": True, "firewall_ssh_port": 22})
    assert plan["problems"] == []
    rules = {(r["src"], r["port"]) for r in plan["hosts"]["classroom-1"]["rules"]}
    assert rules == {("192.0.2.1", "22")} | {("198.51.100.0/24", str(p)) for p in (9092, 9093, 9094)}
    assert plan["hosts"]["classroom-2"]["rules"] == plan["hosts"]["classroom-1"]["rules"]
    assert machine_firsts(hostvars, ["classroom-2", "classroom-1", "classroom-3"]) == ["classroom-2"]
