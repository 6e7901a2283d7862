"""Restarts that fail closed: the pending marker, the gates' reading of Kafka's tools, the order of nodes,
and which properties are applied at run time. Pure logic, no cluster (the molecule scenarios run it live)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_restarts import (
    kafka_dynamic_properties,
    kafka_features_to_raise,
    kafka_finalized_features,
    kafka_release_lowers_metadata,
    kafka_restart_order,
    metadata_version_key,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    Voter,
    broker_problems,
    lost_partitions,
    parse_brokers,
    parse_topics,
    parse_voters,
    parse_zookeeper_controller,
    parse_zookeeper_ids,
    partition_problems,
    quorum_problems,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.restart_state import (
    REQUESTED,
    differences,
    file_digest,
    load_json,
    pending_reasons,
)
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_dynamic_configs import parse_describe, plan
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_gate import judge as gate_judge
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_gate import look as gate_look
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_gate import may_stop as gate_may_stop
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_gate import wait_ports

TOPICS = (
    "Topic: load\tTopicId: 8Yq2\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,segment.bytes=1073741824\n"
    "\tTopic: load\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: \n"
    "\tTopic: load\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: \tLastKnownElr: \n"
    "Topic: single\tTopicId: Zq1\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
    "\tTopic: single\tPartition: 0\tLeader: 3\tReplicas: 3\tIsr: 3\n"
)


def test_topics_parse_with_override_and_default_min_isr() -> None:
    parts = {p.name: p for p in parse_topics(TOPICS, default_min_isr=1)}
    assert parts["load-0"].isr == (1, 2, 3) and parts["load-0"].min_isr == 2
    assert parts["load-1"].replicas == (2, 3, 1) and parts["load-1"].isr == (2, 3)
    assert parts["single-0"].min_isr == 1 and parts["single-0"].leader == 3


def test_partition_gate_names_the_partition_a_stop_would_break() -> None:
    healthy = TOPICS.replace("Isr: 2,3\t", "Isr: 2,3,1\t")
    parts = parse_topics(healthy, default_min_isr=1)
    assert partition_problems(parts, stopping=None) == []
    assert partition_problems(parts, stopping=1) == []
    problems = partition_problems(parts, stopping=3)
    assert len(problems) == 1
    assert "stopping node 3 would take partition single-0" in problems[0]
    assert "make it unavailable" in problems[0]


def test_partition_gate_refuses_a_partition_at_min_isr() -> None:
    parts = parse_topics(TOPICS, default_min_isr=1)
    problems = partition_problems(parts, stopping=2)
    assert any("load-1" in p and "under-replicated" in p for p in problems)
    at_min = parse_topics(TOPICS.replace("Replicas: 2,3,1", "Replicas: 2,3"), default_min_isr=1)
    assert any("stopping node 2 would take partition load-1" in p for p in partition_problems(at_min, stopping=2))


def test_offline_and_under_min_isr_partitions_are_problems() -> None:
    text = TOPICS.replace("Leader: 3\tReplicas: 3", "Leader: none\tReplicas: 3").replace("Isr: 2,3\t", "Isr: 2\t")
    problems = partition_problems(parse_topics(text, default_min_isr=1), stopping=None)
    assert any("single-0" in p and "offline" in p for p in problems)
    assert any("load-1" in p and "under min ISR" in p for p in problems)


QUORUM = """NodeId  DirectoryId             LogEndOffset  Lag  LastFetchTimestamp  LastCaughtUpTimestamp  Status
1       dR2bQZ1xS9aZ8mN3Qw1eRg  4512          0    1732300000000       1732300000000          Leader
2       gH5tYq8wR1vC6bN2Lk9pOa  4512          0    1732299999800       1732299999800          Follower
3       pL0kJh7gF6dS5aQ4wE3rTy  4100          412  1732299990000       1732299980000          Follower
"""


def test_voters_parse_and_the_lagging_controller_may_not_be_the_one_missing() -> None:
    voters = parse_voters(QUORUM)
    assert [(v.node_id, v.lag, v.status) for v in voters] == [
        (1, 0, "Leader"),
        (2, 0, "Follower"),
        (3, 412, "Follower"),
    ]
    # Node 3 is behind: it is not caught up itself.
    assert any(
        "controller 3 is 412 records behind" in p for p in quorum_problems(voters, 3, stopping=True, lag_max=100)
    )
    # Node 2 may not stop: only node 1 would stay caught up, a majority of 3 is 2.
    assert any(
        "would leave 1 caught-up voters of 3" in p for p in quorum_problems(voters, 2, stopping=True, lag_max=100)
    )
    # Once node 3 caught up, node 2 may stop.
    caught_up = [Voter(1, 0, "Leader"), Voter(2, 0, "Follower"), Voter(3, 3, "Follower")]
    assert quorum_problems(caught_up, 2, stopping=True, lag_max=100) == []


def test_the_only_voter_may_stop_but_only_when_caught_up_and_led() -> None:
    # One controller: no restart of it can keep a majority, so the gate does not ask for one.
    assert quorum_problems([Voter(100, 0, "Leader")], 100, stopping=True, lag_max=100) == []
    # Two voters still need both: stopping either leaves 1 of 2, no majority.
    two = [Voter(1, 0, "Leader"), Voter(2, 0, "Follower")]
    assert any("would leave 1 caught-up voters of 2" in p for p in quorum_problems(two, 2, stopping=True, lag_max=100))
    # The one voter must still be the leader: no leader is a problem before the stop too.
    assert "no leader" in quorum_problems([Voter(100, 0, "Follower")], 100, stopping=True, lag_max=100)[0]


def test_a_quorum_without_leader_or_voters_is_a_problem() -> None:
    assert quorum_problems([], 1, stopping=False, lag_max=100) == ["the metadata quorum reports no voters"]
    assert "no leader" in quorum_problems([Voter(1, 0, "Follower")], 1, stopping=False, lag_max=100)[0]


def test_brokers_registered_and_fenced() -> None:
    text = (
        "10.0.0.1:9092 (id: 1 rack: null isFenced: false) -> (\n\tProduce(0): 0 to 11 [usable: 11],\n)\n"
        "10.0.0.2:9092 (id: 2 rack: r2 isFenced: true) -> (\n)\n"
    )
    assert parse_brokers(text) == {1: False, 2: True}
    assert broker_problems(parse_brokers(text), [1, 2, 3]) == ["broker(s) 3 not registered", "broker(s) 2 fenced"]
    assert parse_brokers("10.0.0.1:9092 (id: 1 rack: null) -> (\n") == {1: False}


def test_zookeeper_outputs() -> None:
    assert parse_zookeeper_ids("Connecting to zk1:2181\n\nWATCHER::\n[1, 2, 3]\n") == [1, 2, 3]
    assert (
        parse_zookeeper_controller('{"version":2,"brokerid":2,"timestamp":"1732300000000","kraftControllerEpoch":-1}')
        == 2
    )
    assert broker_problems([1, 3], [1, 2, 3]) == ["broker(s) 2 not registered"]


MODEL: dict[str, Any] = {
    "nodes": {
        "c1": {"node_id": 1, "roles": ["controller"]},
        "c2": {"node_id": 2, "roles": ["controller"]},
        "b1": {"node_id": 11, "roles": ["broker"]},
        "k3": {"node_id": 3, "roles": ["broker", "controller"]},
        "b2": {"node_id": 12, "roles": ["broker"]},
    }
}


@pytest.mark.parametrize(
    "leader,controllers_first,expected",
    [
        (1, False, ["b1", "b2", "c2", "k3", "c1"]),
        (3, False, ["b1", "b2", "c1", "c2", "k3"]),
        (2, True, ["c1", "k3", "b1", "b2", "c2"]),
        (None, True, ["c1", "c2", "k3", "b1", "b2"]),
    ],
)
def test_restart_order_puts_the_active_controller_last(
    leader: int | None, controllers_first: bool, expected: list[str]
) -> None:
    assert (
        kafka_restart_order(["c1", "c2", "b1", "k3", "b2", "not-kafka"], MODEL, leader, controllers_first) == expected
    )


def test_only_cluster_wide_properties_are_applied_at_run_time() -> None:
    modes = {"log.retention.ms": "cluster-wide", "listeners": "per-broker", "log.retention.hours": "read-only"}
    props = {"log.retention.ms": 1000, "listeners": "A://:1", "log.retention.hours": 72, "unknown": "x", "x": True}
    assert kafka_dynamic_properties(props, modes) == {"log.retention.ms": "1000"}
    assert kafka_dynamic_properties(props, {}) == {}


DESCRIBE = (
    "All configs for broker 1 are:\n"
    "  log.retention.ms=60000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=60000, "
    "STATIC_BROKER_CONFIG:log.retention.ms=1000}\n"
    "  num.io.threads=8 sensitive=false synonyms={DEFAULT_CONFIG:num.io.threads=8}\n"
    "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
    "DEFAULT_CONFIG:log.cleaner.threads=1}\n"
    "  ssl.keystore.password=null sensitive=true synonyms={}\n"
)


def test_dynamic_configs_plan_sets_differences_and_deletes_only_what_it_set() -> None:
    effective = parse_describe(DESCRIBE)
    assert effective["log.retention.ms"] == {"value": "60000", "sensitive": False, "per_broker": True}
    assert effective["num.io.threads"]["per_broker"] is False
    declared = {"log.retention.ms": "1000", "num.io.threads": "8", "ssl.keystore.password": "x"}
    to_set, to_delete, to_default = plan(declared, effective, managed=["log.cleaner.threads", "num.io.threads"])
    assert to_set == {"log.retention.ms": "1000"}
    assert to_delete == ["log.cleaner.threads"]
    assert to_default == {}
    # Nothing declared differs and nothing managed is gone: no change (the idempotent run).
    assert plan({"num.io.threads": "8"}, effective, managed=["num.io.threads"]) == ({}, [], {})
    # A hand-made override this module never set is left alone.
    assert plan({}, effective, managed=[]) == ({}, [], {})


# What a broker of a cluster with a dedicated controller that lacked min.insync.replicas showed (Kafka 4.3.1,
# eligible leader replicas on): the cluster-level value, seeded from the controller's default 1, overrides the
# broker's static 2.
DESCRIBE_ELR = (
    "All configs for broker 1 are:\n"
    "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, "
    "STATIC_BROKER_CONFIG:min.insync.replicas=2, DEFAULT_CONFIG:min.insync.replicas=1}\n"
    "  log.retention.ms=1000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.ms=1000}\n"
)


def test_min_insync_replicas_is_set_as_the_cluster_default_never_per_broker() -> None:
    effective = parse_describe(DESCRIBE_ELR)
    declared = {"min.insync.replicas": "2", "log.retention.ms": "1000"}
    cluster_level = ["min.insync.replicas"]
    assert plan(declared, effective, managed=[], cluster_level=cluster_level) == ({}, [], {"min.insync.replicas": "2"})
    # Once the cluster default is 2, nothing to do.
    settled = parse_describe(DESCRIBE_ELR.replace("min.insync.replicas=1 sensitive", "min.insync.replicas=2 sensitive"))
    assert plan(declared, settled, managed=["min.insync.replicas"], cluster_level=cluster_level) == ({}, [], {})
    # A per-broker override this module set in an earlier version would shadow the cluster default: deleted,
    # and the cluster default set to the declared value so that nothing changes for the broker.
    shadowed = parse_describe(
        "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:min.insync.replicas=2, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}\n"
    )
    assert plan({"min.insync.replicas": "2"}, shadowed, ["min.insync.replicas"], cluster_level) == (
        {},
        ["min.insync.replicas"],
        {"min.insync.replicas": "2"},
    )


def test_restart_marker_fingerprints_ignore_run_time_keys_and_order() -> None:
    a = b"# comment\nbroker.id=1\nlog.retention.ms=10\n"
    b = b"log.retention.ms=99\nbroker.id=1\n"
    assert file_digest("s", a, ["log.retention.ms"]) == file_digest("s", b, ["log.retention.ms"])
    assert file_digest("s", a, ["log.retention.ms"]) != file_digest(
        "s", b.replace(b"id=1", b"id=2"), ["log.retention.ms"]
    )
    assert file_digest("s", a) != file_digest("s", b)


def test_pending_reasons() -> None:
    now = {"file:/etc/kafka/server.properties": "sha256:1", "value:release": "sha256:r"}
    assert pending_reasons(now, now, None) == []
    assert pending_reasons(None, now, None) == ["never started by this project (no applied fingerprint)"]
    changed = {**now, "value:release": "sha256:r2"}
    assert differences(now, changed) == ["value:release"]
    # A killed run left a pending file; the files went back to what runs: nothing to do.
    assert pending_reasons(now, now, {"reasons": ["file:/etc/kafka/server.properties"]}) == []
    # An operator's request stays until the node restarted.
    assert pending_reasons(now, now, {"reasons": [REQUESTED]}) == [REQUESTED]
    assert load_json('{"a": 1') is None and load_json(None) is None


def test_unprotected_topics_may_go_offline_and_short_topics_are_judged_on_their_replicas() -> None:
    # topic_1 of the classic lab: RF 1 under brokers' min.insync.replicas 2; healthy when its replica is in sync.
    text = "\tTopic: topic_1\tPartition: 0\tLeader: 3\tReplicas: 3\tIsr: 3\n"
    parts = parse_topics(text, default_min_isr=2)
    assert partition_problems(parts, stopping=None) == []
    assert "stopping node 3 would take partition topic_1-0" in partition_problems(parts, stopping=3)[0]
    assert partition_problems(parts, stopping=3, unprotected=["topic_1"]) == []
    # Unprotected does not hide a partition that is offline now.
    offline = parse_topics(text.replace("Leader: 3", "Leader: none").replace("Isr: 3", "Isr: "), default_min_isr=2)
    assert "offline" in partition_problems(offline, stopping=None, unprotected=["topic_1"])[0]


DESCRIBE_FEATURES_43 = (
    "Feature: eligible.leader.replicas.version        SupportedMinVersion: 0                "
    "SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: 12\n"
    "Feature: kraft.version                           SupportedMinVersion: 0                "
    "SupportedMaxVersion: 1                FinalizedVersionLevel: 0                Epoch: 12\n"
    "Feature: metadata.version                        SupportedMinVersion: 3.3-IV3          "
    "SupportedMaxVersion: 4.3-IV0          FinalizedVersionLevel: 4.2-IV1          Epoch: 12\n"
    "Feature: share.version                           SupportedMinVersion: 0                "
    "SupportedMaxVersion: 1                FinalizedVersionLevel: -                Epoch: 12\n"
)
# 4.2.1's format: tab-separated.
DESCRIBE_FEATURES_42 = (
    "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: 7\n"
    "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.2-IV1\t"
    "FinalizedVersionLevel: 4.2-IV1\tEpoch: 7\n"
)
TARGET_431 = {
    "eligible.leader.replicas.version": 1,
    "group.version": 1,
    "kraft.version": 1,
    "metadata.version": 30,
    "metadata.version.name": "4.3-IV0",
    "share.version": 1,
    "streams.version": 1,
    "transaction.version": 2,
}


def test_features_to_raise_name_each_level_and_never_kraft_version() -> None:
    finalized = kafka_finalized_features(DESCRIBE_FEATURES_43)
    assert finalized == {
        "eligible.leader.replicas.version": 1,
        "kraft.version": 0,
        "metadata.version": "4.2-IV1",
        "share.version": 0,
    }
    assert kafka_finalized_features(DESCRIBE_FEATURES_42) == {"group.version": 1, "metadata.version": "4.2-IV1"}
    assert kafka_features_to_raise(finalized, TARGET_431) == {
        "group.version": 1,
        "metadata.version": 30,
        "share.version": 1,
        "streams.version": 1,
        "transaction.version": 2,
    }
    # Once raised, nothing is left to do (the second run changes nothing).
    done = {**finalized, "metadata.version": "4.3-IV0", "group.version": 1, "share.version": 1}
    done |= {"streams.version": 1, "transaction.version": 2}
    assert kafka_features_to_raise(done, TARGET_431) == {}


def test_a_release_older_than_the_finalized_metadata_version_is_refused() -> None:
    assert kafka_release_lowers_metadata({"metadata.version": "4.3-IV0"}, {"metadata.version.name": "4.2-IV1"})
    assert not kafka_release_lowers_metadata({"metadata.version": "4.2-IV1"}, {"metadata.version.name": "4.2-IV1"})
    assert not kafka_release_lowers_metadata({"metadata.version": "4.2-IV1"}, TARGET_431)
    assert metadata_version_key("3.3-IV3") < metadata_version_key("4.0-IV0") < metadata_version_key("4.0-IV3")


def test_a_gate_look_runs_every_tool_and_names_the_one_that_failed(tmp_path: Path) -> None:
    healthy = (
        "Topic: load\tTopicId: 8Yq2\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"
        "\tTopic: load\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
    )
    tools = {
        "kafka-topics": f"cat <<'END'\n{healthy}END\n",
        "kafka-metadata-quorum": f"cat <<'END'\n{QUORUM}END\n",
        "kafka-broker-api-versions": "echo 'Connection to node -1 could not be established' >&2; exit 1\n",
    }
    for name, body in tools.items():
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\nsleep 0.2\n{body}")
        script.chmod(0o755)
    params = {
        "phase": "after",
        "node_id": 2,
        "roles": ["broker", "controller"],
        "mode": "kraft",
        "bin_dir": str(tmp_path),
        "bootstrap_servers": "k1:9092",
        "bootstrap_controller": "k1:9093",
        "zookeeper_connect": "",
        "brokers": [1, 2, 3],
        "default_min_insync_replicas": 2,
        "controller_lag_max": 1000,
        "unprotected_topics": [],
        "formatted": False,
    }
    spans: list[tuple[float, float]] = []

    def run_command(argv: list[str]) -> tuple[int, str, str]:
        """AnsibleModule.run_command's contract: (rc, stdout, stderr) as text."""
        start = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        spans.append((start, time.monotonic()))
        return done.returncode, done.stdout, done.stderr

    health = gate_look(SimpleNamespace(params=params, run_command=run_command))
    assert health.leader_id == 1
    assert health.problems == [
        "kafka-broker-api-versions --bootstrap-server k1:9092 failed (exit 1): "
        "Connection to node -1 could not be established"
    ]
    assert health.lost == []
    # The look's tools ran side by side (each a JVM on a node): every one started before any finished.
    assert len(spans) == len(tools)
    assert max(start for start, _end in spans) < min(end for _start, end in spans)


