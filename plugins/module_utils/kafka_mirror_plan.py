"""MirrorMaker 2 as connectors of the target site's Connect cluster: the declared mirrors of kafka_connect_mirrors
turned into the MirrorSourceConnector and MirrorCheckpointConnector configs the kafka_connect role applies like any
declared connector (validated by the workers, written on a diff, gated restarts, metrics), the ACLs the workers'
Kafka user needs on this (the target) cluster, and the source clusters' CA files the workers read. Pure; the Connect
model (plugins/filter/kafka_connect_model.py) calls it, tests/unit/test_kafka_mirror_plan.py tests it.

Why connectors and not the dedicated MirrorMaker driver: the workers are already installed, secured, monitored and
restarted with gates; a driver would be a second service to do all that for. The connectors run next to the target
cluster (their consumer reaches across the network, their producer stays local), as the MirrorMaker documentation
advises, and the records they copy, the checkpoints and the offset syncs are written to this cluster.

Settings that matter in Connect mode (read off the connect-mirror sources):
- every client map is built from source.cluster.* / target.cluster.* only (the worker's settings do not reach them),
  so both clusters' bootstrap servers and logins are given, the passwords as file config provider placeholders;
- ByteArrayConverter for key, value and headers (the dedicated driver forces it; a worker's JsonConverter would wrap
  the copied bytes);
- offset-syncs.topic.location=target in both connectors: the source cluster is then only read, so the mirror's user
  there needs READ, DESCRIBE and DESCRIBE_CONFIGS on the mirrored topics and DESCRIBE on the mirrored groups, no more
  (source_acls says so for the source site's inventory);
- sync.topic.acls.enabled=false (it would need to describe the source's ACLs and create ACLs here);
- sync.group.offsets.enabled: the checkpoint task commits each mirrored group's translated offsets on this cluster
  while the group has no members here, so a consumer group moved here resumes where it had got to.

Replication policy: default (a copied topic is named <source alias>.<topic>: two sites may mirror each other) or
identity (the same name: simpler failover, but nothing then tells a copy from an original, so a mirror the other way
would copy records back and forth forever: refused when the source site mirrors from this one).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import unknown_keys
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import pattern_acls

POLICIES = {
    "default": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "identity": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}
MIRROR_KEYS = {
    "source",
    "topics",
    "groups",
    "replication_policy",
    "sync_group_offsets",
    "state",
    "tasks_max",
    "checkpoint_interval_seconds",
    "refresh_interval_seconds",
    "offset_lag_max",
}
CLUSTER_KEYS = {
    "bootstrap_servers",
    "security_protocol",
    "sasl_mechanism",
    "user",
    "password",
    "ca_file",
    "mirrors_from_here",
}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
# A topic or group as the inventory names it: a name, or a prefix ending in *.
PATTERN = re.compile(r"^[A-Za-z0-9._-]+\*?$")
PLACEHOLDER = re.compile(r"^\$\{file:[^:}]+:[^}]+\}$")


def mirror_ca_path(config_dir: str, alias: str) -> str:
    """Where the workers keep the CA a source cluster's certificates are checked against."""
    return f"{config_dir}/mirror/{alias}-ca.pem"


def as_regex(patterns: list[str]) -> str:
    """MirrorMaker's topics/groups list (regular expressions, comma separated) for names and prefixes."""
    return ",".join(re.escape(p[:-1]) + ".*" if p.endswith("*") else re.escape(p) for p in patterns)


def _patterns(where: str, key: str, raw: Any, problems: list[str], required: bool) -> list[str]:
    items = [raw] if isinstance(raw, str) else raw
    if raw in (None, "", []) and not required:
        return []
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and PATTERN.match(i) for i in items):
        problems.append(
            f"{where}: {key} is {raw!r}: give a list of names, or prefixes ending in * (e.g. [orders, 'payments.*'])."
            f" Fix {key}."
        )
        return []
    return list(dict.fromkeys(items))


