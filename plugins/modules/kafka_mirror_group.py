#!/usr/bin/python
"""Ansible module: move a consumer group between a MirrorMaker 2 source cluster and this (the mirror's target)
cluster, at translated offsets, through kafka-python on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_mirror_group
short_description: Move a consumer group to the mirror's copies (failover) or back to the source (failback)
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Failover (O(move=to_copies)): the group's offsets on the source cluster are translated to the copies on this
    cluster and committed here, so the group's consumers resume here with nothing skipped. When the source answers,
    they are translated as MirrorMaker translates them, through every offset sync of the mirror (an offset before a
    partition's first sync goes to the copy's beginning); with O(source_down), the newest checkpoints MirrorMaker
    wrote for the group are taken.
  - >-
    Failback (O(move=to_source)): the group's offsets on the copies here are translated back through MirrorMaker's
    offset syncs (the newest sync at or before each offset) and committed on the source cluster.
  - >-
    Either way the group must have no member on either cluster (its consumers stopped): a group that consumes while
    its offsets move would lose or repeat records. It commits nothing then.
  - Check mode reports the offsets it would commit.
options:
  group:
    description: The consumer group.
    type: str
    required: true
  topics:
    description: The mirror's topics (names on the source cluster, or prefixes ending in *); the group moves on those.
    type: list
    elements: str
    required: true
  move:
    description: to_copies (failover to this cluster) or to_source (failback).
    type: str
    choices: [to_copies, to_source]
    required: true
  source_alias:
    description: The source cluster's alias (names the copies and the mirror's internal topics).
    type: str
    required: true
  replication_policy:
    description: default (copies named <alias>.<topic>) or identity.
    type: str
    choices: [default, identity]
    default: default
  bootstrap_servers:
    description: This (the target) cluster's bootstrap servers.
    type: str
    required: true
  client_config:
    description: The admin's Kafka client settings for this cluster (kafka_cluster.client_config).
    type: path
    default: ""
  source_bootstrap_servers:
    description: The source cluster's bootstrap servers.
    type: str
    required: true
  source_client_properties:
    description: Kafka client properties of the mirror's login on the source cluster (never logged).
    type: dict
    default: {}
  source_down:
    description: Failover without the source cluster (a disaster), from the newest checkpoints.
    type: bool
    default: false
requirements: [kafka-python >= 3.0]
"""

EXAMPLES = r"""
- name: Fail the group billing over to the DR cluster
  kafkalab.kafka.kafka_mirror_group:
    group: billing
    topics: [orders]
    move: to_copies
    source_alias: primary
    bootstrap_servers: 10.0.1.21:9092
    client_config: /etc/kafkalab/dr/client.properties
    source_bootstrap_servers: 10.0.0.11:9092
    source_client_properties: "{{ mirror_login }}"
"""

RETURN = r"""
offsets:
  description: Per partition, the group's offset where it was, where it goes, and the records it reads again at most.
  type: list
  returned: always
reread_max:
  description: The records the group reads again at most, all partitions together.
  type: int
  returned: always
"""

import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_mirror_plan import (
    checkpoint_reread,
    covered,
    decode_checkpoint,
    decode_offset_sync,
    source_name,
    translate_down,
    translate_up,
)

try:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    HAS_KAFKA = True
except ImportError:  # reported through fail_json below
    HAS_KAFKA = False


class MoveError(Exception):
    """Why the group cannot move; nothing was committed."""


