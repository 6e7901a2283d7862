"""Cluster health as Kafka's own tools print it, and the restart gates built on it (kafka_gate module).

The tools print text only (kafka-topics, kafka-metadata-quorum and kafka-broker-api-versions have no
JSON output), so the parsers here read the documented line formats of Kafka 3.9 and 4.x and are
unit-tested against recorded output. Pure functions: no I/O, so tests need no cluster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_PARTITION = re.compile(
    r"Topic:\s*(?P<topic>\S+)\s+Partition:\s*(?P<partition>\d+)\s+Leader:\s*(?P<leader>\S+)\s+"
    r"Replicas:\s*(?P<replicas>[\d,]*)\s+Isr:\s*(?P<isr>[\d,]*)"
)
_TOPIC_HEADER = re.compile(r"Topic:\s*(?P<topic>\S+)\s+TopicId:.*?PartitionCount:")
_MIN_ISR = re.compile(r"(?:^|[\s,])min\.insync\.replicas=(\d+)")
_BROKER = re.compile(r"\(id: (?P<id>-?\d+) rack: (?P<rack>\S+?)(?: isFenced: (?P<fenced>true|false))?\)\s*->")


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def describe(self) -> str:
        return (
            f"{self.name} (replicas {','.join(map(str, self.replicas))}, "
            f"in sync {','.join(map(str, self.isr)) or 'none'}, min.insync.replicas {self.min_isr})"
        )


@dataclass(frozen=True)
class Voter:
    node_id: int
    lag: int
    status: str


@dataclass
class Health:
    """What one look at the cluster found: problems that must clear, and facts the play uses."""

    problems: list[str] = field(default_factory=list)
    leader_id: int | None = None
    # Offline partitions whose only replicas were on a node that came back with an empty log dir (kafka_gate
    # with formatted=true): replication cannot bring them back, so waiting is pointless.
    lost: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def parse_topics(text: str, default_min_isr: int) -> list[Partition]:
    """Every partition of `kafka-topics --describe`, with its topic's min.insync.replicas.

    The topic header's `Configs:` lists the topic's overrides; a topic without a min.insync.replicas
    override uses the brokers' (default_min_isr), as Kafka does.
    """
    min_isr: dict[str, int] = {}
    partitions: list[Partition] = []
    for line in text.splitlines():
        header = _TOPIC_HEADER.search(line)
        if header:
            configs = line.split("Configs:", 1)[1] if "Configs:" in line else ""
            match = _MIN_ISR.search(configs)
            min_isr[header["topic"]] = int(match.group(1)) if match else default_min_isr
            continue
        match = _PARTITION.search(line)
        if not match:
            continue
        leader_text = match["leader"]
        leader = int(leader_text) if re.fullmatch(r"\d+", leader_text) else None
        partitions.append(
            Partition(
                topic=match["topic"],
                partition=int(match["partition"]),
                leader=leader,
                replicas=_ids(match["replicas"]),
                isr=_ids(match["isr"]),
                min_isr=min_isr.get(match["topic"], default_min_isr),
            )
        )
    return partitions


def parse_voters(text: str) -> list[Voter]:
    """The voters (Leader and Follower rows) of `kafka-metadata-quorum describe --replication`."""
    return [row for row in parse_replication(text) if row.status in ("Leader", "Follower")]


def parse_quorum_status(text: str) -> dict[str, Any]:
    """`kafka-metadata-quorum describe --status`: the leader, and the voters and observers (id, directory id).

    CurrentVoters and CurrentObservers are JSON lists (3.9 and 4.x print the same shape); with a static quorum
    the directory ids are all zero (AAAAAAAAAAAAAAAAAAAAAA).
    """
    status: dict[str, Any] = {"leader_id": None, "epoch": None, "voters": [], "observers": []}
    for line in text.splitlines():
        key, _colon, value = line.partition(":")
        value = value.strip()
        if key == "LeaderId" and re.fullmatch(r"-?\d+", value):
            status["leader_id"] = int(value)
        elif key == "LeaderEpoch" and value.isdigit():
            status["epoch"] = int(value)
        elif key in ("CurrentVoters", "CurrentObservers"):
            try:
                items = json.loads(value)
            except ValueError:
                continue
            status["voters" if key == "CurrentVoters" else "observers"] = [
                {"id": int(item["id"]), "directory_id": str(item.get("directoryId", ""))}
                for item in items
                if isinstance(item, Mapping) and "id" in item
            ]
    return status


def parse_replication(text: str) -> list[Voter]:
    """Every row (Leader, Follower, Observer) of `kafka-metadata-quorum describe --replication`."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = next((cols for cols in lines if "NodeId" in cols and "Lag" in cols and "Status" in cols), None)
    if header is None:
        return []
    at = {name: header.index(name) for name in ("NodeId", "Lag")}
    voters = []
    for cols in lines:
        if cols is header or len(cols) < len(header) or not re.fullmatch(r"-?\d+", cols[at["NodeId"]]):
            continue
        voters.append(Voter(int(cols[at["NodeId"]]), int(cols[at["Lag"]]), cols[-1]))
    return voters


