"""The Spark job's progress log, read back: its micro-batches, produce-to-Parquet latencies and processed rates.

Pure functions of the log lines kafkalab_spark.progress writes and of the (partition, offset, sent_at) of
each record the bench produced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkalab.bench.parsing import iso_seconds


@dataclass(frozen=True)
class Batch:
    """One micro-batch of the job's `records` query, from its progress log line."""

    batch_id: int
    started: float  # epoch seconds: the trigger's start
    duration_s: float  # triggerExecution: planning, reading, writing Parquet and the commit
    rows: int
    start_offset: dict[int, int]
    end_offset: dict[int, int]

    @property
    def committed(self) -> float:
        return self.started + self.duration_s


def parse_progress(log: str, topic: str, query: str = "records") -> list[Batch]:
    """The job's `progress query=<name> ... progress_json={...}` log lines (kafkalab_spark.progress)."""
    batches: dict[int, Batch] = {}
    marker = f"progress query={query} "
    for line in log.splitlines():
        if marker not in line or "progress_json=" not in line:
            continue
        summary = json.loads(line.split("progress_json=", 1)[1])
        if summary.get("batch_id") is None or not summary.get("timestamp"):
            continue
        batch = Batch(
            batch_id=int(summary["batch_id"]),
            started=iso_seconds(str(summary["timestamp"])),
            duration_s=int(summary.get("trigger_execution_ms") or 0) / 1000,
            rows=int(summary.get("num_input_rows") or 0),
            start_offset={int(p): int(o) for p, o in (summary.get("start_offset") or {}).get(topic, {}).items()},
            end_offset={int(p): int(o) for p, o in (summary.get("end_offset") or {}).get(topic, {}).items()},
        )
        batches[batch.batch_id] = batch  # a batch re-run after a restart reports again: keep the last
    return [batches[b] for b in sorted(batches)]


def commit_times(sent: Iterable[tuple[int, int, float]], batches: Sequence[Batch]) -> list[tuple[float, float | None]]:
    """For each (partition, offset, sent_at): (sent_at, when the batch holding that offset committed)."""
    ranges = sorted(
        ((p, b.start_offset.get(p, 0), end, b.committed) for b in batches if b.rows for p, end in b.end_offset.items()),
    )
    out: list[tuple[float, float | None]] = []
    for partition, offset, sent_at in sent:
        committed = next((c for p, lo, hi, c in ranges if p == partition and lo <= offset < hi), None)
        out.append((sent_at, committed))
    return out


def e2e_latencies_ms(sent: Iterable[tuple[int, int, float]], batches: Sequence[Batch]) -> tuple[list[float], int]:
    """Produce-to-Parquet latency of each record (ms), and how many records no committed batch holds."""
    pairs = commit_times(sent, batches)
    latencies = [(c - s) * 1000 for s, c in pairs if c is not None]
    return latencies, sum(1 for _, c in pairs if c is None)


def processed_rate(batches: Iterable[Batch]) -> dict[str, float]:
    """Rows per second of busy time over batches that read something (Spark's processedRowsPerSecond)."""
    busy = [b for b in batches if b.rows]
    rows = sum(b.rows for b in busy)
    seconds = sum(b.duration_s for b in busy)
    return {
        "rows": rows,
        "batches": len(busy),
        "busy_s": round(seconds, 3),
        "rows_per_s": rows / seconds if seconds else 0.0,
    }


def end_offsets_wanted(records: Iterable[tuple[int, int]]) -> dict[str, int]:
    """Per partition, the end offset a batch must reach to hold every (partition, offset) given."""
    wanted: dict[str, int] = {}
    for partition, offset in records:
        wanted[str(partition)] = max(wanted.get(str(partition), 0), offset + 1)
    return wanted


def realtime_latencies(
    sent: Iterable[tuple[int, int, float]], forwarded: Iterable[tuple[int, int, int]]
) -> tuple[list[tuple[float, float]], list[tuple[int, int, float]], int]:
    """Produce-to-output latency of the low-latency path: for each (partition, offset, sent_at) sent, the first
    output record forwarded for that input position ((partition, offset, output timestamp in ms)). Returns
    (sent_at, latency ms) pairs, the sent records never forwarded (partition, offset, sent_at), and how many were
    forwarded more than once (the path is at least once)."""
    first: dict[tuple[int, int], int] = {}
    copies: dict[tuple[int, int], int] = {}
    for partition, offset, ts_ms in forwarded:
        key = (partition, offset)
        copies[key] = copies.get(key, 0) + 1
        first[key] = min(first.get(key, ts_ms), ts_ms)
    pairs: list[tuple[float, float]] = []
    missing: list[tuple[int, int, float]] = []
    duplicated = 0
    for partition, offset, sent_at in sent:
        key = (partition, offset)
        if key not in first:
            missing.append((partition, offset, sent_at))
            continue
        duplicated += copies[key] > 1
        pairs.append((sent_at, first[key] - sent_at * 1000))
    return pairs, missing, duplicated


def latency_series(pairs: Sequence[tuple[float, float]], since: float, points: int = 1500) -> list[list[float]]:
    """(seconds since `since`, latency ms) for a plot over time, thinned evenly to at most `points`."""
    ordered = sorted(pairs)
    step = max(1, len(ordered) // points)
    return [[round(t - since, 3), round(ms, 1)] for t, ms in ordered[::step]]
