"""Topics as code: what the kafka_topics module accepts, refuses and plans, without a cluster."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_topics_plan import check, describe, has_changes, plan

T3 = {"name": "topic_3", "partitions": 2, "replication_factor": 3, "configs": {"min.insync.replicas": 2}}


def current(**topics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: {"configs": {}, **t} for name, t in topics.items()}


def test_valid_declaration_has_no_problems() -> None:
    assert check([T3, {"name": "a.b-c_1", "partitions": 1, "replication_factor": 1}], broker_count=3) == []


@pytest.mark.parametrize(
    "topic,expected",
    [
        ({"name": "t", "partitions": 1, "replication_factor": 4}, "topic 't': replication_factor 4 is larger than"),
        (
            {"name": "t", "partitions": 1, "replication_factor": 2, "configs": {"min.insync.replicas": 3}},
            "topic 't': configs.min.insync.replicas 3 is larger than replication_factor 2",
        ),
        ({"name": "bad name!", "partitions": 1, "replication_factor": 1}, "topic 'bad name!': invalid name"),
        ({"name": "..", "partitions": 1, "replication_factor": 1}, "invalid name"),
        ({"name": "t", "partitions": 0, "replication_factor": 1}, "topic 't': partitions '0' must be a positive"),
        ({"name": "t", "partitions": 1, "replication_factor": 1, "state": "gone"}, "state 'gone' must be"),
        ({"name": "t", "partitions": 1, "replication_factor": 1, "replicas": 3}, "unknown field(s) replicas"),
    ],
)
def test_invalid_declarations_name_topic_and_field(topic: dict[str, Any], expected: str) -> None:
    problems = check([topic], broker_count=3)
    assert any(expected in p for p in problems), problems


def test_unknown_config_key_is_refused_when_the_cluster_lists_its_keys() -> None:
    topic = {"name": "t", "partitions": 1, "replication_factor": 1, "configs": {"retention.mss": 1}}
    assert check([topic], 3, known_configs={"retention.ms"}) == [
        "topic 't': configs.retention.mss is not a topic config this Kafka release knows; did you mean retention.ms?"
    ]


def test_duplicate_declaration_is_refused() -> None:
    assert any("declared more than once" in p for p in check([T3, T3], 3))


def test_missing_topic_is_created() -> None:
    actions, refusals = plan([T3], {})
    assert refusals == []
    assert [t["name"] for t in actions["create"]] == ["topic_3"]
    assert describe(actions) == ["create topic_3 (partitions=2, replication_factor=3, min.insync.replicas=2)"]


def test_matching_topic_needs_nothing() -> None:
    actions, refusals = plan(
        [T3], current(topic_3={"partitions": 2, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}})
    )
    assert refusals == [] and not has_changes(actions)


def test_undeclared_configs_are_left_alone() -> None:
    have = current(
        topic_3={"partitions": 2, "replication_factor": 3, "configs": {"min.insync.replicas": "2", "retention.ms": "5"}}
    )
    actions, _ = plan([T3], have)
    assert not has_changes(actions)


def test_partitions_grow_and_configs_change() -> None:
    declared = [{**T3, "partitions": 4, "configs": {"min.insync.replicas": 2, "retention.ms": 1000}}]
    actions, refusals = plan(
        declared, current(topic_3={"partitions": 2, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}})
    )
    assert refusals == []
    assert actions["add_partitions"] == {"topic_3": (2, 4)}
    assert actions["set_configs"] == {"topic_3": {"retention.ms": (None, "1000")}}


def test_lowering_partitions_is_refused() -> None:
    _, refusals = plan([T3], current(topic_3={"partitions": 5, "replication_factor": 3}))
    assert refusals and "partitions 2 is lower than the 5 it has" in refusals[0]


def test_changing_replication_factor_is_refused() -> None:
    _, refusals = plan([T3], current(topic_3={"partitions": 2, "replication_factor": 1}))
    assert refusals and "replication_factor 3 differs from its current 1" in refusals[0]


def test_topic_is_deleted_only_when_declared_absent() -> None:
    have = current(topic_3={"partitions": 2, "replication_factor": 3}, other={"partitions": 1, "replication_factor": 1})
    actions, _ = plan([{"name": "topic_3", "state": "absent"}], have)
    # `other` is not declared at all: it stays.
    assert actions["delete"] == ["topic_3"]
    actions, _ = plan([{"name": "never_existed", "state": "absent"}], have)
    assert not has_changes(actions)
