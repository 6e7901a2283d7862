"""Progress reporting and checkpoint reading: plain dicts and files, no Spark needed."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab_spark import progress as P

PROGRESS = {
    "name": "records",
    "batchId": 12,
    "timestamp": "2025-01-01T12:00:00.000Z",
    "numInputRows": 5000,
    "inputRowsPerSecond": 1000.0,
    "processedRowsPerSecond": 2500.5,
    "durationMs": {"triggerExecution": 2000, "addBatch": 1500, "walCommit": 120},
    "sources": [
        {
            "startOffset": {"events": {"0": 100, "1": 100}},
            "endOffset": {"events": {"0": 2600, "1": 2600}},
            "latestOffset": {"events": {"0": 3000, "1": 2600}},
        }
    ],
}


def test_summary_reports_rates_and_offsets_behind_latest() -> None:
    s = P.summarize_progress(PROGRESS)
    assert (s["num_input_rows"], s["processed_rows_per_second"], s["offsets_behind_latest"]) == (5000, 2500.5, 400)
    assert s["start_offset"] == {"events": {"0": 100, "1": 100}}
    assert "processed_rows_per_s=2500.5" in P.progress_line("records", s)
    # Where the batch's time went, as Spark names the parts.
    assert s["duration_ms"] == {"triggerExecution": 2000, "addBatch": 1500, "walCommit": 120}


def test_summary_accepts_offsets_as_json_strings_and_no_source() -> None:
    as_strings = dict(PROGRESS, sources=[{k: json.dumps(v) for k, v in PROGRESS["sources"][0].items()}])  # type: ignore[index]
    assert P.summarize_progress(as_strings)["offsets_behind_latest"] == 400
    empty = P.summarize_progress({"batchId": 0, "numInputRows": 0, "sources": []})
    assert (empty["num_input_rows"], empty["offsets_behind_latest"]) == (0, None)


def write_batch(root: Path, batch: int, offsets: dict[str, dict[str, int]], committed: bool) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
    (root / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{json.dumps(offsets)}")
    if committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_checkpoint_resumes_from_the_last_committed_batch(tmp_path: Path) -> None:
    assert P.read_checkpoint(tmp_path / "none") is None
    write_batch(tmp_path, 0, {"events": {"0": 10}}, committed=True)
    write_batch(tmp_path, 1, {"events": {"0": 20, "1": 5}}, committed=True)
    write_batch(tmp_path, 2, {"events": {"0": 30, "1": 9}}, committed=False)  # planned, never committed
    # Batch 2 was cut off before its commit: the restarted query runs it again with the same offsets.
    assert P.read_checkpoint(tmp_path) == P.CheckpointState(1, {"events": {"0": 20, "1": 5}}, planned_batch_id=2)


def test_status_file_keeps_first_and_last_batch_per_query(tmp_path: Path) -> None:
    status = P.StatusFile(tmp_path / "status.json", {"records": {"checkpoint": None}})
    first = P.summarize_progress(PROGRESS)
    status.record("records", first)
    status.record("records", dict(first, batch_id=13, num_input_rows=7))
    doc = json.loads((tmp_path / "status.json").read_text())
    entry = doc["queries"]["records"]
    assert (entry["first_batch"]["batch_id"], entry["last_batch"]["batch_id"], entry["rows_since_start"]) == (
        12,
        13,
        5007,
    )
    assert doc["started_from"] == {"records": {"checkpoint": None}}


def test_an_idle_query_shows_in_the_status_until_its_next_batch(tmp_path: Path) -> None:
    # After a restart with nothing new to read, Spark 4 sends idle events and no progress at all.
    status = P.StatusFile(tmp_path / "status.json", {})
    status.idle("records", "2026-11-22T03:39:37.000Z")
    status.idle("records", "2026-11-22T03:39:47.000Z")
    entry = json.loads((tmp_path / "status.json").read_text())["queries"]["records"]
    assert entry == {"rows_since_start": 0, "first_batch": None, "idle_since": "2026-11-22T03:39:37.000Z"}
    status.record("records", P.summarize_progress(PROGRESS))
    entry = json.loads((tmp_path / "status.json").read_text())["queries"]["records"]
    assert "idle_since" not in entry and entry["last_batch"]["batch_id"] == 12


def test_a_file_sources_checkpoint_reads_as_its_log_offset(tmp_path: Path) -> None:
    """The windowed counts read the archive's files: their offsets are the sink log's batch, not partitions."""
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets" / "4").write_text('v1\n{"batchWatermarkMs":0}\n{"logOffset":7}')
    (tmp_path / "commits" / "4").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert P.read_checkpoint(tmp_path) == P.CheckpointState(4, {"files": {"logOffset": 7}}, planned_batch_id=4)


def test_a_file_sources_progress_reads_as_its_log_offset() -> None:
    progress = dict(PROGRESS, sources=[{"startOffset": {"logOffset": 3}, "endOffset": {"logOffset": 5}}])
    summary = P.summarize_progress(progress)
    assert (summary["start_offset"], summary["end_offset"]) == (
        {"files": {"logOffset": 3}},
        {"files": {"logOffset": 5}},
    )
