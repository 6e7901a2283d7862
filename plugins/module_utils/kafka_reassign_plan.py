"""Partition reassignment plans: spread replicas and leaders over the brokers, or move every replica off one.

Kafka's own `kafka-reassign-partitions --generate` draws a random assignment of every partition (most replicas
move, and a second run moves them again); an operator wants the fewest moves that even the cluster out, and the
same answer on a second run. The plans here change a partition only where a broker holds more than its share:
- replicas, per topic: each broker holds floor or ceil of (partitions x replication factor) / brokers of a topic's
  replicas; an over-share replica moves to the broker with the fewest (of the topic, then of the cluster) that is
  not already a replica of that partition;
- leaders, per topic: the preferred leader (a partition's first replica) is moved (by reordering the replicas,
  no data moves) from a broker that leads two more of the topic's partitions than another replica of it does.
Drain: every replica on the drained broker moves to the least loaded broker that is not a replica yet, then the
same two balancing passes run over the remaining brokers.
Racks (broker.rack, as the brokers report it): no move lowers the number of racks a partition's replicas span
(a balancing move that would is not made; a drained replica goes where the partition spans the most racks).
Without racks every broker counts as the same rack, and nothing changes.

Pure functions: no I/O. The kafka_reassign module runs the plans with the cluster's own tools.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the kafka_reassign module imports kafka_health itself; tests import this file alone
    from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import Partition

Assignment = dict[tuple[str, int], list[int]]


class PlanError(ValueError):
    """The cluster cannot take the plan (a replication factor larger than the brokers left)."""


def current_assignment(partitions: Iterable[Partition]) -> Assignment:
    return {(p.topic, p.partition): list(p.replicas) for p in partitions}


Racks = Mapping[int, "str | None"]


def _span(replicas: Iterable[int], racks: Racks) -> int:
    """How many racks the replicas are on (brokers without a rack count as one rack of their own)."""
    return len({racks.get(b) for b in replicas})


def _keeps_span(replicas: Sequence[int], b: int, c: int, racks: Racks) -> bool:
    """Whether replacing replica b by c keeps the partition on as many racks."""
    return not racks or _span([c if x == b else x for x in replicas], racks) >= _span(replicas, racks)


def _by_topic(assignment: Assignment) -> dict[str, list[tuple[str, int]]]:
    topics: dict[str, list[tuple[str, int]]] = {}
    for key in sorted(assignment):
        topics.setdefault(key[0], []).append(key)
    return topics


def _one_move(
    count: Counter[int],
    total: Counter[int],
    brokers: Sequence[int],
    pick: Callable[[int, int], tuple[str, int] | None],
) -> tuple[tuple[str, int], int, int] | None:
    """The next move of a topic: from the broker with the most to the one with the fewest (then fewest in the
    cluster) that can take one of its partitions, as long as the taker has at least two fewer."""
    for b in sorted(brokers, key=lambda x: (-count[x], -total[x], x)):
        for c in sorted(brokers, key=lambda x: (count[x], total[x], x)):
            if count[c] + 2 > count[b]:
                break
            key = pick(b, c)
            if key is not None:
                return key, b, c
    return None


def _even_out(
    count: Counter[int],
    total: Counter[int],
    brokers: Sequence[int],
    pick: Callable[[int, int], tuple[str, int] | None],
    apply: Callable[[tuple[str, int], int, int], None],
) -> None:
    """Makes the moves _one_move finds until there is none, keeping the topic's and the cluster's counts."""
    while (move := _one_move(count, total, brokers, pick)) is not None:
        key, b, c = move
        apply(key, b, c)
        for counter in (count, total):
            counter[b] -= 1
            counter[c] += 1


def _balance_replicas(assignment: Assignment, brokers: Sequence[int], racks: Racks) -> None:
    """Moves replicas of each topic off brokers that hold two more of it than another one (in place).

    Every move lowers the spread, so the loop ends with each broker holding floor or ceil of the topic's
    replicas over the brokers (where the replica sets allow it), after the fewest moves this greedy finds.
    """
    total: Counter[int] = Counter(b for replicas in assignment.values() for b in replicas if b in brokers)
    for keys in _by_topic(assignment).values():
        count: Counter[int] = Counter({b: 0 for b in brokers})
        for key in keys:
            count.update(b for b in assignment[key] if b in brokers)

        def pick(b: int, c: int, keys: list[tuple[str, int]] = keys) -> tuple[str, int] | None:
            # A partition the giver does not lead moves first: its leader stays where it is.
            fits = [
                k
                for k in keys
                if b in assignment[k] and c not in assignment[k] and _keeps_span(assignment[k], b, c, racks)
            ]
            return next((k for k in fits if assignment[k][0] != b), fits[0] if fits else None)

        def replace(key: tuple[str, int], b: int, c: int) -> None:
            replicas = assignment[key]
            replicas[replicas.index(b)] = c

        _even_out(count, total, brokers, pick, replace)


def _balance_leaders(assignment: Assignment, brokers: Sequence[int]) -> None:
    """Reorders replicas so that, per topic, no broker leads two more partitions than another replica of one of
    them (the first replica is the preferred leader; reordering moves no data)."""
    total: Counter[int] = Counter(r[0] for r in assignment.values() if r)
    for keys in _by_topic(assignment).values():
        leads: Counter[int] = Counter({b: 0 for b in brokers})
        leads.update(assignment[key][0] for key in keys if assignment[key])

        def pick(b: int, c: int, keys: list[tuple[str, int]] = keys) -> tuple[str, int] | None:
            return next((k for k in keys if assignment[k][:1] == [b] and c in assignment[k]), None)

        def lead(key: tuple[str, int], b: int, c: int) -> None:
            replicas = assignment[key]
            j = replicas.index(c)
            replicas[0], replicas[j] = c, b

        _even_out(leads, total, brokers, pick, lead)


def plan(
    partitions: Iterable[Partition], brokers: Iterable[int], drain: int | None = None, racks: Racks | None = None
) -> Assignment:
    """The partitions whose replicas change (topic, partition) -> new replica list; empty when balanced.

    brokers: the brokers the cluster keeps (without `drain`). Replicas on brokers outside the list stay where
    they are (preflight refuses a broker that leaves the inventory while it holds any). racks: broker -> its
    broker.rack (None: none); no rack at all: the plan ignores racks.
    """
    racks = racks if racks and any(racks.values()) else {}
    before = {p.name: p for p in partitions}
    current = current_assignment(before.values())
    keep = sorted(set(brokers) - {drain})
    if not keep:
        raise PlanError("no broker would be left to hold the replicas")
    if drain is not None:
        too_big = sorted({k[0] for k, r in current.items() if drain in r and len(r) > len(keep)})
        if too_big:
            raise PlanError(
                f"topic(s) {', '.join(too_big)} have more replicas per partition than the {len(keep)} broker(s) "
                f"left without node {drain}: lower their replication factor or add a broker first"
            )
    wanted = {k: list(r) for k, r in current.items()}
    if drain is not None:
        total: Counter[int] = Counter(b for r in wanted.values() for b in r if b in keep)
        for keys in _by_topic(wanted).values():
            count: Counter[int] = Counter({b: 0 for b in keep})
            count.update(b for k in keys for b in wanted[k] if b in keep)
            for key in keys:
                replicas = wanted[key]
                if drain not in replicas:
                    continue
                target = min(
                    (c for c in keep if c not in replicas),
                    key=lambda c: (-_span([c if x == drain else x for x in replicas], racks), count[c], total[c], c),
                )
                replicas[replicas.index(drain)] = target
                count[target] += 1
                total[target] += 1
    _balance_replicas(wanted, keep, racks)
    _balance_leaders(wanted, keep)
    return {k: r for k, r in wanted.items() if r != current[k]}


def moved_replicas(partitions: Iterable[Partition], changes: Mapping[tuple[str, int], Sequence[int]]) -> int:
    """How many replicas the plan copies (a broker that joins a partition's replica set)."""
    current = current_assignment(partitions)
    return sum(len(set(r) - set(current[k])) for k, r in changes.items())


def plan_json(changes: Mapping[tuple[str, int], Sequence[int]]) -> str:
    """The --reassignment-json-file of a plan."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(changes.items())],
        },
        sort_keys=True,
    )


def election_json(keys: Iterable[tuple[str, int]]) -> str:
    """The --path-to-json-file of kafka-leader-election for some partitions."""
    return json.dumps({"partitions": [{"topic": t, "partition": p} for t, p in sorted(keys)]})


def counts(partitions: Iterable[Partition], brokers: Iterable[int]) -> dict[int, dict[str, int]]:
    """broker -> replicas it holds and partitions it leads (the current leader), for the report."""
    result = {b: {"replicas": 0, "leaders": 0} for b in brokers}
    for p in partitions:
        for b in p.replicas:
            result.setdefault(b, {"replicas": 0, "leaders": 0})["replicas"] += 1
        if p.leader is not None:
            result.setdefault(p.leader, {"replicas": 0, "leaders": 0})["leaders"] += 1
    return result


def held_by(partitions: Iterable[Partition], node: int) -> list[str]:
    """The partitions with a replica on `node`."""
    return [p.name for p in partitions if node in p.replicas]


def parse_log_dirs(text: str) -> dict[int, dict[str, int]]:
    """`kafka-log-dirs --describe`: broker -> partition name -> bytes on that broker (its JSON line)."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        sizes: dict[int, dict[str, int]] = {}
        for broker in data.get("brokers", []):
            mine = sizes.setdefault(int(broker["broker"]), {})
            for log_dir in broker.get("logDirs", []):
                for part in log_dir.get("partitions", []):
                    mine[str(part["partition"])] = mine.get(str(part["partition"]), 0) + int(part.get("size", 0))
        return sizes
    return {}


def bytes_to_copy(
    partitions: Iterable[Partition],
    changes: Mapping[tuple[str, int], Sequence[int]],
    sizes: Mapping[int, Mapping[str, int]],
) -> int:
    """Bytes the plan copies: each added replica copies its partition's size on the leader."""
    by_name = {(p.topic, p.partition): p for p in partitions}
    total = 0
    for key, replicas in changes.items():
        p = by_name[key]
        added = len(set(replicas) - set(p.replicas))
        source = p.leader if p.leader is not None else (p.replicas[0] if p.replicas else None)
        total += added * int(sizes.get(source, {}).get(p.name, 0)) if source is not None else 0
    return total


_IN_PROGRESS = re.compile(r"Reassignment of partition (\S+) is still in progress")
_FAILED = re.compile(r"Reassignment of partition (\S+) (?:failed|is not completed)[^\n]*")
_LISTED = re.compile(r"^(\S+-\d+): replicas: ", re.MULTILINE)


def verify_state(text: str) -> dict[str, Any]:
    """`kafka-reassign-partitions --verify`: partitions still moving, and any the tool reports as failed."""
    return {"in_progress": _IN_PROGRESS.findall(text), "failed": [m.group(0) for m in _FAILED.finditer(text)]}


def listed_reassignments(text: str) -> list[str]:
    """`kafka-reassign-partitions --list`: the partitions being reassigned now."""
    return _LISTED.findall(text)
