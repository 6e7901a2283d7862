"""The load harness's accounting, as pure functions of what the state files and the cluster say.

A phase is the stretch of the run between two checkpoints (the first one starts with the run, the last
one ends at `stop`). For each phase the harness proves nothing acknowledged so far is lost, duplicated,
moved or reordered (e2e.compare over the whole run), says how long acknowledgements stopped at worst
during the phase, and checks the consumer group's committed offsets survived: the offsets the cluster
holds now are at least the last ones the group member saw committed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from kafkalab.e2e import DeliveryReport, Record
from kafkalab.load.restarts import Restart

# How many sequence numbers a message names before it says "...".
FIRST = 5


def acked_from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Record], list[float]]:
    """acked.jsonl rows as records and their ack times, in the file's (ack) order."""
    records: list[Record] = []
    times: list[float] = []
    for row in rows:
        records.append(Record(int(row["partition"]), int(row["offset"]), str(row.get("key", "")), int(row["seq"])))
        times.append(float(row["t"]))
    return records, times


def group_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Record]:
    """group.jsonl rows as records (the member does not keep keys)."""
    return [Record(int(r["partition"]), int(r["offset"]), "", int(r["seq"])) for r in rows]


def seqs_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[int]:
    """failed.jsonl rows: the sequence numbers whose send failed."""
    return sorted(int(r["seq"]) for r in rows)


def longest_gap(times: Sequence[float]) -> float:
    """The longest time between two consecutive acks; 0.0 with fewer than two acks.

    Acks of different partitions complete in any order, so the times are sorted first.
    """
    ordered = sorted(times)
    return max((b - a for a, b in pairwise(ordered)), default=0.0)


@dataclass(frozen=True)
class PhaseAcks:
    """The acks of one phase: how many, and the longest stretch without one."""

    start: int  # index of the phase's first ack in acked.jsonl
    end: int  # one past its last
    acks: int
    longest_gap_s: float
    last_ack_age_s: float | None  # from the run's last ack to the accounting; None before any ack


def phase_acks(times: Sequence[float], start: int, now: float) -> PhaseAcks:
    """The acks from index `start` (where the previous checkpoint stopped counting) to the end.

    The gap that straddles the phase boundary belongs to this phase: the last ack of the previous phase
    is counted as the starting point, so a pause that began just before a checkpoint is not hidden.
    An empty phase has no acks and no gap; its last_ack_age_s says how long the acks have stopped.
    """
    start = max(0, min(start, len(times)))
    anchor = start - 1 if start > 0 else 0
    window = times[anchor:] if len(times) > start else []
    age = round(max(0.0, now - max(times)), 3) if times else None
    return PhaseAcks(start, len(times), len(times) - start, round(longest_gap(window), 3), age)


def previous_index(phases: Sequence[Mapping[str, Any]]) -> int:
    """Where the last checkpoint stopped counting acks (0 before the first)."""
    return int(phases[-1]["acked_index"]) if phases else 0


def last_commits(rows: Iterable[Mapping[str, Any]], before: float | None = None) -> dict[int, int]:
    """Per partition, the offset of the last commit the member recorded (at or before `before`).

    commits.jsonl rows name only the partitions each commit carried, so the latest row that names a
    partition holds its last committed offset.
    """
    last: dict[int, int] = {}
    for row in rows:
        if before is not None and float(row["t"]) > before:
            continue
        for partition, offset in row["offsets"].items():
            last[int(partition)] = int(offset)
    return last


@dataclass(frozen=True)
class OffsetProblem:
    """A partition whose committed offset in the cluster is behind what the member saw committed."""

    partition: int
    recorded: int
    current: int | None  # None: the cluster holds no committed offset for it any more

    def describe(self) -> str:
        if self.current is None:
            return f"partition {self.partition}: committed offset vanished (member committed {self.recorded})"
        return f"partition {self.partition}: committed offset {self.current} < {self.recorded} the member committed"


def offset_regressions(recorded: Mapping[int, int], current: Mapping[int, int]) -> list[OffsetProblem]:
    """Partitions whose committed offset went back or vanished since the member recorded its commit."""
    return [
        OffsetProblem(p, off, current.get(p))
        for p, off in sorted(recorded.items())
        if current.get(p) is None or current[p] < off
    ]


def group_offsets_status(recorded: Mapping[int, int], problems: Sequence[OffsetProblem]) -> str:
    """One word for the report line: kept, went_back, vanished (or both), or none_recorded."""
    if not recorded:
        return "none_recorded"
    kinds = []
    if any(p.current is not None for p in problems):
        kinds.append("went_back")
    if any(p.current is None for p in problems):
        kinds.append("vanished")
    return "+".join(kinds) or "kept"


def committed_short_of_acked(acked: Iterable[Record], committed: Mapping[int, int]) -> list[str]:
    """Partitions where the group's committed offset does not pass every acked record (checked at stop)."""
    needed: dict[int, int] = {}
    for r in acked:
        needed[r.partition] = max(needed.get(r.partition, 0), r.offset + 1)
    return [
        f"partition {p}: committed {committed.get(p, 'nothing')}, acked records up to offset {need - 1}"
        for p, need in sorted(needed.items())
        if committed.get(p, -1) < need
    ]


@dataclass(frozen=True)
class GroupCoverage:
    """What the group member consumed of the acked records: at-least-once, so duplicates are only counted."""

    consumed: int
    missing: list[int]
    duplicates: int  # deliveries beyond the first (re-reads after a rebalance or a failed commit)


def group_coverage(acked: Iterable[Record], consumed: Iterable[Record]) -> GroupCoverage:
    counts = Counter(r.seq for r in consumed)
    return GroupCoverage(
        consumed=sum(counts.values()),
        missing=sorted({r.seq for r in acked} - set(counts)),
        duplicates=sum(n - 1 for n in counts.values() if n > 1),
    )