def test_the_gate_after_a_start_answers_the_next_nodes_gate_before_on_the_same_look() -> None:
    """A rolling restart's gate after node 1's start also judges the next node's stop, on the same tools' answers
    and by the gate before's own rules: node 2 may stop; node 3 may not (it alone holds single-0); with node 3
    trailing the quorum leader by more than the lag allowed, node 2 may not either; a look with a tool that did not
    answer lets no one stop."""
    healthy = TOPICS.replace("Isr: 2,3\t", "Isr: 2,3,1\t")
    brokers = "".join(f"10.0.0.{i}:9092 (id: {i} rack: null isFenced: false) -> (\n)\n" for i in (1, 2, 3))
    params: dict[str, Any] = {
        "mode": "kraft",
        "bootstrap_servers": "k1:9092",
        "bootstrap_controller": "k1:9093",
        "zookeeper_connect": "",
        "brokers": [1, 2, 3],
        "default_min_insync_replicas": 1,
        "controller_lag_max": 100,
        "unprotected_topics": [],
        "formatted": False,
        "next_nodes": {"2": ["broker", "controller"], "3": ["broker", "controller"]},
    }
    got: dict[str, tuple[str | None, str]] = {
        "topics": (healthy, ""),
        "quorum": (QUORUM.replace("4100          412", "4510          2"), ""),
        "brokers": (brokers, ""),
    }
    both = ["broker", "controller"]
    assert gate_judge(params, got, "after", 1, both).ok
    assert gate_may_stop(params, got) == [2]
    # Exactly what node 3's own gate before would say on these answers.
    assert any("single-0" in p for p in gate_judge(params, got, "before", 3, both).problems)
    # The quorum: with node 3 behind, node 2 may not stop either (one caught-up voter of three would stay).
    lagging = {**got, "quorum": (QUORUM, "")}
    assert gate_may_stop(params, lagging) == []
    assert any("caught-up voters" in p for p in gate_judge(params, lagging, "before", 2, both).problems)
    # A broker that did not answer: no stop is judged safe on that look.
    silent = {**got, "brokers": (None, "kafka-broker-api-versions failed (exit 1): timed out")}
    assert gate_may_stop(params, silent) == []


