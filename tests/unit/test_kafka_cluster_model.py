"""The cluster model behind every server.properties: roles, quorum, listeners, replication, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_outputs import kafka_server_properties, to_properties

SETTINGS: dict[str, Any] = {
    "version": "4.3.1",
    "heap_size": "1g",
    "listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "PLAINTEXT"}],
    "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "PLAINTEXT"},
    "inter_broker_listener_name": "INTERNAL",
    "default_replication_factor": 3,
    "min_insync_replicas": 2,
    "num_partitions": 3,
    "data_dirs": ["/var/lib/kafka/data"],
}


def inventory(n: int) -> dict[str, dict[str, Any]]:
    return {f"k{i}": {"kafka_node_id": i, "ansible_host": f"10.0.0.{10 + i}"} for i in range(1, n + 1)}


def settings(**changes: Any) -> dict[str, Any]:
    return {**SETTINGS, **changes}


def props_for(
    hostvars: dict[str, Any], controllers: list[str], brokers: list[str], **changes: Any
) -> dict[str, dict[str, str]]:
    s = settings(**changes)
    model = kafka_cluster_model(hostvars, controllers, brokers, s)
    assert model["problems"] == []
    return {h: kafka_server_properties(model, h, s) for h in model["nodes"]}


def test_single_node_runs_combined_with_replication_of_one() -> None:
    props = props_for(inventory(1), ["k1"], ["k1"], default_replication_factor=1, min_insync_replicas=1)["k1"]
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["controller.quorum.voters"] == "1@10.0.0.11:9093"
    assert props["listeners"] == "INTERNAL://:9092,CONTROLLER://:9093"
    assert props["advertised.listeners"] == "INTERNAL://10.0.0.11:9092"
    assert props["default.replication.factor"] == "1"
    assert props["min.insync.replicas"] == "1"


@pytest.mark.parametrize(
    "host,node_id,address", [("k1", "1", "10.0.0.11"), ("k2", "2", "10.0.0.12"), ("k3", "3", "10.0.0.13")]
)
def test_three_combined_nodes_each_get_their_own_id_and_address(host: str, node_id: str, address: str) -> None:
    names = ["k1", "k2", "k3"]
    props = props_for(inventory(3), names, names)[host]
    assert props["node.id"] == node_id
    assert props["advertised.listeners"] == f"INTERNAL://{address}:9092"
    assert props["controller.quorum.voters"] == "1@10.0.0.11:9093,2@10.0.0.12:9093,3@10.0.0.13:9093"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["unclean.leader.election.enable"] == "false"


def test_five_combined_nodes_vote_in_one_quorum_of_five() -> None:
    names = [f"k{i}" for i in range(1, 6)]
    props = props_for(inventory(5), names, names)
    voters = {p["controller.quorum.voters"] for p in props.values()}
    assert voters == {",".join(f"{i}@10.0.0.{10 + i}:9093" for i in range(1, 6))}
    assert {p["node.id"] for p in props.values()} == {"1", "2", "3", "4", "5"}


def test_dedicated_controllers_open_only_the_controller_listener_and_advertise_nothing() -> None:
    hv = inventory(5)
    props = props_for(hv, ["k1", "k2", "k3"], ["k4", "k5"], default_replication_factor=2, min_insync_replicas=1)
    controller = props["k1"]
    assert controller["process.roles"] == "controller"
    assert controller["listeners"] == "CONTROLLER://:9093"
    assert "advertised.listeners" not in controller
    assert "inter.broker.listener.name" not in controller
    broker = props["k4"]
    assert broker["process.roles"] == "broker"
    assert broker["listeners"] == "INTERNAL://:9092"
    assert broker["advertised.listeners"] == "INTERNAL://10.0.0.14:9092"
    # A dedicated broker still needs to know how to reach the quorum.
    assert broker["controller.quorum.voters"] == "1@10.0.0.11:9093,2@10.0.0.12:9093,3@10.0.0.13:9093"
    assert broker["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"


def test_advertised_host_overrides_inventory_address() -> None:
    hv = inventory(1)
    hv["k1"]["kafka_advertised_host"] = "kafka1.example.net"
    props = props_for(hv, ["k1"], ["k1"], default_replication_factor=1, min_insync_replicas=1)["k1"]
    assert props["advertised.listeners"] == "INTERNAL://kafka1.example.net:9092"
    assert props["controller.quorum.voters"] == "1@kafka1.example.net:9093"


def test_bootstrap_servers_list_every_broker() -> None:
    names = ["k1", "k2", "k3"]
    model = kafka_cluster_model(inventory(3), names, names, SETTINGS)
    assert model["bootstrap_servers"] == "10.0.0.11:9092,10.0.0.12:9092,10.0.0.13:9092"
    assert model["controller_bootstrap"] == "10.0.0.11:9093,10.0.0.12:9093,10.0.0.13:9093"


def test_properties_text_is_sorted_and_java_readable() -> None:
    text = to_properties({"b": "2", "a": True, "c": "x\\y"})
    assert text == "a=true\nb=2\nc=x\\\\y\n"


def problems(hostvars: dict[str, Any], controllers: list[str], brokers: list[str], **changes: Any) -> list[str]:
    return list(kafka_cluster_model(hostvars, controllers, brokers, settings(**changes))["problems"])


def test_duplicate_node_ids_are_refused_naming_both_hosts() -> None:
    hv = inventory(3)
    hv["k3"]["kafka_node_id"] = 1
    found = problems(hv, ["k1", "k2", "k3"], ["k1", "k2", "k3"])
    assert any("k3" in p and "kafka_node_id 1" in p and "k1" in p for p in found), found


def test_missing_node_id_is_refused() -> None:
    hv = inventory(3)
    del hv["k2"]["kafka_node_id"]
    assert any(
        p.startswith("k2: kafka_node_id is not set") for p in problems(hv, ["k1", "k2", "k3"], ["k1", "k2", "k3"])
    )


@pytest.mark.parametrize("controllers", [["k1", "k2"], ["k1", "k2", "k3", "k4"]])
def test_even_controller_quorum_is_refused(controllers: list[str]) -> None:
    found = problems(inventory(4), controllers, ["k1", "k2", "k3", "k4"])
    assert any("must be odd" in p for p in found), found
    # ... except while add_controller.yml / remove_controller.yml changes the quorum.
    model = kafka_cluster_model(inventory(4), controllers, ["k1", "k2", "k3", "k4"], settings(quorum_change="k4"))
    assert not any("must be odd" in p for p in model["problems"]), model["problems"]


def test_empty_controller_quorum_is_refused() -> None:
    assert any("controller group is empty" in p for p in problems(inventory(3), [], ["k1", "k2", "k3"]))


def test_missing_address_is_refused_naming_the_host() -> None:
    hv = inventory(3)
    del hv["k2"]["ansible_host"]
    found = problems(hv, ["k1", "k2", "k3"], ["k1", "k2", "k3"])
    assert any(p.startswith("k2:") and "ansible_host" in p for p in found), found


def test_replication_factor_above_broker_count_is_refused() -> None:
    found = problems(inventory(1), ["k1"], ["k1"], default_replication_factor=3, min_insync_replicas=2)
    assert any("kafka_default_replication_factor 3 is larger than the number of brokers (1)" in p for p in found), found


def test_min_insync_above_replication_factor_is_refused() -> None:
    names = ["k1", "k2", "k3"]
    found = problems(inventory(3), names, names, default_replication_factor=2, min_insync_replicas=3)
    assert any("kafka_min_insync_replicas 3" in p for p in found), found


def test_two_listeners_on_one_port_are_refused() -> None:
    names = ["k1"]
    found = problems(
        inventory(1),
        names,
        names,
        listeners=[{"name": "INTERNAL", "port": 9092}, {"name": "EXTERNAL", "port": 9093}],
        default_replication_factor=1,
        min_insync_replicas=1,
    )
    assert any("k1: listeners EXTERNAL and CONTROLLER both use port 9093" in p for p in found), found


def test_override_of_an_undefined_listener_is_refused() -> None:
    hv = inventory(1)
    hv["k1"]["kafka_listener_overrides"] = {"EXTERNAL": {"advertised_port": 19092}}
    found = problems(hv, ["k1"], ["k1"], default_replication_factor=1, min_insync_replicas=1)
    assert any("k1: kafka_listener_overrides names listener 'EXTERNAL'" in p for p in found), found


def test_undefined_inter_broker_listener_is_refused() -> None:
    found = problems(
        inventory(1),
        ["k1"],
        ["k1"],
        inter_broker_listener_name="REPLICATION",
        default_replication_factor=1,
        min_insync_replicas=1,
    )
    assert any("kafka_inter_broker_listener_name 'REPLICATION'" in p for p in found), found


NAT_LISTENERS = [
    {"name": "INTERNAL", "port": 9092, "protocol": "PLAINTEXT"},
    {"name": "EXTERNAL", "port": 9094, "protocol": "PLAINTEXT", "external": True},
]


def nat_inventory() -> dict[str, dict[str, Any]]:
    hv = inventory(3)
    for i in range(1, 4):
        hv[f"k{i}"]["kafka_listener_overrides"] = {
            "EXTERNAL": {"advertised_host": "203.0.113.7", "advertised_port": 19091 + i}
        }
    return hv


def test_external_listener_advertises_the_nat_address_and_internal_the_cluster_address() -> None:
    names = ["k1", "k2", "k3"]
    props = props_for(nat_inventory(), names, names, listeners=NAT_LISTENERS)
    for i, host in enumerate(names, start=1):
        assert props[host]["listeners"] == "INTERNAL://:9092,EXTERNAL://:9094,CONTROLLER://:9093"
        assert props[host]["advertised.listeners"] == (
            f"INTERNAL://10.0.0.{10 + i}:9092,EXTERNAL://203.0.113.7:{19091 + i}"
        )
        assert props[host]["listener.security.protocol.map"] == (
            "CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT"
        )
        # The controller listener is opened but never advertised.
        assert "CONTROLLER" not in props[host]["advertised.listeners"]


def test_external_listener_without_advertised_address_is_refused_naming_host_and_variable() -> None:
    hv = nat_inventory()
    del hv["k2"]["kafka_listener_overrides"]
    names = ["k1", "k2", "k3"]
    found = problems(hv, names, names, listeners=NAT_LISTENERS)
    assert any(
        "k2: listener EXTERNAL is external" in p and "kafka_listener_overrides.EXTERNAL.advertised_host" in p
        for p in found
    ), found
    assert not any(p.startswith("k1:") or p.startswith("k3:") for p in found), found


def test_two_brokers_advertising_the_same_address_and_port_are_refused() -> None:
    hv = nat_inventory()
    hv["k3"]["kafka_listener_overrides"]["EXTERNAL"]["advertised_port"] = 19093
    names = ["k1", "k2", "k3"]
    found = problems(hv, names, names, listeners=NAT_LISTENERS)
    assert any(
        "k3: listener EXTERNAL advertises 203.0.113.7:19093, which k2 EXTERNAL advertises too" in p for p in found
    ), found


def test_replicating_over_an_external_listener_is_refused() -> None:
    names = ["k1", "k2", "k3"]
    found = problems(nat_inventory(), names, names, listeners=NAT_LISTENERS, inter_broker_listener_name="EXTERNAL")
    assert any("kafka_inter_broker_listener_name 'EXTERNAL' names an external listener" in p for p in found), found


def test_misspelt_listener_and_override_keys_are_refused() -> None:
    hv = nat_inventory()
    hv["k1"]["kafka_listener_overrides"]["EXTERNAL"]["advertized_host"] = "x"
    names = ["k1", "k2", "k3"]
    listeners = [{**NAT_LISTENERS[0], "clients": ["10.0.0.0/8"]}, NAT_LISTENERS[1]]
    found = problems(hv, names, names, listeners=listeners)
    assert any("listener INTERNAL: unknown key(s) clients" in p for p in found), found
    assert any("k1: kafka_listener_overrides.EXTERNAL has unknown key(s) advertized_host" in p for p in found), found


def test_fully_qualified_inventory_name_serves_as_address() -> None:
    hv = {"kafka1.example.net": {"kafka_node_id": 1}}
    model = kafka_cluster_model(hv, list(hv), list(hv), settings(default_replication_factor=1, min_insync_replicas=1))
    assert model["problems"] == []
    assert model["nodes"]["kafka1.example.net"]["address"] == "kafka1.example.net"


# ---- ZooKeeper mode -------------------------------------------------------------------------------

ZK_SETTINGS: dict[str, Any] = {
    **SETTINGS,
    "mode": "zookeeper",
    "version": "3.9.2",
    "zookeeper_client_port": 2181,
    "zookeeper_chroot": "",
}


def zk_model(hostvars: dict[str, Any], brokers: list[str], zookeepers: list[str], **changes: Any) -> dict[str, Any]:
    return kafka_cluster_model(hostvars, [], brokers, {**ZK_SETTINGS, **changes}, zookeepers)


@pytest.mark.parametrize("chroot,suffix", [("", ""), ("/kafka", "/kafka"), ("/labs/kafka-a", "/labs/kafka-a")])
def test_zookeeper_mode_brokers_get_broker_id_and_zookeeper_connect(chroot: str, suffix: str) -> None:
    names = ["k1", "k2", "k3"]
    settings_ = {**ZK_SETTINGS, "zookeeper_chroot": chroot}
    model = kafka_cluster_model(inventory(3), [], names, settings_, names)
    assert model["problems"] == []
    props = kafka_server_properties(model, "k2", settings_)
    assert props["broker.id"] == "2"
    assert props["zookeeper.connect"] == f"10.0.0.11:2181,10.0.0.12:2181,10.0.0.13:2181{suffix}"
    assert props["listeners"] == "INTERNAL://:9092"
    assert props["advertised.listeners"] == "INTERNAL://10.0.0.12:9092"
    assert props["listener.security.protocol.map"] == "INTERNAL:PLAINTEXT"
    # The same replication defaults as in KRaft mode.
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["unclean.leader.election.enable"] == "false"
    for kraft_only in ("process.roles", "node.id", "controller.quorum.voters", "controller.listener.names"):
        assert kraft_only not in props
    assert model["quorum_voters"] == "" and model["controller_bootstrap"] == ""
    assert model["bootstrap_servers"] == "10.0.0.11:9092,10.0.0.12:9092,10.0.0.13:9092"


def test_zookeeper_ensemble_may_be_other_hosts_than_the_brokers() -> None:
    hv = {**inventory(3), "zk1": {"ansible_host": "10.0.1.1"}}
    model = zk_model(hv, ["k1", "k2", "k3"], ["zk1"])
    assert model["problems"] == []
    assert model["zookeeper_connect"] == "10.0.1.1:2181"
    assert "zk1" not in model["nodes"]


@pytest.mark.parametrize("version", ["4.0.0", "4.3.1"])
def test_zookeeper_mode_with_kafka_4_is_refused_saying_which_version_to_pin(version: str) -> None:
    names = ["k1", "k2", "k3"]
    found = zk_model(inventory(3), names, names, version=version)["problems"]
    assert any(
        f"kafka_version is {version}: Kafka 4 removed ZooKeeper mode" in p and "Pin kafka_version: 3.9.2" in p
        for p in found
    ), found


def test_zookeeper_mode_without_an_ensemble_is_refused() -> None:
    found = zk_model(inventory(3), ["k1", "k2", "k3"], [])["problems"]
    assert any("the ZooKeeper group is empty or missing" in p for p in found), found


def test_zookeeper_mode_keeps_the_controller_group_on_standby_for_the_migration() -> None:
    controllers = {f"c{i}": {"kafka_node_id": 3000 + i, "ansible_host": f"10.0.0.{20 + i}"} for i in (1, 2, 3)}
    hv = {**inventory(3), **controllers}
    names = ["k1", "k2", "k3"]
    model = kafka_cluster_model(hv, ["c1", "c2", "c3"], names, ZK_SETTINGS, names)
    assert model["problems"] == []
    assert sorted(model["nodes"]) == names and model["standby_controllers"] == ["c1", "c2", "c3"]
    assert model["quorum_voters"] == "" and model["zookeeper_clients"] == names


def test_kraft_mode_with_zookeeper_hosts_is_refused() -> None:
    names = ["k1", "k2", "k3"]
    found = kafka_cluster_model(inventory(3), names, names, SETTINGS, names)["problems"]
    assert any(
        "the ZooKeeper group has hosts (k1, k2, k3) but kafka_mode is kraft" in p
        and "playbooks/migrate_to_kraft.yml" in p
        for p in found
    ), found


def test_duplicate_broker_ids_are_refused_naming_broker_id() -> None:
    hv = inventory(3)
    hv["k3"]["kafka_node_id"] = 1
    found = zk_model(hv, ["k1", "k2", "k3"], ["k1", "k2", "k3"])["problems"]
    assert any(p.startswith("k3: kafka_node_id 1 is already used by k1 (it becomes broker.id)") for p in found), found


def test_broker_id_above_reserved_max_is_refused() -> None:
    hv = inventory(1)
    hv["k1"]["kafka_node_id"] = 1001
    found = zk_model(hv, ["k1"], ["k1"], default_replication_factor=1, min_insync_replicas=1)["problems"]
    assert any(
        "kafka_node_id '1001' is not an integer, 0..1000 (ZooKeeper mode refuses ids above" in p for p in found
    ), found


def test_zookeeper_host_without_address_is_refused_naming_the_host() -> None:
    hv = {**inventory(3), "zk1": {}}
    found = zk_model(hv, ["k1", "k2", "k3"], ["zk1"])["problems"]
    assert any(p.startswith("zk1: no address for ZooKeeper: set zookeeper_address or") for p in found), found


@pytest.mark.parametrize("chroot", ["kafka", "/kafka/", "/", "/a//b", "/a/../b", "/a b"])
def test_malformed_chroot_is_refused(chroot: str) -> None:
    names = ["k1", "k2", "k3"]
    found = zk_model(inventory(3), names, names, zookeeper_chroot=chroot)["problems"]
    assert any(f"kafka_zookeeper_chroot '{chroot}' is not a ZooKeeper path" in p for p in found), found


def test_unknown_mode_is_refused() -> None:
    found = problems(inventory(1), ["k1"], ["k1"], mode="zk", default_replication_factor=1, min_insync_replicas=1)
    assert any("kafka_mode 'zk' is not one of: kraft, zookeeper" in p for p in found), found