def _login(side: str, cluster: Mapping[str, Any], ca_path: str) -> dict[str, str]:
    """The <side>.cluster.* settings of a cluster's login: bootstrap servers, protocol, SCRAM through a placeholder
    password, a PEM trust store (the file provider substitutes the password inside the JAAS line)."""
    prefix = f"{side}.cluster."
    protocol = cluster["security_protocol"]
    config = {prefix + "bootstrap.servers": cluster["bootstrap_servers"], prefix + "security.protocol": protocol}
    if protocol.startswith("SASL_"):
        config[prefix + "sasl.mechanism"] = cluster["sasl_mechanism"]
        config[prefix + "sasl.jaas.config"] = cluster.get("jaas") or (
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{cluster["user"]}" '
            f'password="{cluster["password"]}";'
        )
    if protocol.endswith("SSL"):
        config[prefix + "ssl.truststore.type"] = "PEM"
        config[prefix + "ssl.truststore.location"] = ca_path
        config[prefix + "ssl.endpoint.identification.algorithm"] = "https"
    return config


def _clusters(raw: Any, local_alias: str, problems: list[str]) -> dict[str, dict[str, Any]]:
    if raw in (None, ""):
        return {}
    if not isinstance(raw, Mapping):
        problems.append(
            f"kafka_connect_mirror_clusters is a {type(raw).__name__}: it must map a source cluster's alias to how "
            "to reach it ({primary: {bootstrap_servers, security_protocol, user, password, ca_file}}). Fix it."
        )
        return {}
    clusters: dict[str, dict[str, Any]] = {}
    for alias, entry in raw.items():
        where = f"kafka_connect_mirror_clusters.{alias}"
        if not ALIAS.match(str(alias)) or str(alias) == local_alias:
            problems.append(
                f"{where}: the alias must be letters, digits, '_' or '-' and differ from this cluster's own "
                f"(kafka_connect_cluster_alias, {local_alias}). Rename it."
            )
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"{where} is {entry!r}: give bootstrap_servers, security_protocol and the login.")
            continue
        problems += unknown_keys(entry, CLUSTER_KEYS, where)
        protocol = str(entry.get("security_protocol") or "SASL_SSL")
        bootstrap, user, password = (str(entry.get(k) or "") for k in ("bootstrap_servers", "user", "password"))
        cluster: dict[str, Any] = {
            "bootstrap_servers": bootstrap,
            "security_protocol": protocol,
            "sasl_mechanism": str(entry.get("sasl_mechanism") or "SCRAM-SHA-512"),
            "user": user,
            "password": password,
            "ca_file": str(entry.get("ca_file") or ""),
            "mirrors_from_here": bool(entry.get("mirrors_from_here", False)),
        }
        if not re.match(r"^[^\s,]+:\d+(,[^\s,]+:\d+)*$", bootstrap):
            problems.append(
                f"{where}: bootstrap_servers is {entry.get('bootstrap_servers')!r}: give host:port[,host:port...] of "
                "the source cluster's listener for this site."
            )
        if protocol not in PROTOCOLS:
            problems.append(f"{where}: security_protocol is {protocol!r}: it must be one of {', '.join(PROTOCOLS)}.")
        if protocol.startswith("SASL_"):
            if not user:
                problems.append(f"{where}: security_protocol {protocol} needs the user the mirror logs in as.")
            if not PLACEHOLDER.match(password):
                problems.append(
                    f"{where}: password must be a placeholder, ${{file:<kafka_connect_secrets_dir>/<file>.properties:"
                    "<key>}, naming a kafka_connect_secrets entry (in clear it would land in the config topic and the "
                    "REST output). Fix password."
                )
        if protocol.endswith("SSL") and not cluster["ca_file"]:
            problems.append(
                f"{where}: security_protocol {protocol} needs ca_file, the CA (PEM, on the controller) the source "
                "cluster's certificates are signed by."
            )
        clusters[str(alias)] = cluster
    return clusters


