"""The controller quorum (KIP-853): which kind a cluster runs, how new controllers are formatted, and the
preflight refusals of a voter change that editing the inventory alone would make."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_quorum_checks import (
    kafka_directory_id,
    kafka_initial_controllers,
    kafka_quorum_change_problems,
    kafka_quorum_kind,
    kafka_quorum_problems,
    kafka_quorum_witness,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    parse_quorum_status,
    parse_replication,
    parse_voters,
)
from test_kafka_cluster_model import SETTINGS

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
STATIC = "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@10.0.0.11:9093,2@10.0.0.12:9093\n"
DYNAMIC = "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.bootstrap.servers=10.0.0.11:9093\n"
ZOOKEEPER = "broker.id=1\nzookeeper.connect=zk1:2181\n"

# kafka-metadata-quorum describe --status and --replication of Kafka 4.3.1 (a local two-controller quorum,
# node 2 added by add-controller; then node 3 started with --no-initial-controllers, an observer).
STATUS = (
    "ClusterId:              MkU3OEVBNTcwNTJENDM2Qk\n"
    "LeaderId:               1\n"
    "LeaderEpoch:            1\n"
    "HighWatermark:          107\n"
    "MaxFollowerLag:         0\n"
    "MaxFollowerLagTimeMs:   0\n"
    'CurrentVoters:          [{"id": 1, "directoryId": "JEXY6aqzQY-32P5TStzaFg", "endpoints": '
    '["CONTROLLER://127.0.0.1:19091"]}, {"id": 2, "directoryId": "TwLMx4CnxNcVWidTt8FVKQ", "endpoints": '
    '["CONTROLLER://127.0.0.1:19092"]}]\n'
    'CurrentObservers:       [{"id": 3, "directoryId": "oqXioSU_NO8s1iAdfD7MMQ"}]\n'
)
# The tool pads its columns with tabs and spaces, trailing ones included.
REPLICATION = (
    "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
    "1     \tJEXY6aqzQY-32P5TStzaFg\t117         \t0  \t1795662919101     \t1795662919101        \tLeader  \t\n"
    "2     \tTwLMx4CnxNcVWidTt8FVKQ\t117         \t0  \t1795662919040     \t1795662919040        \tFollower\t\n"
    "3     \toqXioSU_NO8s1iAdfD7MMQ\t90          \t27 \t1795662919040     \t1795662919040        \tObserver\t\n"
)


def model(n: int = 3, controllers: int = 3, dedicated: bool = False) -> dict[str, Any]:
    hostvars = {f"k{i}": {"kafka_node_id": i, "ansible_host": f"10.0.0.{10 + i}"} for i in range(1, n + 1)}
    names = list(hostvars)
    brokers = names[controllers:] if dedicated else names
    m = kafka_cluster_model(hostvars, names[:controllers], brokers, {**SETTINGS, "default_replication_factor": 1})
    return m


def disk(meta: bool = True, ran: bool = True, config: str = DYNAMIC) -> dict[str, Any]:
    return {"config": config, "meta": meta, "ran": ran, "dir": "/var/lib/kafka/data"}


def test_directory_ids_are_kafka_uuids_derived_per_cluster_and_node() -> None:
    one = kafka_directory_id(CLUSTER, 1)
    assert len(one) == 22 and not one.startswith("-")
    assert one == kafka_directory_id(CLUSTER, 1), "a resumed first install must format the same list"
    assert one != kafka_directory_id(CLUSTER, 2)
    assert one != kafka_directory_id("AAAAAAAAAAAAAAAAAAAAAQ", 1)
    assert all(not kafka_directory_id(CLUSTER, i).startswith("-") for i in range(500))


def test_initial_controllers_list_every_controller_with_its_endpoint() -> None:
    m = model(5, 3)
    listed = kafka_initial_controllers(m, CLUSTER).split(",")
    assert [item.rsplit(":", 1)[0] for item in listed] == ["1@10.0.0.11:9093", "2@10.0.0.12:9093", "3@10.0.0.13:9093"]
    assert listed[0].rsplit(":", 1)[1] == kafka_directory_id(CLUSTER, 1)


@pytest.mark.parametrize(
    "configs,requested,phase,kind",
    [
        ([None, ""], "dynamic", "", "dynamic"),
        ([None], "static", "", "static"),
        ([STATIC, None], "dynamic", "", "static"),
        ([ZOOKEEPER, DYNAMIC], "static", "", "dynamic"),
        ([ZOOKEEPER], "dynamic", "migration", "static"),
        ([STATIC, DYNAMIC, STATIC], "static", "", "dynamic"),
    ],
    ids=[
        "new-cluster",
        "new-cluster-static-asked",
        "static-kept",
        "dynamic-kept",
        "migration-is-static",
        "a-move-to-dynamic-killed-halfway-is-finished",
    ],
)
def test_a_cluster_keeps_the_quorum_kind_it_was_formatted_with(
    configs: list[str | None], requested: str, phase: str, kind: str
) -> None:
    assert kafka_quorum_kind(configs, requested, phase) == kind


def test_a_new_cluster_passes_and_a_running_one_that_matches_passes() -> None:
    m = model()
    assert kafka_quorum_problems(m, {h: disk(False, False, "") for h in m["nodes"]}, "dynamic", None) == []
    assert kafka_quorum_problems(m, {h: disk() for h in m["nodes"]}, "dynamic", [1, 2, 3]) == []


def test_the_quorum_is_asked_through_a_controller_that_has_run() -> None:
    m = model(4, 3, dedicated=True)
    assert kafka_quorum_witness(m, {h: disk(False, False, "") for h in m["nodes"]}) == ""
    # A broker-only node that has run is not asked: the quorum is the controllers'.
    assert kafka_quorum_witness(m, {"k4": disk(), "k1": disk(False, False), "k2": disk()}) == "k2"


def test_a_first_install_killed_between_formats_is_finished() -> None:
    m = model()
    disks = {"k1": disk(True, False), "k2": disk(False, False, ""), "k3": disk(False, False, "")}
    assert kafka_quorum_problems(m, disks, "dynamic", None) == []


def test_a_controller_with_an_empty_metadata_dir_in_a_cluster_that_ran_is_refused() -> None:
    m = model()
    disks = {"k1": disk(), "k2": disk(), "k3": disk(False, False)}
    (problem,) = kafka_quorum_problems(m, disks, "dynamic", [1, 2, 3])
    assert problem.startswith("k3: is a KRaft controller (node 3) but its metadata dir /var/lib/kafka/data holds no")
    assert "remove_controller.yml -e kafka_remove_controller=k3" in problem
    assert "add_controller.yml" in problem
    # add_controller.yml may format it (with --no-initial-controllers: a new directory id).
    assert kafka_quorum_problems(m, disks, "dynamic", [1, 2], {"add": "k3"}) == []
    static3 = STATIC.replace("2@10.0.0.12:9093", "2@10.0.0.12:9093,3@10.0.0.13:9093")
    (static,) = kafka_quorum_problems(m, {**disks, "k1": disk(config=static3)}, "static", None)
    assert "A static quorum" in static
    # A ZooKeeper -> KRaft migration formats its controllers afresh (the brokers ran KRaft before a rollback).
    assert kafka_quorum_problems({**m, "migration_phase": "controllers"}, disks, "static", None) == []


def test_a_broker_only_node_with_an_empty_log_dir_is_formatted_again() -> None:
    m = model(4, 3)
    disks = {"k1": disk(), "k2": disk(), "k3": disk(), "k4": disk(False, False, "")}
    assert kafka_quorum_problems(m, disks, "dynamic", [1, 2, 3]) == []


def test_a_voter_added_or_removed_by_editing_the_inventory_is_refused() -> None:
    grown = model(4, 4)
    disks = {h: disk() for h in grown["nodes"]}
    (added,) = kafka_quorum_problems(grown, disks, "dynamic", [1, 2, 3])
    assert added.startswith(
        "k4: is in the kafka_controller group (node 4) but not a voter of the running quorum [1, 2, 3]"
    )
    assert "add_controller.yml -e kafka_add_controller=k4" in added
    assert kafka_quorum_problems(grown, disks, "dynamic", [1, 2, 3], {"add": "k4"}) == []

    shrunk = model(3, 2)
    (removed,) = kafka_quorum_problems(shrunk, {h: disk() for h in shrunk["nodes"]}, "dynamic", [1, 2, 3])
    assert removed.startswith("node 3 is a voter of the running quorum [1, 2, 3] but no host of the kafka_controller")
    assert "remove_controller.yml" in removed
    # While remove_controller.yml runs, the host is still in the group and the voter may go.
    assert (
        kafka_quorum_problems(model(), {h: disk() for h in model()["nodes"]}, "dynamic", [1, 2, 3], {"remove": "k3"})
        == []
    )


def test_a_static_quorum_refuses_a_new_voter_list() -> None:
    m = model(3, 3)
    disks = {h: disk(config=STATIC) for h in m["nodes"]}
    (problem,) = kafka_quorum_problems(m, disks, "static", None)
    assert problem.startswith("k1: runs the static controller quorum [1, 2] (controller.quorum.voters) but")
    assert "[1, 2, 3]" in problem


def test_voter_changes_need_a_dynamic_quorum_that_answers_and_never_remove_the_last_voter() -> None:
    m = model()
    assert "static controller quorum" in kafka_quorum_change_problems(m, "static", [1, 2, 3], {"add": "k3"})[0]
    assert (
        "not a host of the kafka_controller group" in kafka_quorum_change_problems(m, "dynamic", [1], {"add": "k9"})[0]
    )
    assert "did not answer" in kafka_quorum_change_problems(m, "dynamic", None, {"add": "k3"})[0]
    one = model(3, 1, dedicated=True)
    assert "only voter" in kafka_quorum_change_problems(one, "dynamic", [1], {"remove": "k1"})[0]
    assert "a broker too (combined mode)" in kafka_quorum_change_problems(m, "dynamic", [1, 2, 3], {"remove": "k3"})[0]
    dedicated = model(5, 3, dedicated=True)
    assert kafka_quorum_change_problems(dedicated, "dynamic", [1, 2, 3], {"remove": "k3"}) == []


def test_the_quorum_tools_output_is_read() -> None:
    status = parse_quorum_status(STATUS)
    assert status["leader_id"] == 1 and status["epoch"] == 1
    assert status["voters"] == [
        {"id": 1, "directory_id": "JEXY6aqzQY-32P5TStzaFg"},
        {"id": 2, "directory_id": "TwLMx4CnxNcVWidTt8FVKQ"},
    ]
    assert status["observers"] == [{"id": 3, "directory_id": "oqXioSU_NO8s1iAdfD7MMQ"}]
    rows = parse_replication(REPLICATION)
    assert [(r.node_id, r.lag, r.status) for r in rows] == [(1, 0, "Leader"), (2, 0, "Follower"), (3, 27, "Observer")]
    assert [v.node_id for v in parse_voters(REPLICATION)] == [1, 2]
