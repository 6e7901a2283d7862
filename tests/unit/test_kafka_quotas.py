"""Client quotas as code: what the preflight makes of kafka_quotas (filter kafka_sasl_settings) and the plan the
module kafka_access applies (kafka_access_plan.plan_quotas): set what is declared, remove a key the declaration
dropped or an entity declared absent, leave undeclared entities alone, nothing on a re-run. Plain data, no Kafka.
The exact refusals are in test_preflight_refusals.py."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import (
    EntityKey,
    describe_quotas,
    entity_key,
    entity_label,
    plan_quotas,
    quotas_diff,
)
from test_kafka_sasl import USERS, security


def checked(quotas: Any) -> list[dict[str, Any]]:
    s = security(quotas=quotas)
    assert s["problems"] == []
    return list(s["quotas"])


def test_quotas_are_normalized_for_the_module() -> None:
    assert checked(
        [
            {"user": "alice", "producer_byte_rate": 20480},
            {"client_id": "<default>", "request_percentage": "12.5"},  # a templated value arrives as a string
            {"user": "<default>", "client_id": "batch", "controller_mutation_rate": 10, "state": "absent"},
        ]
    ) == [
        {"user": "alice", "client_id": None, "values": {"producer_byte_rate": 20480}, "state": "present"},
        {"user": None, "client_id": "<default>", "values": {"request_percentage": 12.5}, "state": "present"},
        {"user": "<default>", "client_id": "batch", "values": {"controller_mutation_rate": 10}, "state": "absent"},
    ]


def test_no_quotas_declared_is_an_empty_list() -> None:
    assert security()["quotas"] == []
    assert checked(None) == []


def test_quotas_of_a_user_being_removed_may_be_removed_too() -> None:
    # USERS marks 'gone' absent: its quotas may be declared absent (removal), not present.
    assert [u["name"] for u in USERS if u.get("state") == "absent"] == ["gone"]
    assert checked([{"user": "gone", "state": "absent"}])[0]["state"] == "absent"
    assert security(quotas=[{"user": "gone", "producer_byte_rate": 1}])["problems"]


@pytest.mark.parametrize(
    "quota,label",
    [
        ({"user": "alice"}, "user=alice"),
        ({"client_id": "<default>"}, "client-id=<default>"),
        ({"user": "<default>", "client_id": "app"}, "user=<default>,client-id=app"),
    ],
)
def test_an_entity_is_named_the_way_kafkas_tools_name_it(quota: dict[str, str], label: str) -> None:
    assert entity_label(entity_key(quota)) == label


ALICE: EntityKey = (("user", "alice"),)
DEFAULT_CLIENT: EntityKey = (("client-id", None),)
OTHER: EntityKey = (("user", "other"),)


def test_the_plan_sets_changes_and_removes_dropped_keys_and_leaves_others_alone() -> None:
    declared = checked(
        [
            {"user": "alice", "producer_byte_rate": 40960},
            {"client_id": "<default>", "request_percentage": 50},
        ]
    )
    current = {
        ALICE: {"producer_byte_rate": 20480.0, "consumer_byte_rate": 1048576.0},  # consumer_byte_rate was dropped
        OTHER: {"producer_byte_rate": 1.0},  # not declared: left alone
    }
    changes = plan_quotas(declared, current)
    assert [(c["label"], c["set"], c["remove"]) for c in changes] == [
        ("user=alice", {"producer_byte_rate": 40960.0}, ["consumer_byte_rate"]),
        ("client-id=<default>", {"request_percentage": 50.0}, []),
    ]
    assert changes[1]["entity"] == [{"type": "client-id", "name": None}]  # null: the default, on the wire
    assert describe_quotas(changes) == [
        "set quota user=alice: producer_byte_rate=40960 (was 20480)",
        "remove quota user=alice: consumer_byte_rate (was 1048576)",
        "set quota client-id=<default>: request_percentage=50",
    ]
    assert quotas_diff(changes) == {
        "before": "user=alice: consumer_byte_rate=1048576\nuser=alice: producer_byte_rate=20480\n",
        "after": "user=alice: producer_byte_rate=40960\nclient-id=<default>: request_percentage=50\n",
    }


def test_a_rerun_plans_nothing() -> None:
    declared = checked(
        [{"user": "alice", "producer_byte_rate": 20480}, {"client_id": "<default>", "request_percentage": 12.5}]
    )
    current = {ALICE: {"producer_byte_rate": 20480.0}, DEFAULT_CLIENT: {"request_percentage": 12.5}}
    assert plan_quotas(declared, current) == []


def test_an_entity_declared_absent_loses_its_quotas_and_one_without_any_is_no_change() -> None:
    declared = checked([{"user": "alice", "state": "absent"}, {"user": "<default>", "state": "absent"}])
    changes = plan_quotas(declared, {ALICE: {"producer_byte_rate": 20480.0, "request_percentage": 5.0}})
    assert [(c["label"], c["set"], c["remove"]) for c in changes] == [
        ("user=alice", {}, ["producer_byte_rate", "request_percentage"])
    ]
    assert quotas_diff(changes)["after"] == ""


def test_a_user_with_a_client_id_is_its_own_entity() -> None:
    declared = checked([{"user": "alice", "client_id": "bulk", "producer_byte_rate": 1024}])
    # alice's own quota is another entity: not touched, and no reason to think the combined one exists.
    changes = plan_quotas(declared, {ALICE: {"producer_byte_rate": 1024.0}})
    assert changes[0]["entity"] == [{"type": "client-id", "name": "bulk"}, {"type": "user", "name": "alice"}]
    assert changes[0]["set"] == {"producer_byte_rate": 1024.0}