def mirror_plan(
    mirrors: Any,
    clusters: Any,
    local: Mapping[str, Any],
    problems: list[str],
) -> dict[str, Any]:
    """kafka_connect_mirrors and kafka_connect_mirror_clusters -> {"connectors": [connector records, as the Connect
    model's], "acls": [this cluster's ACLs for the workers' user], "files": [{"src": CA on the controller, "dest": on
    the workers}], "source_acls": {alias: [ACLs the source site must give its mirror user]}}.

    local: this (the target) cluster as the workers reach it: alias, bootstrap_servers, security_protocol,
    sasl_mechanism, user, jaas (a placeholder for the whole JAAS line) or password (a placeholder), ca_path (on the
    workers), config_dir, replication_factor."""
    plan: dict[str, Any] = {"connectors": [], "acls": [], "files": [], "source_acls": {}, "mirrors": {}}
    if mirrors in (None, "", []):
        return plan
    local_alias = str(local.get("alias") or "")
    if not ALIAS.match(local_alias):
        problems.append(
            f"kafka_connect_mirrors is set, but kafka_connect_cluster_alias is {local_alias!r}: name this cluster "
            "(letters, digits, '_', '-'; e.g. dr), as the mirrors' records and checkpoints name it."
        )
        return plan
    known = _clusters(clusters, local_alias, problems)
    if not isinstance(mirrors, list):
        problems.append(
            f"kafka_connect_mirrors is a {type(mirrors).__name__}: it must be a list of mirrors ({{source, topics, "
            "groups, replication_policy}}). Fix it."
        )
        return plan
    user = str(local.get("user") or "")
    rf = int(local.get("replication_factor") or 1)
    seen: set[str] = set()
    for index, item in enumerate(mirrors):
        where = f"kafka_connect_mirrors[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is {item!r}: each mirror is a mapping (source, topics, groups, ...).")
            continue
        alias = str(item.get("source") or "")
        where = f"{where} (from {alias or 'no source'})"
        problems += unknown_keys(item, MIRROR_KEYS, where, "a mirror")
        if alias not in known:
            problems.append(
                f"{where}: source {alias!r} is not in kafka_connect_mirror_clusters (declared: "
                f"{', '.join(sorted(known)) or 'none'}). Declare how to reach it there."
            )
            continue
        if alias in seen:
            problems.append(f"{where}: {alias} is mirrored twice. Declare one mirror per source cluster.")
            continue
        seen.add(alias)
        cluster = known[alias]
        policy = str(item.get("replication_policy") or "default")
        if policy not in POLICIES:
            problems.append(f"{where}: replication_policy is {policy!r}: it must be default or identity.")
            continue
        if policy == "identity" and cluster["mirrors_from_here"]:
            problems.append(
                f"{where}: replication_policy identity while {alias} mirrors from {local_alias} too "
                f"(kafka_connect_mirror_clusters.{alias}.mirrors_from_here): with the same names on both sides, "
                "nothing tells a copy from an original, and records would go back and forth forever. Use "
                "replication_policy: default (copies named "
                f"{alias}.<topic>), or stop the other mirror."
            )
            continue
        state = str(item.get("state") or "present")
        if state not in ("present", "absent"):
            problems.append(f"{where}: state is {state!r}; it must be present or absent.")
            continue
        topics = _patterns(where, "topics", item.get("topics"), problems, required=True)
        groups = _patterns(where, "groups", item.get("groups"), problems, required=False)
        names = {"source": f"mirror-{alias}-source", "checkpoint": f"mirror-{alias}-checkpoint"}
        if state == "absent":
            plan["connectors"] += [
                {"name": n, "config": {}, "state": "absent", "reads": [], "writes": []} for n in names.values()
            ]
            continue
        ca_path = mirror_ca_path(str(local.get("config_dir") or ""), alias)
        if cluster["security_protocol"].endswith("SSL"):
            plan["files"].append({"src": cluster["ca_file"], "dest": ca_path})
        common = {
            "source.cluster.alias": alias,
            "target.cluster.alias": local_alias,
            **_login("source", cluster, ca_path),
            **_login("target", {**local, "ca_file": ""}, str(local.get("ca_path") or "")),
            "key.converter": BYTES,
            "value.converter": BYTES,
            "header.converter": BYTES,
            "replication.policy.class": POLICIES[policy],
            "offset-syncs.topic.location": "target",
            "offset-syncs.topic.replication.factor": str(rf),
            "tasks.max": str(item.get("tasks_max") or 1),
        }
        refresh = str(item.get("refresh_interval_seconds") or 60)
        source = {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            **common,
            "topics": as_regex(topics),
            "replication.factor": str(rf),
            "sync.topic.configs.enabled": "true",
            "sync.topic.acls.enabled": "false",
            "refresh.topics.interval.seconds": refresh,
            # A new offset sync when the copy's offsets drift this far from the source's: a group moved between the
            # sites reads at most this many records again per partition.
            "offset.lag.max": str(item.get("offset_lag_max") or 100),
            "name": names["source"],
        }
        sync = item.get("sync_group_offsets", True)
        checkpoint = {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
            **common,
            "groups": as_regex(groups),
            # The groups' offsets on these topics only (as the source connector copies them).
            "topics": as_regex(topics),
            "checkpoints.topic.replication.factor": str(rf),
            "emit.checkpoints.interval.seconds": str(item.get("checkpoint_interval_seconds") or 60),
            "sync.group.offsets.enabled": "true" if sync else "false",
            "sync.group.offsets.interval.seconds": str(item.get("checkpoint_interval_seconds") or 60),
            "refresh.groups.interval.seconds": refresh,
            "name": names["checkpoint"],
        }
        copies = [f"{alias}.{t}" for t in topics] if policy == "default" else topics
        internal = [f"mm2-offset-syncs.{alias}.internal", f"{alias}.checkpoints.internal"]
        plan["connectors"].append(
            {"name": names["source"], "config": source, "state": "present", "reads": [], "writes": copies}
        )
        # Checkpoints only for declared groups (a checkpoint connector with no group to translate has no task).
        plan["connectors"].append(
            {"name": names["checkpoint"], "config": checkpoint, "state": "present", "reads": [], "writes": []}
            if groups
            else {"name": names["checkpoint"], "config": {}, "state": "absent", "reads": [], "writes": []}
        )
        plan["acls"] += _acls(user, copies, internal, groups if sync else [])
        plan["mirrors"][alias] = {"topics": topics, "groups": groups, "policy": policy, "cluster": cluster}
        plan["source_acls"][alias] = _acls_source(cluster["user"], topics, groups)
    return plan


