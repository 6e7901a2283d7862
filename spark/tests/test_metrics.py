"""The job's metrics endpoint: the exposition of a status (checked by Prometheus's own promtool when it is on the
machine), what an idle or silent query shows, and the real HTTP server answering a scrape."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafkalab_spark import metrics as M
from kafkalab_spark import progress as P

PROGRESS = {
    "name": "records",
    "batchId": 7,
    "numInputRows": 500,
    "inputRowsPerSecond": 250.0,
    "processedRowsPerSecond": 400.0,
    "durationMs": {"triggerExecution": 1250},
    "sources": [{"endOffset": {"events": {"0": 900}}, "latestOffset": {"events": {"0": 1000}}}],
    "observedMetrics": {"latency": {"rows": 500, "max_ms": 2400, "avg_ms": 812.5}},
}


def samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}


def status_with_batches(tmp_path: Path) -> P.StatusFile:
    status = P.StatusFile(tmp_path / "status.json", {}, version="1.2.3")
    status.record("records", P.summarize_progress(PROGRESS))
    status.record("records", P.summarize_progress({**PROGRESS, "batchId": 8, "numInputRows": 100}))
    status.started("metrics", "2026-01-01T00:00:00Z")
    return status


def test_exposition_serves_rows_offsets_behind_latency_and_when_each_query_last_reported(tmp_path: Path) -> None:
    status = status_with_batches(tmp_path)
    doc, reported = status.snapshot()
    text = M.exposition(doc, reported, M.report_intervals({"records": 1, "metrics": 30}), "consumer")
    got = samples(text)
    labels = '{app="consumer",query="records"}'
    assert got[f"kafkalab_spark_query_input_rows_total{labels}"] == 600
    assert got[f"kafkalab_spark_query_last_batch_id{labels}"] == 8
    assert got[f"kafkalab_spark_query_offsets_behind_latest{labels}"] == 100
    assert got[f"kafkalab_spark_query_batch_duration_seconds{labels}"] == 1.25
    assert got['kafkalab_spark_query_record_latency_seconds{stat="max",app="consumer",query="records"}'] == 2.4
    # The report interval: the trigger, but never shorter than Spark's idle-event interval.
    assert got[f"kafkalab_spark_query_report_interval_seconds{labels}"] == 10
    assert got['kafkalab_spark_query_report_interval_seconds{app="consumer",query="metrics"}'] == 30
    assert abs(got[f"kafkalab_spark_query_last_report_timestamp_seconds{labels}"] - time.time()) < 5
    # A query that has only started reports its start, and no batch numbers it does not have.
    assert 'kafkalab_spark_query_last_report_timestamp_seconds{app="consumer",query="metrics"}' in got
    assert 'kafkalab_spark_query_last_batch_id{app="consumer",query="metrics"}' not in got
    assert got['kafkalab_spark_job_info{app="consumer",version="1.2.3"}'] == 1
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr + text


def test_an_idle_query_is_caught_up_and_its_idle_triggers_move_its_last_report(tmp_path: Path) -> None:
    status = status_with_batches(tmp_path)
    status.idle("records", "t1")
    _, first = status.snapshot()
    time.sleep(0.05)
    status.idle("records", "t2")  # the same idle spell: the file is not rewritten, the report time still moves
    doc, reported = status.snapshot()
    assert reported["records"] > first["records"]
    got = samples(M.exposition(doc, reported, {}, "consumer"))
    assert got['kafkalab_spark_query_offsets_behind_latest{app="consumer",query="records"}'] == 0
    assert got['kafkalab_spark_query_idle{app="consumer",query="records"}'] == 1


def test_the_server_answers_a_scrape_on_metrics_and_nothing_else(tmp_path: Path) -> None:
    status = status_with_batches(tmp_path)
    server = M.serve(status, {"records": 10.0}, "consumer", "127.0.0.1", 0)
    port = server.server_address[1]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            assert reply.headers["Content-Type"].startswith("text/plain")
            body = reply.read().decode()
        assert "kafkalab_spark_query_input_rows_total" in body
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
    finally:
        server.shutdown()