def parse_brokers(text: str) -> dict[int, bool]:
    """broker id -> fenced, from `kafka-broker-api-versions` (3.9 prints no isFenced: read as unfenced)."""
    return {int(m["id"]): m["fenced"] == "true" for m in _BROKER.finditer(text)}


def parse_racks(text: str) -> dict[int, str | None]:
    """broker id -> broker.rack (None when unset: "rack: null"), from `kafka-broker-api-versions`."""
    return {int(m["id"]): (None if m["rack"] == "null" else m["rack"]) for m in _BROKER.finditer(text)}


def parse_zookeeper_ids(text: str) -> list[int]:
    """The children of /brokers/ids from `zookeeper-shell ... ls /brokers/ids` (its last list line)."""
    lists = [line for line in text.splitlines() if re.fullmatch(r"\[[0-9, ]*\]", line.strip())]
    return sorted(int(n) for n in re.findall(r"\d+", lists[-1])) if lists else []


def parse_zookeeper_controller(text: str) -> int | None:
    """The broker id in /controller (`zookeeper-shell ... get /controller`), the active controller."""
    match = re.search(r'"brokerid"\s*:\s*(\d+)', text)
    return int(match.group(1)) if match else None


def parse_zookeeper_json(text: str) -> dict[str, Any] | None:
    """The JSON data of a znode (`zookeeper-shell ... get <path>`, its last {...} line); None when absent."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            return data if isinstance(data, dict) else None
    return None


def partition_problems(partitions: list[Partition], stopping: int | None, unprotected: Iterable[str] = ()) -> list[str]:
    """Partitions not healthy now; with `stopping`, also those that node's absence takes below min ISR.

    Healthy: a leader, every replica in sync, and in sync replicas at or above min.insync.replicas (or
    all of them, for a partition with fewer replicas than that: it never takes acks=all writes, by its
    topic's design). A node may stop only if every partition it is in sync for keeps min.insync.replicas
    without it (an RF 1 partition, or one already at min ISR, would stop taking writes), unless its topic
    is one the operator declared unprotected (a lab's deliberately unreplicated exercise topics).
    """
    skip = set(unprotected)
    problems = []
    for p in partitions:
        if p.leader is None:
            problems.append(f"partition {p.describe()} has no leader (offline)")
        elif len(p.isr) < min(p.min_isr, len(p.replicas)):
            problems.append(f"partition {p.describe()} is under min ISR")
        elif len(p.isr) < len(p.replicas):
            problems.append(f"partition {p.describe()} is under-replicated")
        elif p.topic in skip:
            continue
        elif stopping is not None and stopping in p.isr and len(p.isr) - 1 < p.min_isr:
            problems.append(
                f"stopping node {stopping} would take partition {p.describe()} below min.insync.replicas"
                + (" and make it unavailable" if len(p.isr) == 1 else "")
            )
    return problems


def sole_replicas(partitions: Iterable[Partition], node: int) -> list[Partition]:
    """The partitions whose only replica is on `node`: when it comes back with an empty log dir (a replaced
    disk), their data went with the old disk and no other broker holds a copy."""
    return [p for p in partitions if p.replicas and set(p.replicas) == {node}]


def lost_partitions(partitions: Iterable[Partition], node: int) -> list[str]:
    """Those of sole_replicas that are offline: replication cannot bring them back, so nothing waits for them."""
    return [p.name for p in sole_replicas(partitions, node) if p.leader is None]


def quorum_problems(voters: list[Voter], node_id: int, stopping: bool, lag_max: int) -> list[str]:
    """The controller quorum: has a leader; `node_id` (a voter) is caught up; stopping it keeps a majority.

    Caught up means a lag of at most lag_max records behind the leader's log end. A quorum of one voter
    (an inventory with one controller, the classroom layout) keeps no majority through its own restart
    however long the gate waits, so that restart is let through: the metadata quorum is away until the
    node is back (the brokers keep serving the partition leaders they have; leadership cannot move
    meanwhile), which is what an inventory with one controller chose.
    """
    if not voters:
        return ["the metadata quorum reports no voters"]
    problems = []
    if not any(v.status == "Leader" for v in voters):
        problems.append("the metadata quorum has no leader")
    majority = len(voters) // 2 + 1
    mine = next((v for v in voters if v.node_id == node_id), None)
    if mine is None:
        problems.append(
            f"node {node_id} is not a voter of the metadata quorum ({', '.join(str(v.node_id) for v in voters)})"
        )
    elif mine.lag > lag_max:
        problems.append(f"controller {node_id} is {mine.lag} records behind the leader (at most {lag_max} allowed)")
    if stopping and len(voters) > 1:
        others = [v for v in voters if v.node_id != node_id and v.lag <= lag_max]
        if len(others) < majority:
            problems.append(
                f"stopping controller {node_id} would leave {len(others)} caught-up voters of {len(voters)} "
                f"(a majority is {majority}): voters {', '.join(f'{v.node_id} lag {v.lag}' for v in voters)}"
            )
    return problems


def broker_problems(registered: dict[int, bool] | list[int], expected: list[int]) -> list[str]:
    """Every expected broker registered (and, in KRaft mode, unfenced)."""
    if isinstance(registered, dict):
        missing = [b for b in expected if b not in registered]
        fenced = [b for b in expected if registered.get(b)]
    else:
        missing, fenced = [b for b in expected if b not in registered], []
    problems = []
    if missing:
        problems.append(f"broker(s) {', '.join(map(str, missing))} not registered")
    if fenced:
        problems.append(f"broker(s) {', '.join(map(str, fenced))} fenced")
    return problems


# ---- ZooKeeper -> KRaft migration -----------------------------------------------------------------
# The phases of playbooks/migrate_to_kraft.yml, in order (the role's MIGRATION_PHASES, plus where a
# cluster starts): each later one includes the earlier ones.
MIGRATION_ORDER = ("zookeeper", "controllers", "brokers_migration", "brokers_kraft", "finalized")


@dataclass
class MigrationState:
    """Where a ZooKeeper -> KRaft migration stands, from ZooKeeper and from what each node runs."""

    phase: str = "zookeeper"
    problems: list[str] = field(default_factory=list)
    summary: str = ""


def migration_state(
    zk: Mapping[str, Any],
    stages: Mapping[str, str],
    brokers: Iterable[str],
    controllers: Iterable[str],
    disk_cluster_ids: Iterable[str],
    target: str,
    finalize: bool,
) -> MigrationState:
    """The furthest phase the cluster has reached, and what refuses the run.

    zk: what ZooKeeper holds - cluster_id (/cluster/id, None when absent), brokers (/brokers/ids: the brokers
    running in ZooKeeper mode), controller (/controller's JSON: a KRaft controller claims it with
    kraftControllerEpoch >= 0), migration (/migration's JSON: kraft_metadata_offset >= 0 once the active
    controller has copied the metadata). stages: each node's stage_of_properties. target: migrate or rollback.
    """
    brokers, controllers = list(brokers), list(controllers)
    state = MigrationState()
    b = {h: stages.get(h, "none") for h in brokers}
    c = {h: stages.get(h, "none") for h in controllers}
    migration = zk.get("migration") or {}
    migrated = int(migration.get("kraft_metadata_offset", -1)) >= 0
    in_zookeeper = list(zk.get("brokers") or [])
    zk_id, disk_ids = zk.get("cluster_id"), sorted(set(disk_cluster_ids))
    if zk_id is None or (disk_ids and zk_id not in disk_ids):
        state.problems.append(
            f"this cluster is already KRaft: its brokers hold cluster id {', '.join(disk_ids) or '(none yet)'} but "
            f"ZooKeeper ({'no /cluster/id' if zk_id is None else 'cluster id ' + zk_id}) holds no such Kafka cluster. "
            "There is nothing to migrate: run playbooks/site.yml (kafka_mode: kraft, group zookeeper empty)."
        )
    if c and any(v == "kraft" for v in c.values()):
        state.phase = "finalized"
    elif any(v == "kraft" for v in b.values()) or (migrated and not in_zookeeper and b):
        state.phase = "brokers_kraft"
    elif any(v == "migration" for v in b.values()) or migrated:
        state.phase = "brokers_migration"
    elif any(v == "migration" for v in c.values()):
        state.phase = "controllers"
    state.summary = (
        f"phase {state.phase}: brokers {', '.join(f'{h} {v}' for h, v in b.items())}; controllers "
        f"{', '.join(f'{h} {v}' for h, v in c.items()) or 'none'}; in ZooKeeper: brokers {in_zookeeper or 'none'}, "
        f"metadata {'migrated' if migrated else 'not migrated'}"
    )
    not_kraft = [h for h, v in b.items() if v != "kraft"]
    if target == "migrate" and finalize and (not_kraft or in_zookeeper):
        state.problems.append(
            f"kafka_migration_finalize is true but {', '.join(not_kraft) or 'brokers ' + str(in_zookeeper)} still "
            "run in ZooKeeper mode: finalizing would cut them off, and cannot be undone. Run "
            "playbooks/migrate_to_kraft.yml without kafka_migration_finalize first (it moves every broker to KRaft), "
            "check the cluster, then finalize."
        )
    if target == "rollback" and state.phase == "finalized":
        state.problems.append(
            f"the migration was finalized ({', '.join(h for h, v in c.items() if v == 'kraft')} run without "
            "zookeeper.metadata.migration.enable): Kafka cannot go back to ZooKeeper mode after that. "
            "Nothing was changed."
        )
    return state
