"""What the job tells an operator: a status file rewritten after every micro-batch, and one log line each.

The status file (JSON, replaced atomically) holds, per streaming query, the last batch's input and
processed rows per second and how many offsets it is behind the latest, plus where this run of the
job started: from its checkpoint (the offsets of the last committed batch) or from startingOffsets.
The functions here are pure over plain dicts, so they are unit tested without Spark.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Offsets = dict[str, dict[str, int]]  # topic -> partition -> offset


@dataclass(frozen=True)
class CheckpointState:
    """The last batch a query committed, read from its checkpoint before the query starts."""

    batch_id: int
    offsets: Offsets
    # The last batch planned (offsets/<n>): above batch_id when a batch was cut off before its commit, and
    # the restarted query runs it again with the same offsets.
    planned_batch_id: int = -1


def _batch_ids(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def read_checkpoint(checkpoint: str | Path) -> CheckpointState | None:
    """The last committed batch of a Structured Streaming checkpoint and its Kafka end offsets.

    offsets/<n> is written before batch n runs and commits/<n> after it succeeded; a batch planned
    but not committed is re-run with the same offsets on restart, so only committed ones count here.
    The offsets file is a version line, a metadata line, then one JSON line per source.
    """
    root = Path(checkpoint)
    committed = _batch_ids(root / "commits")
    if not committed:
        return None
    batch = committed[-1]
    lines = (root / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
    offsets: Offsets = {}
    for line in lines[2:]:
        if line.strip().startswith("{"):
            for name, position in json.loads(line).items():
                if isinstance(position, dict):  # the Kafka source: topic -> partition -> offset
                    offsets.setdefault(name, {}).update({str(p): int(o) for p, o in position.items()})
                else:  # a file source (the windowed counts read the archive): {"logOffset": n}
                    offsets.setdefault("files", {})[name] = int(position)
    planned = _batch_ids(root / "offsets")
    return CheckpointState(batch, offsets, planned[-1] if planned else batch)


def _offsets(value: Any) -> Offsets:
    """A Kafka source offset as the progress reports it: a JSON string, a dict, or nothing."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("{") else {}
    if not isinstance(value, Mapping):
        return {}
    offsets: Offsets = {}
    for name, position in value.items():
        if isinstance(position, Mapping):  # the Kafka source: topic -> partition -> offset
            offsets[str(name)] = {str(p): int(o) for p, o in position.items()}
        else:  # a file source: {"logOffset": n}
            offsets.setdefault("files", {})[str(name)] = int(position)
    return offsets


def offsets_behind(end: Offsets, latest: Offsets) -> int:
    """How many records the query has yet to read: latest minus end offset, summed over partitions."""
    return sum(
        max(0, offset - end.get(topic, {}).get(partition, 0))
        for topic, parts in latest.items()
        for partition, offset in parts.items()
    )


def summarize_progress(progress: Mapping[str, Any]) -> dict[str, Any]:
    """The operator-facing numbers of one StreamingQueryProgress (its JSON form)."""
    sources = progress.get("sources") or [{}]
    start = _offsets(sources[0].get("startOffset"))
    end = _offsets(sources[0].get("endOffset"))
    latest = _offsets(sources[0].get("latestOffset"))
    return {
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "num_input_rows": int(progress.get("numInputRows") or 0),
        "input_rows_per_second": float(progress.get("inputRowsPerSecond") or 0.0),
        "processed_rows_per_second": float(progress.get("processedRowsPerSecond") or 0.0),
        "trigger_execution_ms": int((progress.get("durationMs") or {}).get("triggerExecution") or 0),
        # Where a batch's time went (Spark's names: latestOffset, getBatch, queryPlanning, addBatch for the
        # reading and writing, walCommit and commitOffsets for the checkpoint), for tuning.
        "duration_ms": {str(k): int(v) for k, v in (progress.get("durationMs") or {}).items()},
        "start_offset": start,
        "end_offset": end,
        "latest_offset": latest,
        "offsets_behind_latest": offsets_behind(end, latest) if latest else None,
        # The batch's observed metrics (Dataset.observe): the archive's produce-to-processing latency.
        "observed": {
            str(k): dict(v) for k, v in (progress.get("observedMetrics") or {}).items() if isinstance(v, Mapping)
        },
    }


def progress_line(query: str, summary: Mapping[str, Any]) -> str:
    """One log line per micro-batch, greppable by `progress query=<name>`."""
    return (
        f"progress query={query} batch={summary['batch_id']} rows={summary['num_input_rows']} "
        f"input_rows_per_s={summary['input_rows_per_second']:.1f} "
        f"processed_rows_per_s={summary['processed_rows_per_second']:.1f} "
        f"offsets_behind_latest={summary['offsets_behind_latest']} "
        f"progress_json={json.dumps(summary, sort_keys=True, separators=(',', ':'))}"
    )


class StatusFile:
    """The job's status, kept in memory and rewritten atomically (write to a temp file, rename)."""

    def __init__(self, path: str | Path, started_from: Mapping[str, Any], version: str = "unknown") -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        # When each query last reported (started, a batch's progress, or an idle trigger): every event, idle ones
        # too, though the file is rewritten once per idle spell. The metrics endpoint serves it; a query whose
        # reports stop while the driver's Python side still answers is stalled.
        self._reported: dict[str, float] = {}
        self._doc: dict[str, Any] = {
            "pid": os.getpid(),
            "version": version,
            "started_at": time.time(),
            "started_from": dict(started_from),
            "queries": {},
        }
        self._write()

    def record(self, query: str, summary: Mapping[str, Any]) -> None:
        with self._lock:
            entry = self._doc["queries"].setdefault(query, {"rows_since_start": 0, "first_batch": None})
            entry["rows_since_start"] += summary["num_input_rows"]
            if entry["first_batch"] is None:
                entry["first_batch"] = dict(summary)
            entry["last_batch"] = dict(summary)
            entry.pop("idle_since", None)
            self._reported[query] = time.time()
            self._doc["updated_at"] = time.time()
            self._write()

    def started(self, query: str, timestamp: str) -> None:
        """The query is running (a Real-time Mode query reports progress only at the end of its long
        batches: until then this is how its status shows it alive)."""
        with self._lock:
            entry = self._doc["queries"].setdefault(query, {"rows_since_start": 0, "first_batch": None})
            entry["started_at"] = timestamp
            self._reported[query] = time.time()
            self._doc["updated_at"] = time.time()
            self._write()

    def idle(self, query: str, timestamp: str) -> None:
        """The query ran a trigger and found no new data (Spark 4 reports that instead of a progress
        event): it is alive and caught up. Recorded once per idle spell, not on every trigger."""
        with self._lock:
            entry = self._doc["queries"].setdefault(query, {"rows_since_start": 0, "first_batch": None})
            self._reported[query] = time.time()
            if "idle_since" in entry:
                return
            entry["idle_since"] = timestamp
            self._doc["updated_at"] = time.time()
            self._write()

    def stopping(self, query: str, last_batch: int | None, between_batches: bool) -> None:
        """A stop was asked for (the unit's ExecStop): the query stopped after last_batch, between batches
        (nothing of it will run again) or, when between_batches is false, cut off in one."""
        with self._lock:
            entry = self._doc["queries"].setdefault(query, {"rows_since_start": 0, "first_batch": None})
            entry["stopped"] = {"at": time.time(), "after_batch": last_batch, "between_batches": between_batches}
            self._write()

    def terminated(self, query: str, error: str | None) -> None:
        with self._lock:
            self._doc["queries"].setdefault(query, {})["terminated"] = error or "stopped"
            self._write()

    def snapshot(self) -> tuple[dict[str, Any], dict[str, float]]:
        """A copy of the status document and of when each query last reported, taken together."""
        with self._lock:
            return json.loads(json.dumps(self._doc)), dict(self._reported)

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".status.", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self._doc, handle, indent=2, sort_keys=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)