def first(seqs: Sequence[int]) -> str:
    """The first few sequence numbers, for a message."""
    head = ", ".join(str(s) for s in seqs[:FIRST])
    return head + (", ..." if len(seqs) > FIRST else "")


@dataclass
class PhaseReport:
    """Everything one checkpoint (kind "checkpoint") or the final accounting (kind "stop") found."""

    phase: str
    kind: str
    at: float
    delivery: DeliveryReport
    acks: PhaseAcks
    group_offsets: str
    offset_problems: list[OffsetProblem] = field(default_factory=list)
    unread: dict[int, int] = field(default_factory=dict)  # partitions the reader did not get to the end of
    failed_sends: list[int] | None = None  # stop only
    group: GroupCoverage | None = None  # stop only
    committed_short: list[str] = field(default_factory=list)  # stop only
    group_member_restarts: int | None = None  # stop only: members started after one stalled (runner.STALL_S)
    process_problems: list[str] = field(default_factory=list)
    wall_s: float | None = None  # since the previous checkpoint (or the load's start)
    restarts: list[Restart] = field(default_factory=list)  # from the phase's playbook logs (--ansible-log)

    def problems(self) -> list[str]:
        """One sentence per failure; empty when the phase passed."""
        d, out = self.delivery, list(self.process_problems)
        if self.unread:
            short = ", ".join(f"{p} ({'?' if n < 0 else n} left)" for p, n in sorted(self.unread.items()))
            out.append(
                f"the topic could not be read to its end offsets (partitions {short}): lost/duplicated "
                "below are not final; rerun once the cluster answers, or raise --timeout"
            )
        if d.lost:
            out.append(f"{len(d.lost)} acked records lost (first seq: {first(d.lost)})")
        if d.duplicated:
            out.append(f"{len(d.duplicated)} acked records stored more than once (first seq: {first(d.duplicated)})")
        if d.moved:
            out.append(f"{len(d.moved)} records read at another partition/offset than acked (first: {first(d.moved)})")
        if d.out_of_order_partitions:
            out.append(f"partitions read out of acked order: {d.out_of_order_partitions}")
        out += [f"group offsets: {p.describe()}" for p in self.offset_problems]
        if self.failed_sends:
            out.append(f"{len(self.failed_sends)} sends failed (first seq: {first(self.failed_sends)})")
        if self.group is not None and self.group.missing:
            out.append(
                f"the group member never consumed {len(self.group.missing)} acked records "
                f"(first seq: {first(self.group.missing)})"
            )
        out += [f"group commit short of the acked records: {s}" for s in self.committed_short]
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()

    def line(self) -> str:
        """The one line a person reads (and a playbook prints)."""
        d = self.delivery
        text = (
            f"phase={self.phase} acked={d.acked} consumed={d.consumed} lost={len(d.lost)} "
            f"duplicated={len(d.duplicated)} out_of_order={d.out_of_order_partitions} "
            f"longest_ack_gap_s={self.acks.longest_gap_s} group_offsets={self.group_offsets} "
            f"phase_acks={self.acks.acks} moved={len(d.moved)}"
        )
        if self.wall_s is not None:
            text += f" wall_s={self.wall_s:.0f}"
        if self.restarts:
            text += f" restarts={len(self.restarts)} isr_recovery_max_s={max(r.back_s for r in self.restarts)}"
        if self.failed_sends is not None:
            text += f" failed={len(self.failed_sends)}"
        if self.group is not None:
            text += (
                f" group_consumed={self.group.consumed} group_missing={len(self.group.missing)} "
                f"group_duplicates={self.group.duplicates}"
            )
        if self.group_member_restarts is not None:
            text += f" group_member_restarts={self.group_member_restarts}"
        return text + (" ok" if self.ok else " FAILED")

    def to_json(self) -> dict[str, Any]:
        d = self.delivery
        out: dict[str, Any] = {
            "phase": self.phase,
            "kind": self.kind,
            "at": round(self.at, 3),
            "ok": self.ok,
            "problems": self.problems(),
            "acked": d.acked,
            "consumed": d.consumed,
            "lost": len(d.lost),
            "lost_first": d.lost[:FIRST],
            "duplicated": len(d.duplicated),
            "duplicated_first": d.duplicated[:FIRST],
            "moved": len(d.moved),
            "out_of_order": d.out_of_order_partitions,
            "unacked_extra": len(d.unacked_extra),
            "unread_partitions": {str(p): n for p, n in sorted(self.unread.items())},
            "phase_acks": self.acks.acks,
            "phase_ack_range": [self.acks.start, self.acks.end],
            "longest_ack_gap_s": self.acks.longest_gap_s,
            "last_ack_age_s": self.acks.last_ack_age_s,
            "group_offsets": self.group_offsets,
            "group_offset_problems": [p.describe() for p in self.offset_problems],
            "wall_s": None if self.wall_s is None else round(self.wall_s, 1),
            "restarts": [r.to_json() for r in self.restarts],
        }
        if self.failed_sends is not None:
            out["failed_sends"] = len(self.failed_sends)
            out["failed_first"] = self.failed_sends[:FIRST]
        if self.group is not None:
            out["group_consumed"] = self.group.consumed
            out["group_missing"] = len(self.group.missing)
            out["group_missing_first"] = self.group.missing[:FIRST]
            out["group_duplicates"] = self.group.duplicates
            out["group_committed_short"] = self.committed_short
        if self.group_member_restarts is not None:
            out["group_member_restarts"] = self.group_member_restarts
        return out