def _acls(user: str, copies: list[str], internal: list[str], groups: list[str]) -> list[dict[str, str]]:
    """On this cluster, for the workers' user: the copies (made, written, their partitions and configs kept in step with
    the source's, read where group offsets are committed for them), the mirror's two internal topics, and the groups
    whose offsets it commits here."""
    operations = ("create", "write", "read", "describe", "alter", "alter_configs", "describe_configs")
    acls = pattern_acls(user, "topic", copies, operations)
    acls += pattern_acls(user, "topic", internal, ("create", "write", "read", "describe"))
    acls += pattern_acls(user, "group", groups, ("read", "describe"))
    return acls


def _acls_source(user: str, topics: list[str], groups: list[str]) -> list[dict[str, str]]:
    """On the source cluster, for the mirror's user there: reads only (offset syncs and checkpoints are kept here), and
    the mirrored groups' offsets, which a failback (module kafka_mirror_group) commits there as that user."""
    acls = pattern_acls(user, "topic", topics, ("read", "describe", "describe_configs"))
    return acls + pattern_acls(user, "group", groups, ("describe", "read"))


# ---- moving a consumer group between the sites (module kafka_mirror_group) -------------------------------------------
# MirrorMaker 2's records, as connect-mirror writes them (Kafka protocol types, big-endian; STRING = int16 length +
# UTF-8). An offset sync (topic mm2-offset-syncs.<source>.internal, here: offset-syncs.topic.location=target): key
# {topic STRING (the source's name), partition INT32}, value {upstream INT64, downstream INT64}, no version. A
# checkpoint (<source>.checkpoints.internal): key {group STRING, topic STRING (the copy's name), partition INT32},
# value int16 version 0, {upstream INT64, downstream INT64, metadata STRING}.