def read_log(settings: dict[str, Any], bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Every record of a one-partition internal topic, from the start to its end now."""
    consumer = KafkaConsumer(
        **settings, bootstrap_servers=bootstrap, enable_auto_commit=False, client_id="kafkalab-mirror-group"
    )
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        records: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 60
        while consumer.position(partition) < end and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                records += [(r.key, r.value) for r in batch if r.key is not None and r.value is not None]
        return records
    finally:
        consumer.close()


def members(admin: Any, group: str) -> int:
    described = admin.describe_groups([group]).get(group) or {}
    return len(described.get("members") or [])


def committed(admin: Any, group: str) -> dict[tuple[str, int], int]:
    offsets = admin.list_group_offsets({group: None}).get(group) or {}
    return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items() if om.offset >= 0}


def commit(admin: Any, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group that has no member (the coordinator refuses them for one that has)."""
    results = admin.alter_group_offsets(
        group, {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
    )
    failed = {f"{tp.topic}-{tp.partition}": error.__name__ for tp, error in results.items() if error.errno != 0}
    if failed:
        raise MoveError(f"the cluster refused some of group {group}'s offsets: {failed}")


def to_copies(module: AnsibleModule, here: dict[str, Any], there: dict[str, Any] | None) -> dict[str, Any]:
    """Failover. With the source answering: the group's offsets there, translated as MirrorMaker translates them
    (OffsetSyncStore's rule) but through every offset sync of its topic, not the few MirrorMaker keeps; an offset
    before a partition's first sync (MirrorMaker drops syncs while it is busy, so the first may come late) goes to
    the copy's beginning: nothing skipped, the records before that sync read again. With the source down: the
    newest checkpoints MirrorMaker wrote for the group."""
    p = module.params
    alias, group, policy = p["source_alias"], p["group"], p["replication_policy"]
    copy_of = {}
    syncs = read_syncs(here["settings"], p["bootstrap_servers"], alias)
    if there is not None:
        source_offsets = {k: v for k, v in committed(there["admin"], group).items() if covered(p["topics"], k[0])}
        if not source_offsets:
            raise MoveError(f"group {group} has no committed offset on {alias} for {', '.join(p['topics'])}")
        copy_of = {t: (f"{alias}.{t}" if policy == "default" else t) for t, _partition in source_offsets}
        starts = beginnings(here["settings"], p["bootstrap_servers"], [(copy_of[t], n) for t, n in source_offsets])
        offsets = []
        for (topic, partition), upstream in sorted(source_offsets.items()):
            known = syncs.get((topic, partition), [])
            translated = translate_down(known, upstream)
            if translated is None:
                start = starts[(copy_of[topic], partition)]
                first = min((sync[1] for sync in known), default=None)
                if first is None:
                    raise MoveError(f"{topic}-{partition}: the mirror has written no offset sync for it yet")
                translated = (start, first - start)
            offsets.append(
                {
                    "topic": copy_of[topic],
                    "partition": partition,
                    "from": upstream,
                    "to": translated[0],
                    "reread_max": translated[1],
                }
            )
    else:
        latest: dict[tuple[str, int], dict[str, Any]] = {}
        for key, value in read_log(here["settings"], p["bootstrap_servers"], f"{alias}.checkpoints.internal"):
            checkpoint = decode_checkpoint(key, value)
            source = source_name(alias, checkpoint["topic"], policy)
            if checkpoint["group"] == group and source is not None and covered(p["topics"], source):
                latest[(source, checkpoint["partition"])] = checkpoint
        if not latest:
            raise MoveError(
                f"MirrorMaker wrote no checkpoint for group {group}: is the checkpoint connector running and does "
                "kafka_connect_mirrors list the group?"
            )
        offsets = [
            {
                "topic": c["topic"],
                "partition": c["partition"],
                "from": c["upstream"],
                "to": c["downstream"],
                "reread_max": checkpoint_reread(syncs.get((source, n), []), c["upstream"], c["downstream"]),
            }
            for (source, n), c in sorted(latest.items())
        ]
    return {
        "commit": {(o["topic"], o["partition"]): o["to"] for o in offsets},
        "offsets": offsets,
        "reread_max": sum(o["reread_max"] for o in offsets),
    }


def beginnings(settings: dict[str, Any], bootstrap: str, partitions: list[tuple[str, int]]) -> dict[Any, int]:
    consumer = KafkaConsumer(**settings, bootstrap_servers=bootstrap, client_id="kafkalab-mirror-group")
    try:
        found = consumer.beginning_offsets([TopicPartition(t, n) for t, n in partitions])
        return {(tp.topic, tp.partition): offset for tp, offset in found.items()}
    finally:
        consumer.close()


def read_syncs(settings: dict[str, Any], bootstrap: str, alias: str) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The mirror's offset syncs, by source partition: [(upstream, downstream)]."""
    syncs: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for key, value in read_log(settings, bootstrap, f"mm2-offset-syncs.{alias}.internal"):
        topic, partition, upstream, downstream = decode_offset_sync(key, value)
        syncs.setdefault((topic, partition), []).append((upstream, downstream))
    return syncs


def to_source(module: AnsibleModule, here: dict[str, Any], there: dict[str, Any]) -> dict[str, Any]:
    """Failback: the group's offsets on the copies, back through the offset syncs; an offset before a partition's
    first sync goes to the source partition's beginning (nothing skipped; what the group read before read again)."""
    p = module.params
    alias, group, policy = p["source_alias"], p["group"], p["replication_policy"]
    found = committed(here["admin"], group)
    copies = {
        copy: source
        for copy, _partition in found
        if (source := source_name(alias, copy, policy)) is not None and covered(p["topics"], source)
    }
    offsets = {k: v for k, v in found.items() if k[0] in copies}
    if not offsets:
        raise MoveError(f"group {group} has no committed offset here on copies of {', '.join(p['topics'])}")
    syncs = read_syncs(here["settings"], p["bootstrap_servers"], alias)
    copy_starts = beginnings(here["settings"], p["bootstrap_servers"], list(offsets))
    source_starts = beginnings(there["settings"], p["source_bootstrap_servers"], [(copies[t], n) for t, n in offsets])
    result: dict[str, Any] = {"commit": {}, "offsets": [], "reread_max": 0}
    for (copy, partition), offset in sorted(offsets.items()):
        source = copies[copy]
        translated = translate_up(syncs.get((source, partition), []), offset) or (
            source_starts[(source, partition)],
            offset - copy_starts[(copy, partition)],
        )
        result["commit"][(source, partition)] = translated[0]
        result["offsets"].append(
            {"topic": source, "partition": partition, "from": offset, "to": translated[0], "reread_max": translated[1]}
        )
        result["reread_max"] += translated[1]
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "group": {"type": "str", "required": True},
            "topics": {"type": "list", "elements": "str", "required": True},
            "move": {"type": "str", "required": True, "choices": ["to_copies", "to_source"]},
            "source_alias": {"type": "str", "required": True},
            "replication_policy": {"type": "str", "default": "default", "choices": ["default", "identity"]},
            "bootstrap_servers": {"type": "str", "required": True},
            "client_config": {"type": "path", "default": ""},
            "source_bootstrap_servers": {"type": "str", "required": True},
            "source_client_properties": {"type": "dict", "default": {}, "no_log": True},
            "source_down": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    if not HAS_KAFKA:
        module.fail_json(msg="kafka-python is required on the host running this module (the controller).")
    p = module.params
    try:
        from kafkalab import kafka_client

        here_settings = kafka_client.settings(p["client_config"])
        there_settings = kafka_client.from_properties(p["source_client_properties"], "the mirror's source login")
    except ImportError:
        module.fail_json(msg="kafka_mirror_group needs the kafkalab package (the project's venv) on the controller.")
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    here = {
        "settings": here_settings,
        "admin": KafkaAdminClient(
            **here_settings, bootstrap_servers=p["bootstrap_servers"], client_id="kafkalab-mirror-group"
        ),
    }
    there = None
    if not p["source_down"]:
        there = {
            "settings": there_settings,
            "admin": KafkaAdminClient(
                **there_settings, bootstrap_servers=p["source_bootstrap_servers"], client_id="kafkalab-mirror-group"
            ),
        }
    try:
        busy = [
            f"{name} ({count} members)"
            for name, side in (("this cluster", here), (p["source_alias"], there))
            if side is not None and (count := members(side["admin"], p["group"]))
        ]
        if busy:
            raise MoveError(
                f"group {p['group']} has members on {', '.join(busy)}: stop its consumers first (their offsets would "
                "move under them)"
            )
        if p["move"] == "to_copies":
            result, target = to_copies(module, here, there), here
        elif there is None:
            raise MoveError("a failback needs the source cluster (source_down is set)")
        else:
            result, target = to_source(module, here, there), there
        if not module.check_mode:
            commit(target["admin"], p["group"], result["commit"])
    except MoveError as exc:
        module.fail_json(msg=f"{exc}. Nothing was committed.")
    finally:
        for side in (here, there):
            if side is not None:
                side["admin"].close()
    module.exit_json(changed=True, offsets=result["offsets"], reread_max=result["reread_max"])


if __name__ == "__main__":
    main()
