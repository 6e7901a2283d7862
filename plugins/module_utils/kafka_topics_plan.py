"""Topics as code: check the declared topics and plan the changes that bring the cluster to them.

Pure functions over plain data (no Kafka connection), shared by the kafka_topics module's check,
plan and apply phases and unit tested in tests/unit/test_kafka_topics_plan.py. The rules are the
promises the role makes: a topic is deleted only when declared `state: absent`; a partition count is
never lowered; a replication factor is never changed behind the operator's back; only declared
configs are set, others are left as they are.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import as_int
from ansible_collections.kafkalab.kafka.plugins.module_utils.replication import replication_problems

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
STATES = ("present", "absent")
FIELDS = {"name", "partitions", "replication_factor", "configs", "state"}


def normalise(topic: dict[str, Any]) -> dict[str, Any]:
    """One declared topic with defaults applied and config values as strings (Kafka compares strings)."""
    configs = topic.get("configs") or {}
    return {
        "name": str(topic.get("name", "")),
        "state": str(topic.get("state", "present")),
        "partitions": as_int(topic.get("partitions")),
        "replication_factor": as_int(topic.get("replication_factor")),
        "configs": {
            str(k): ("true" if v is True else "false" if v is False else str(v)) for k, v in dict(configs).items()
        },
    }


def check(declared: list[dict[str, Any]], broker_count: int | None, known_configs: set[str] | None = None) -> list[str]:
    """Every problem in the declaration, each naming the topic and field. Empty means valid.

    broker_count None skips the checks that need the cluster (used before the cluster exists only
    if unknown); known_configs None skips the config-name check (the broker validates it anyway).
    """
    problems: list[str] = []
    seen: set[str] = set()
    for index, raw in enumerate(declared):
        where = f"kafka_topics[{index}]"
        unknown = sorted(set(raw) - FIELDS)
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(FIELDS))}.")
        topic = normalise(raw)
        name = topic["name"]
        where = f"topic '{name}'" if name else where
        if not TOPIC_NAME.match(name) or name in (".", ".."):
            problems.append(
                f"{where}: invalid name: use 1-249 characters from a-z A-Z 0-9 . _ - (and not '.' or '..')."
            )
        elif name in seen:
            problems.append(f"{where}: declared more than once.")
        seen.add(name)
        if topic["state"] not in STATES:
            problems.append(f"{where}: state '{topic['state']}' must be present or absent.")
        if topic["state"] == "absent":
            continue
        partitions = topic["partitions"]
        if partitions is None or partitions < 1:
            problems.append(f"{where}: partitions '{raw.get('partitions')}' must be a positive integer.")
        problems += replication_problems(
            raw.get("replication_factor"),
            topic["configs"].get("min.insync.replicas"),
            broker_count,
            rf_name="replication_factor",
            min_isr_name="configs.min.insync.replicas",
            where=where,
            min_isr_required=False,
        )
        if known_configs is not None:
            for key in sorted(set(topic["configs"]) - known_configs):
                close = difflib.get_close_matches(key, sorted(known_configs), n=1, cutoff=0.75)
                hint = f"; did you mean {close[0]}?" if close else " (see Kafka's topic configs for this release)."
                problems.append(f"{where}: configs.{key} is not a topic config this Kafka release knows{hint}")
    return problems


def plan(declared: list[dict[str, Any]], current: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The changes from `current` to `declared`, and the declared changes the role refuses to make.

    current: {name: {"partitions": int, "replication_factor": int, "configs": {key: value}}} where
    configs holds the topic's own (dynamic) configs only.
    Returns ({"create": [...], "add_partitions": {name: (old, new)}, "set_configs": {name: {key: (old, new)}},
    "delete": [names]}, refusals).
    """
    actions: dict[str, Any] = {"create": [], "add_partitions": {}, "set_configs": {}, "delete": []}
    refusals: list[str] = []
    for raw in declared:
        topic = normalise(raw)
        name = topic["name"]
        have = current.get(name)
        if topic["state"] == "absent":
            if have is not None:
                actions["delete"].append(name)
            continue
        if have is None:
            actions["create"].append(topic)
            continue
        if topic["partitions"] < have["partitions"]:
            refusals.append(
                f"topic '{name}': partitions {topic['partitions']} is lower than the {have['partitions']} it has; "
                "Kafka cannot remove partitions. Declare at least that many (or recreate the topic by hand)."
            )
        elif topic["partitions"] > have["partitions"]:
            actions["add_partitions"][name] = (have["partitions"], topic["partitions"])
        if topic["replication_factor"] != have["replication_factor"]:
            refusals.append(
                f"topic '{name}': replication_factor {topic['replication_factor']} differs from its current "
                f"{have['replication_factor']}; changing it needs a partition reassignment "
                "(kafka-reassign-partitions), which this role does not do automatically."
            )
        changed = {
            key: (have["configs"].get(key), value)
            for key, value in sorted(topic["configs"].items())
            if have["configs"].get(key) != value
        }
        if changed:
            actions["set_configs"][name] = changed
    return actions, refusals


def has_changes(actions: dict[str, Any]) -> bool:
    return any(actions[k] for k in ("create", "add_partitions", "set_configs", "delete"))


def describe(actions: dict[str, Any]) -> list[str]:
    """One readable line per change, for the task result and the operator."""
    lines = [
        f"create {t['name']} (partitions={t['partitions']}, replication_factor={t['replication_factor']}"
        + "".join(f", {k}={v}" for k, v in sorted(t["configs"].items()))
        + ")"
        for t in actions["create"]
    ]
    lines += [f"add partitions to {n}: {old} -> {new}" for n, (old, new) in sorted(actions["add_partitions"].items())]
    for name, changes in sorted(actions["set_configs"].items()):
        for key, (old, new) in changes.items():
            lines.append(f"set {name} {key}: {old if old is not None else '(default)'} -> {new}")
    lines += [f"delete {n}" for n in actions["delete"]]
    return lines