def test_the_gate_after_waits_for_every_port_of_the_node_and_names_the_ones_that_stayed_closed() -> None:
    """The gate's wait for a restarted node's ports (one task, where a wait per port was one each): a port that opens
    while it waits is waited for, and one that never opens is named when the time is up."""
    early, late, never = (socket.socket() for _ in range(3))
    for sock in (early, late, never):
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in (early, late, never)]
    early.listen()
    opener = threading.Timer(0.6, late.listen)
    opener.start()
    try:
        assert wait_ports("127.0.0.1", ports[:2], time.monotonic() + 30) == []
        assert opener.finished.is_set(), "returned before the late port opened"
        deadline = time.monotonic() + 1
        assert wait_ports("127.0.0.1", ports, deadline) == [ports[2]]
        assert time.monotonic() >= deadline, "gave up on the closed port before its time"
    finally:
        opener.cancel()
        for sock in (early, late, never):
            sock.close()


def test_a_partition_whose_only_replica_was_on_the_replaced_disk_is_lost_not_waited_for() -> None:
    text = (
        "Topic: t1\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: \n"
        "\tTopic: t1\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: \tElr: \tLastKnownElr: 3\n"
        "\tTopic: t1\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\n"
        "Topic: t3\tTopicId: y\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n"
        "\tTopic: t3\tPartition: 0\tLeader: none\tReplicas: 3,1,2\tIsr: \n"
    )
    parts = parse_topics(text, default_min_isr=1)
    # t3-0 has copies on 1 and 2 (offline for another reason): not lost with node 3's disk.
    assert lost_partitions(parts, 3) == ["t1-0"]
    assert lost_partitions(parts, 1) == []