def _string(data: bytes, at: int) -> tuple[str, int]:
    size = int.from_bytes(data[at : at + 2], "big", signed=True)
    return data[at + 2 : at + 2 + size].decode("utf-8"), at + 2 + size


def decode_offset_sync(key: bytes, value: bytes) -> tuple[str, int, int, int]:
    """(source topic, partition, upstream offset, downstream offset)."""
    topic, at = _string(key, 0)
    partition = int.from_bytes(key[at : at + 4], "big", signed=True)
    upstream = int.from_bytes(value[0:8], "big", signed=True)
    downstream = int.from_bytes(value[8:16], "big", signed=True)
    return topic, partition, upstream, downstream


def decode_checkpoint(key: bytes, value: bytes) -> dict[str, Any]:
    """{group, topic (the copy's name), partition, upstream, downstream}."""
    group, at = _string(key, 0)
    topic, at = _string(key, at)
    partition = int.from_bytes(key[at : at + 4], "big", signed=True)
    upstream = int.from_bytes(value[2:10], "big", signed=True)
    downstream = int.from_bytes(value[10:18], "big", signed=True)
    return {"group": group, "topic": topic, "partition": partition, "upstream": upstream, "downstream": downstream}


def copy_name(alias: str, topic: str, policy: str) -> str:
    """The name a source topic's copy has on this cluster."""
    return f"{alias}.{topic}" if policy == "default" else topic


def source_name(alias: str, copy: str, policy: str) -> str | None:
    """The source topic a copy on this cluster is of (None for a topic that is no copy from alias)."""
    if policy != "default":
        return copy
    return copy[len(alias) + 1 :] if copy.startswith(f"{alias}.") else None


def covered(patterns: list[str], name: str) -> bool:
    """Whether a mirror's topics or groups (names, or prefixes ending in *) cover a name."""
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def translate_down(syncs: list[tuple[int, int]], upstream: int) -> tuple[int, int] | None:
    """MirrorMaker's own translation of a source offset to the copy's (OffsetSyncStore): from the newest sync at or
    before it, its downstream offset, plus one when the group is past the synced record (so nothing is skipped; the
    records between the sync and the group's position are read again). (offset, records at most read again), or None
    when no sync is that old."""
    usable = [(u, d) for u, d in syncs if u <= upstream]
    if not usable:
        return None
    u, d = max(usable)
    return (d if upstream == u else d + 1), upstream - u - (0 if upstream == u else 1)


def checkpoint_reread(syncs: list[tuple[int, int]], upstream: int, downstream: int) -> int:
    """How many records a group reads again at most when it resumes at a checkpoint's downstream offset: MirrorMaker
    translated its upstream offset through an offset sync (u, d) it kept (it keeps some, not all), giving d when the
    group was at u, else d + 1. So the sync at downstream - 1 (the group was past it) or at downstream (exact) tells;
    without either, the newest sync before the checkpoint bounds it, and without any, everything before it."""
    by_down = {d: u for u, d in syncs}
    if by_down.get(downstream) == upstream:
        return 0
    if downstream - 1 in by_down and by_down[downstream - 1] < upstream:
        return upstream - by_down[downstream - 1] - 1
    older = [u for u, d in syncs if d < downstream and u < upstream]
    return upstream - max(older) if older else upstream


def translate_up(syncs: list[tuple[int, int]], downstream: int) -> tuple[int, int] | None:
    """The same, the other way (a group moving back to the source): from the newest sync at or before the copy's
    offset, its upstream offset, plus one when the group is past it. (offset, records at most read again) or None."""
    usable = [(d, u) for u, d in syncs if d <= downstream]
    if not usable:
        return None
    d, u = max(usable)
    return (u if downstream == d else u + 1), downstream - d - (0 if downstream == d else 1)
