"""Share groups (KIP-932, queues on Kafka, generally available from Kafka 4.2): the inventory's sizes checked against
the ranges Kafka's own ShareGroupConfig enforces, and the broker properties they become.

Kafka refuses to start a broker whose group.share.* value lies outside its min/max bound properties (checked at
startup, not by a config validator), so a value outside Kafka's default bounds is rendered with the bound widened to
it; a value Kafka's validator would refuse is refused in preflight, before a rolling restart meets it. Values equal to
Kafka's defaults are not rendered, so a cluster that leaves them alone keeps its server.properties (and restarts for
nothing). Figures from the 4.3.1 and 4.4.0 jars (ShareGroupConfig.CONFIG_DEF; the same in both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import as_bool, as_int

# The first release where share groups are generally available (share.version 1 finalized by default).
SINCE = (4, 2)

# setting -> (variable, property, Kafka's default, validator range, (min bound property, its default),
#             (max bound property, its default))
SETTINGS: dict[str, tuple[str, str, int, tuple[int, int], tuple[str, int] | None, tuple[str, int] | None]] = {
    "record_lock_duration_ms": (
        "kafka_share_group_record_lock_duration_ms",
        "group.share.record.lock.duration.ms",
        30000,
        (1000, 3600000),
        ("group.share.min.record.lock.duration.ms", 15000),
        ("group.share.max.record.lock.duration.ms", 60000),
    ),
    "delivery_count_limit": (
        "kafka_share_group_delivery_count_limit",
        "group.share.delivery.count.limit",
        5,
        (2, 10),
        ("group.share.min.delivery.count.limit", 2),
        ("group.share.max.delivery.count.limit", 10),
    ),
    "partition_max_record_locks": (
        "kafka_share_group_partition_max_record_locks",
        "group.share.partition.max.record.locks",
        2000,
        (100, 10000),
        ("group.share.min.partition.max.record.locks", 100),
        ("group.share.max.partition.max.record.locks", 4000),
    ),
    "max_size": ("kafka_share_group_max_size", "group.share.max.size", 200, (1, 1000), None, None),
}


def release(version: Any) -> tuple[int, int]:
    parts = str(version or "").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def check(settings: Mapping[str, Any], problems: list[str]) -> None:
    """The share group settings (settings['share_groups']), each named with its bad value and the fix."""
    share = settings.get("share_groups") or {}
    if not isinstance(share, Mapping):
        return
    if "enabled" in share and as_bool(share["enabled"]) is None:
        problems.append(f"kafka_share_groups_enabled must be true or false, not {share['enabled']!r}.")
    changed = []
    for key, (variable, prop, default, (low, high), _min, _max) in SETTINGS.items():
        if key not in share:
            continue
        value = as_int(share[key])
        if value is None or not low <= value <= high:
            problems.append(
                f"{variable} '{share[key]}' must be an integer from {low} to {high} ({prop}; Kafka's default is "
                f"{default}). Fix {variable}."
            )
        elif value != default:
            changed.append(variable)
    version = settings.get("version")
    if changed and settings.get("mode") != "zookeeper" and release(version) < SINCE:
        problems.append(
            f"{', '.join(changed)} set, but kafka_version {version} has no generally available share groups (Kafka "
            f"{SINCE[0]}.{SINCE[1]} and later). Remove them, or set kafka_version to 4.2 or later."
        )


def broker_properties(settings: Mapping[str, Any]) -> dict[str, str]:
    """The group.share.* properties of a broker: only those that differ from Kafka's defaults, with a bound widened
    where the value lies beyond Kafka's default bound. {} before Kafka 4.2."""
    share = settings.get("share_groups") or {}
    if release(settings.get("version")) < SINCE or not isinstance(share, Mapping):
        return {}
    props: dict[str, str] = {}
    for key, (_variable, prop, default, _range, lower, upper) in SETTINGS.items():
        value = as_int(share.get(key, default))
        if value is None or value == default:
            continue
        props[prop] = str(value)
        if lower and value < lower[1]:
            props[lower[0]] = str(value)
        if upper and value > upper[1]:
            props[upper[0]] = str(value)
    return props


def share_version_change(finalized: Mapping[str, Any], enabled: bool, release_level: int) -> dict[str, Any]:
    """What `kafka-features` must do for kafka_share_groups_enabled: {'disable': True} while share.version is
    finalized and they are off; {'upgrade': level} while it is 0 and they are on (the release's default level);
    {} otherwise. Never lowers a finalized level while on."""
    current = as_int(finalized.get("share.version", 0)) or 0
    if not enabled and current > 0:
        return {"disable": True}
    if enabled and current == 0 and release_level > 0:
        return {"upgrade": release_level}
    return {}
