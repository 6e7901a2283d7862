"""The job's own progress as Prometheus metrics, served by the driver's Python side on /metrics.

Spark's built-in metrics (the driver's PrometheusServlet on its UI port) say how fast batches run; they do
not say how far behind the latest offsets a query is, how old its records are when processed, or whether it
still reports at all. Those come from the status the job already keeps (progress.StatusFile), so the metrics
and the status file never disagree.

A stalled query shows as kafkalab_spark_query_last_report_timestamp_seconds no longer moving while this
endpoint still answers (the listener runs in the JVM's callbacks; this server is a Python thread of its own),
and report_interval_seconds says how long a healthy query may go between reports: its trigger, or Spark's
idle-event interval when there is nothing to read. A dead driver is a target down.

exposition() is pure over the snapshot, so it is unit tested without Spark (and checked by promtool).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kafkalab_spark.progress import StatusFile

LOG = logging.getLogger("kafkalab_spark")
# Spark's spark.sql.streaming.noDataProgressEventInterval (the role does not change it): a query with nothing to
# read reports an idle event this often at most, and never more often than its trigger.
IDLE_EVENT_INTERVAL_S = 10.0
PREFIX = "kafkalab_spark"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}" if labels else ""


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help = f"{PREFIX}_{name}", kind, help_text
        self.samples: list[tuple[dict[str, str], float]] = []

    def add(self, value: float, **labels: str) -> None:
        self.samples.append((labels, float(value)))

    def lines(self) -> list[str]:
        if not self.samples:
            return []
        sample = f"{self.name}_total" if self.kind == "counter" else self.name
        out = [f"# HELP {sample} {self.help}", f"# TYPE {sample} {self.kind}"]
        out += [f"{sample}{_labels(labels)} {value!r}" for labels, value in self.samples]
        return out


def exposition(
    doc: Mapping[str, Any], reported: Mapping[str, float], report_intervals: Mapping[str, float], app: str
) -> str:
    """The Prometheus text format of one application's status: doc and reported as StatusFile.snapshot() gives
    them, report_intervals the longest healthy gap between two reports of each query (seconds)."""
    info = _Family("job_info", "gauge", "The running build of the job (always 1).")
    started = _Family("job_start_time_seconds", "gauge", "When this run of the job started (Unix time).")
    last = _Family(
        "query_last_report_timestamp_seconds", "gauge", "When the query last reported (start, batch or idle)."
    )
    interval = _Family("query_report_interval_seconds", "gauge", "Longest gap between two reports of a healthy query.")
    batch = _Family("query_last_batch_id", "gauge", "The last micro-batch the query completed.")
    rows = _Family("query_input_rows", "counter", "Records the query read since the job started.")
    in_rate = _Family("query_input_rows_per_second", "gauge", "Records per second arriving, last batch.")
    done_rate = _Family("query_processed_rows_per_second", "gauge", "Records per second processed, last batch.")
    duration = _Family("query_batch_duration_seconds", "gauge", "How long the last batch took, end to end.")
    behind = _Family("query_offsets_behind_latest", "gauge", "Records the query has yet to read (0 when idle).")
    idle = _Family("query_idle", "gauge", "1 while the query's triggers find nothing new to read.")
    latency = _Family(
        "query_record_latency_seconds", "gauge", "Produce (Kafka timestamp) to processing, last batch's records."
    )
    info.add(1, app=app, version=str(doc.get("version", "unknown")))
    started.add(float(doc.get("started_at") or 0), app=app)
    for query, entry in sorted((doc.get("queries") or {}).items()):
        labels = {"app": app, "query": str(query)}
        if query in reported:
            last.add(reported[query], **labels)
        if query in report_intervals:
            interval.add(report_intervals[query], **labels)
        rows.add(int(entry.get("rows_since_start") or 0), **labels)
        is_idle = "idle_since" in entry
        idle.add(1 if is_idle else 0, **labels)
        summary = entry.get("last_batch") or {}
        if not summary:
            continue
        batch.add(int(summary.get("batch_id") or 0), **labels)
        in_rate.add(float(summary.get("input_rows_per_second") or 0.0), **labels)
        done_rate.add(float(summary.get("processed_rows_per_second") or 0.0), **labels)
        duration.add(int(summary.get("trigger_execution_ms") or 0) / 1000, **labels)
        if is_idle:
            behind.add(0, **labels)
        elif summary.get("offsets_behind_latest") is not None:
            behind.add(int(summary["offsets_behind_latest"]), **labels)
        observed = (summary.get("observed") or {}).get("latency") or {}
        if int(observed.get("rows") or 0) > 0:
            for stat in ("max", "avg"):
                if observed.get(f"{stat}_ms") is not None:
                    latency.add(float(observed[f"{stat}_ms"]) / 1000, stat=stat, **labels)
    families = (info, started, last, interval, batch, rows, in_rate, done_rate, duration, behind, idle, latency)
    return "\n".join(line for family in families for line in family.lines()) + "\n"


def report_intervals(triggers_s: Mapping[str, float]) -> dict[str, float]:
    """Each query's longest healthy gap between reports: its trigger, and at least the idle-event interval."""
    return {query: max(float(seconds), IDLE_EVENT_INTERVAL_S) for query, seconds in triggers_s.items()}


def serve(status: StatusFile, intervals: Mapping[str, float], app: str, bind: str, port: int) -> ThreadingHTTPServer:
    """Serve /metrics on bind:port from a daemon thread; returns the server (shutdown() stops it)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server API names it
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served here")
                return
            doc, reported = status.snapshot()
            body = exposition(doc, reported, intervals, app).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # one line per scrape would drown the job's log

    server = ThreadingHTTPServer((bind, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    LOG.info("serving the job's metrics on http://%s:%d/metrics", bind or "0.0.0.0", port)
    return server
