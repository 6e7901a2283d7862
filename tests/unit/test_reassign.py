"""Partition reassignment plans (rebalance after a scale-out, drain before a decommission) and the preflight
refusals of a broker leaving the inventory, against the cluster's own tool output recorded from Kafka 4.3.1."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_broker_checks import (
    kafka_bootstrap_without,
    kafka_decommission_problems,
    kafka_replicas_witness,
    kafka_stranded_replicas,
    kafka_unknown_brokers,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import Partition, parse_racks, parse_topics
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_reassign_plan import (
    PlanError,
    bytes_to_copy,
    counts,
    current_assignment,
    held_by,
    listed_reassignments,
    moved_replicas,
    parse_log_dirs,
    plan,
    plan_json,
    verify_state,
)


def _cluster(brokers: int = 3) -> list[Partition]:
    """Round-robin placement as Kafka makes it on 1..brokers: a 6-partition RF 3 topic, 12 consumer-offsets
    partitions, an RF 1 topic of 4 partitions and a 1-partition RF 3 topic."""
    ids = list(range(1, brokers + 1))
    parts = []
    for topic, count, rf in (("lifecycle", 6, 3), ("__consumer_offsets", 12, 3), ("topic_1", 4, 1), ("one", 1, 3)):
        for i in range(count):
            replicas = tuple(ids[(i + k) % len(ids)] for k in range(rf))
            parts.append(Partition(topic, i, replicas[0], replicas, replicas, min(2, rf)))
    return parts


def _apply(partitions: list[Partition], changes: dict[tuple[str, int], list[int]]) -> list[Partition]:
    """The cluster after a plan ran and the preferred leaders were elected."""
    new = {**current_assignment(partitions), **changes}
    return [
        Partition(
            p.topic,
            p.partition,
            new[(p.topic, p.partition)][0],
            tuple(new[(p.topic, p.partition)]),
            tuple(new[(p.topic, p.partition)]),
            p.min_isr,
        )
        for p in partitions
    ]


def _spread(partitions: list[Partition], topic: str) -> tuple[Counter[int], Counter[int]]:
    return (
        Counter(b for p in partitions if p.topic == topic for b in p.replicas),
        Counter(p.leader for p in partitions if p.topic == topic),
    )


def test_a_new_broker_gets_its_share_of_replicas_and_leaders_with_the_fewest_moves() -> None:
    before = _cluster(3)
    changes = plan(before, [1, 2, 3, 4])
    after = _apply(before, changes)
    for topic in ("lifecycle", "__consumer_offsets", "topic_1"):
        replicas, leaders = _spread(after, topic)
        assert max(replicas.values()) - min(replicas[b] for b in (1, 2, 3, 4)) <= 1, (topic, replicas)
        assert max(leaders.values()) - min(leaders[b] for b in (1, 2, 3, 4)) <= 1, (topic, leaders)
    # Only what the new broker takes is copied: its floor share of each topic.
    assert moved_replicas(before, changes) == 18 // 4 + 36 // 4 + 4 // 4
    assert counts(after, [1, 2, 3, 4])[4]["leaders"] > 0
    # One partition, three replicas over four brokers is already even: never touched.
    assert not [k for k in changes if k[0] == "one"]
    # A balanced cluster plans nothing: a second run changes nothing.
    assert plan(after, [1, 2, 3, 4]) == {}


def test_a_drain_moves_every_replica_off_the_broker_and_keeps_the_rest_even() -> None:
    grown = _apply(_cluster(3), plan(_cluster(3), [1, 2, 3, 4]))
    changes = plan(grown, [1, 2, 3, 4], drain=4)
    after = _apply(grown, changes)
    assert held_by(after, 4) == []
    assert moved_replicas(grown, changes) == len(held_by(grown, 4))
    for topic in ("lifecycle", "__consumer_offsets"):
        replicas, leaders = _spread(after, topic)
        assert set(replicas) == {1, 2, 3} and max(replicas.values()) - min(replicas.values()) <= 1
        assert max(leaders.values()) - min(leaders.values()) <= 1
    assert plan(after, [1, 2, 3], drain=None) == {}


def test_a_drain_that_would_leave_fewer_brokers_than_replicas_is_refused_naming_the_topics() -> None:
    with pytest.raises(PlanError, match=r"topic\(s\) __consumer_offsets, lifecycle, one .* 2 broker\(s\) left"):
        plan(_cluster(3), [1, 2, 3], drain=3)


def _racks_of(partitions: list[Partition], racks: dict[int, str | None]) -> dict[str, int]:
    return {p.name: len({racks.get(b) for b in p.replicas}) for p in partitions}


def test_with_racks_no_move_lowers_the_racks_a_partition_spans() -> None:
    # Six brokers in three racks (a: 1, 4; b: 2, 5; c: 3, 6), the cluster built on 1-3 (one replica per rack).
    racks: dict[int, str | None] = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    before = _cluster(3)
    changes = plan(before, [1, 2, 3, 4, 5, 6], racks=racks)
    after = _apply(before, changes)
    assert changes, "the new brokers get replicas"
    assert _racks_of(after, racks) == _racks_of(before, racks)
    # Rack-blind, the same growth puts two replicas of a partition in one rack.
    blind = _apply(before, plan(before, [1, 2, 3, 4, 5, 6]))
    assert min(_racks_of(blind, racks).values()) < 3 <= max(_racks_of(blind, racks).values())
    # Draining broker 6 (rack c, which keeps broker 3): its replicas go where the partition keeps three racks.
    drained = _apply(after, plan(after, [1, 2, 3, 4, 5, 6], drain=6, racks=racks))
    assert held_by(drained, 6) == []
    assert _racks_of(drained, racks) == _racks_of(before, racks)
    # Brokers that report no rack (rack: null) are a cluster without racks: the rack-blind plan.
    assert plan(before, [1, 2, 3, 4], racks=dict.fromkeys(range(1, 5))) == plan(before, [1, 2, 3, 4])


def test_replicas_on_brokers_outside_the_list_stay_where_they_are() -> None:
    stranded = [Partition("t", 0, 9, (9, 1, 2), (9, 1, 2), 2)]
    assert plan(stranded, [1, 2, 3]) == {}


def test_the_plan_file_and_bytes_to_copy() -> None:
    before = _cluster(3)
    changes = plan(before, [1, 2, 3, 4])
    assert '"version": 1' in plan_json(changes)
    sizes = {b: {p.name: 1000 for p in before} for b in (1, 2, 3)}
    assert bytes_to_copy(before, changes, sizes) == 1000 * moved_replicas(before, changes)


# kafka-topics --describe during a reassignment, kafka-log-dirs --describe, kafka-reassign-partitions --verify and
# --list, recorded from Kafka 4.3.1 (a local controller and brokers 1-4).
DESCRIBE = (
    "Topic: lifecycle\tTopicId: 1ZJ5HSPmRVmcoNyqbVSUxg\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: "
    "min.insync.replicas=2\n"
    "\tTopic: lifecycle\tPartition: 0\tLeader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3\tAdding Replicas: 4\tRemoving "
    "Replicas: 3\tElr: \tLastKnownElr: \n"
    "\tTopic: lifecycle\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: \n"
)
LOG_DIRS = (
    "Querying brokers for log directories information\n"
    "Received log directory information from brokers 1,2\n"
    '{"brokers":[{"broker":1,"logDirs":[{"error":null,"logDir":"/tmp/lk/b1","partitions":[{"partition":"lifecycle-0",'
    '"size":7001124,"offsetLag":0,"isFuture":false},{"partition":"lifecycle-1","size":20,"offsetLag":0,'
    '"isFuture":false}]}]},{"broker":2,"logDirs":[{"error":null,"logDir":"/tmp/lk/b2","partitions":[]}]}],'
    '"version":1}\n'
)
VERIFY = (
    "Status of partition reassignment:\n"
    "Reassignment of partition lifecycle-0 is still in progress.\n"
    "Reassignment of partition lifecycle-1 is completed.\n"
)
VERIFY_DONE = (
    "Status of partition reassignment:\n"
    "Reassignment of partition lifecycle-0 is completed.\n\n"
    "Clearing broker-level throttles on brokers 1,2,3,4\n"
    "Clearing topic-level throttles on topic lifecycle\n"
)
LIST = "Current partition reassignments:\nlifecycle-0: replicas: 1,2,3,4. adding: 4. removing: 3.\n"


API_VERSIONS = (
    "10.0.0.1:9092 (id: 1 rack: a isFenced: false) -> (\n\tProduce(0): 0 to 13 [usable: 13],\n)\n"
    "10.0.0.2:9092 (id: 2 rack: null isFenced: false) -> (\n)\n"
    "10.0.0.3:9092 (id: 3 rack: rack-c) -> (\n)\n"
)


def test_the_tools_output_is_read() -> None:
    assert parse_racks(API_VERSIONS) == {1: "a", 2: None, 3: "rack-c"}
    parts = parse_topics(DESCRIBE, 1)
    assert parts[0].replicas == (1, 2, 3, 4) and parts[0].isr == (1, 2, 3)
    assert parse_log_dirs(LOG_DIRS) == {1: {"lifecycle-0": 7001124, "lifecycle-1": 20}, 2: {}}
    assert verify_state(VERIFY) == {"in_progress": ["lifecycle-0"], "failed": []}
    assert verify_state(VERIFY_DONE) == {"in_progress": [], "failed": []}
    assert listed_reassignments(LIST) == ["lifecycle-0"]
    assert listed_reassignments("No partition reassignments found.\n") == []


def _model(*hosts: tuple[str, int, list[str]]) -> dict[str, Any]:
    return {
        "inter_broker_listener_name": "INTERNAL",
        "nodes": {
            h: {
                "node_id": n,
                "roles": roles,
                "listeners": [{"name": "INTERNAL", "advertised_host": "10.0.0.1", "advertised_port": 9090 + n}],
            }
            for h, n, roles in hosts
        },
    }


MODEL = _model(
    ("c", 100, ["controller"]), ("b1", 1, ["broker"]), ("b2", 2, ["broker"]), ("x3", 3, ["broker", "controller"])
)


def test_a_broker_that_left_the_inventory_with_replicas_is_refused_naming_them() -> None:
    problems = kafka_stranded_replicas(MODEL, {"1": ["a-0"], "4": ["lifecycle-0", "lifecycle-2"], "5": []})
    assert len(problems) == 1
    assert problems[0].startswith("node 4 holds replicas of 2 partition(s) (lifecycle-0, lifecycle-2)")
    assert "playbooks/decommission.yml -e kafka_decommission=" in problems[0]
    assert kafka_stranded_replicas(MODEL, None) == []
    assert kafka_unknown_brokers(MODEL, [1, 2, 3, 5]) == [5]


def test_decommission_takes_broker_only_nodes_of_the_inventory() -> None:
    assert kafka_decommission_problems(MODEL, "b2") == []
    assert "not a host of the kafka_broker group" in kafka_decommission_problems(MODEL, "c")[0]
    assert "not a host of the kafka_broker group" in kafka_decommission_problems(MODEL, "nope")[0]
    assert "controller too" in kafka_decommission_problems(MODEL, "x3")[0]
    assert "only broker" in kafka_decommission_problems(_model(("b1", 1, ["broker"])), "b1")[0]
    assert kafka_bootstrap_without(MODEL, "b2") == "10.0.0.1:9091,10.0.0.1:9093"


def test_replicas_are_asked_of_the_quorum_witness_or_else_a_broker_that_has_run() -> None:
    disks = {"c": {"meta": True, "ran": True}, "b1": {"meta": False}, "b2": {"meta": True}}
    assert kafka_replicas_witness(MODEL, disks, "c") == "c"
    # ZooKeeper mode (no quorum witness): a broker whose log dir holds meta.properties, never a controller.
    assert kafka_replicas_witness(MODEL, disks) == "b2"
    assert kafka_replicas_witness(MODEL, {"c": {"meta": True}, "b1": {"meta": False}}) == ""
