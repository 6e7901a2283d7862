"""Share group settings: the broker properties they become (only what differs from Kafka's defaults, bounds widened
to admit a value beyond them) and what kafka-features must do for kafka_share_groups_enabled."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_restarts import (
    kafka_features_to_raise,
    kafka_release_features_wanted,
    kafka_share_version_change,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.share_groups import broker_properties

DEFAULTS = {
    "enabled": True,
    "record_lock_duration_ms": 30000,
    "delivery_count_limit": 5,
    "partition_max_record_locks": 2000,
    "max_size": 200,
}
RELEASE_44 = {"metadata.version": 33, "metadata.version.name": "4.4-IV2", "share.version": 2, "kraft.version": 1}


def settings(version: str = "4.4.0", **share: Any) -> dict[str, Any]:
    return {"version": version, "share_groups": {**DEFAULTS, **share}}


def test_kafkas_defaults_render_nothing() -> None:
    assert broker_properties(settings()) == {}


@pytest.mark.parametrize(
    "share,expected",
    [
        ({"delivery_count_limit": 3}, {"group.share.delivery.count.limit": "3"}),
        (
            {"record_lock_duration_ms": 5000},
            {"group.share.record.lock.duration.ms": "5000", "group.share.min.record.lock.duration.ms": "5000"},
        ),
        (
            {"record_lock_duration_ms": 120000},
            {"group.share.record.lock.duration.ms": "120000", "group.share.max.record.lock.duration.ms": "120000"},
        ),
        (
            {"partition_max_record_locks": 8000, "max_size": "50"},
            {
                "group.share.partition.max.record.locks": "8000",
                "group.share.max.partition.max.record.locks": "8000",
                "group.share.max.size": "50",
            },
        ),
    ],
)
def test_a_size_beyond_kafkas_default_bound_widens_the_bound(share: dict[str, Any], expected: dict[str, str]) -> None:
    assert broker_properties(settings(**share)) == expected


def test_releases_before_4_2_get_no_share_group_properties() -> None:
    assert broker_properties(settings("4.1.1", delivery_count_limit=3)) == {}
    assert broker_properties(settings("3.9.2", delivery_count_limit=3)) == {}


@pytest.mark.parametrize(
    "finalized,enabled,expected",
    [
        ({"share.version": "2"}, True, {}),
        ({"share.version": "1"}, True, {}),  # an upgrade raises it, never this
        ({"share.version": "0"}, True, {"upgrade": 2}),
        ({}, True, {"upgrade": 2}),
        ({"share.version": "2"}, False, {"disable": True}),
        ({"share.version": "0"}, False, {}),
    ],
)
def test_kafka_features_turns_share_groups_on_and_off(
    finalized: dict[str, str], enabled: bool, expected: dict[str, Any]
) -> None:
    assert kafka_share_version_change(finalized, enabled, RELEASE_44) == expected


def test_an_upgrade_leaves_share_groups_off_when_they_are_off() -> None:
    finalized = {"metadata.version": "4.3-IV0", "share.version": "0", "kraft.version": "1"}
    on = kafka_features_to_raise(finalized, kafka_release_features_wanted(RELEASE_44, True))
    off = kafka_features_to_raise(finalized, kafka_release_features_wanted(RELEASE_44, False))
    assert on == {"metadata.version": 33, "share.version": 2}
    assert off == {"metadata.version": 33}
