"""Spark in Prometheus, live: the Prometheus of group monitoring scrapes the master's, every worker's and each of the
job's drivers' own metrics servlets and the job's progress exporter; Spark's numbers agree with the master's own
view; the job's progress metrics count the records a producer got acked; and a driver whose JVM stops (SIGSTOP:
alive, answering nothing) fires SparkStreamingQueryStalled for its queries within the alert's window, which resolves
once it runs again, with nothing lost from the archive.

Runs only against an inventory with a monitoring host (the spark scenario, the lab); elsewhere it is skipped and says
why. Times to fire and resolve are printed for docs/measurements.md, never asserted beyond the alert's own window.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from inventory_hosts import group, inventory_listing
from prometheus_api import Prometheus, wait_until

from kafkalab import dashboards
from kafkalab.ansible_driver import group_hosts
from kafkalab.e2e import produce_numbered

from .conftest import SERVICE, SparkNode
from .pipeline import archive_report, committed, master_state

DASHBOARD = Path(__file__).resolve().parents[2] / "roles" / "prometheus" / "files" / "grafana" / "kafka-overview.json"
MONITORING = sorted(group_hosts(inventory_listing(), "monitoring"))
pytestmark = pytest.mark.skipif(not MONITORING, reason="the inventory has no monitoring host (group monitoring)")
SPARK_JOBS = ("spark_master", "spark_worker", "spark_driver", "spark_job")
# A driver's streaming input rate, as Spark's servlet names it (metrics_<namespace>_driver_spark_streaming_<query>_).
STREAMING_INPUT_RATE = "metrics_.+_driver_spark_streaming_.+_inputRate_total_Value"


@pytest.fixture(scope="module")
def prometheus() -> Prometheus:
    return Prometheus(MONITORING[0])


def apps(spark_node: SparkNode) -> list[str]:
    app = str(spark_node.config["app_name"])
    return [app, f"{app}-realtime"] if "realtime" in spark_node.config else [app]


def value(prometheus: Prometheus, expr: str) -> float | None:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else None


def test_prometheus_scrapes_the_master_every_worker_and_each_drivers_metrics(
    prometheus: Prometheus, spark_node: SparkNode
) -> None:
    def all_up() -> dict[str, list[dict[str, Any]]]:
        targets = [
            t for t in prometheus.get("/api/v1/targets")["data"]["activeTargets"] if t["labels"]["job"] in SPARK_JOBS
        ]
        by_job: dict[str, list[dict[str, Any]]] = {}
        for t in targets:
            by_job.setdefault(t["labels"]["job"], []).append(t)
        down = [t for t in targets if t["health"] != "up"]
        return by_job if targets and not down else {}

    by_job = wait_until(all_up, 120, "every Spark target to be up", every_s=2)
    assert [t["labels"]["node"] for t in by_job["spark_master"]] == [spark_node.name]
    assert sorted(t["labels"]["node"] for t in by_job["spark_worker"]) == group("spark_worker")
    assert sorted(t["labels"]["app"] for t in by_job["spark_driver"]) == apps(spark_node)
    assert sorted(t["labels"]["app"] for t in by_job["spark_job"]) == apps(spark_node)

    def key(job: str, target: dict[str, Any]) -> str:
        return f"{job}/{target['labels'].get('app', target['labels']['node'])}"

    durations = {key(j, t): t["lastScrapeDuration"] for j, ts in by_job.items() for t in ts}
    print(f"\nSpark scrape durations (s): {json.dumps(durations, sort_keys=True)}")

    # Spark's own numbers, as Prometheus has them, agree with the master's JSON view.
    state = master_state(spark_node)

    def agrees() -> bool:
        alive = value(prometheus, 'metrics_master_aliveWorkers_Value{job="spark_master"}')
        running = value(prometheus, 'metrics_master_apps_Value{job="spark_master"}')
        used = {
            r["metric"]["node"]: float(r["value"][1])
            for r in prometheus.query('metrics_worker_coresUsed_Value{job="spark_worker"}')
        }
        return (
            alive == len([w for w in state["workers"] if w["state"] == "ALIVE"])
            and running == len(state["activeapps"])
            and set(used) == set(group("spark_worker"))
            and sum(used.values()) == sum(w["coresused"] for w in state["workers"])
        )

    wait_until(agrees, 60, "Prometheus's Spark numbers to agree with the master's /json/", every_s=3)
    # Each driver's streaming queries (spark.sql.streaming.metricsEnabled) through its servlet.
    for app in apps(spark_node):
        series = prometheus.query(f'{{job="spark_driver", app="{app}", __name__=~"{STREAMING_INPUT_RATE}"}}')
        assert series, f"no streaming query metrics from the driver of {app}"


def test_the_jobs_progress_metrics_count_what_was_acked(prometheus: Prometheus, spark_node: SparkNode) -> None:
    app = spark_node.config["app_name"]
    sel = f'app="{app}", query="records"'
    rows = f"kafkalab_spark_query_input_rows_total{{{sel}}}"
    behind = f"kafkalab_spark_query_offsets_behind_latest{{{sel}}}"
    wait_until(lambda: value(prometheus, behind) == 0, 180, "the archive to be caught up")
    before = value(prometheus, rows)
    assert before is not None
    count = 2_000
    _, acked, failed = produce_numbered(spark_node.bootstrap, spark_node.topic, count)
    assert not failed and len(acked) == count
    # No other writer runs now: the counter moves by exactly what was acked, and the query catches up.
    wait_until(
        lambda: value(prometheus, rows) == before + count and value(prometheus, behind) == 0,
        180,
        f"the archive's row counter to move by {count} and the query to catch up",
        every_s=2,
    )
    latency = {
        r["metric"]["stat"]: float(r["value"][1])
        for r in prometheus.query(f"kafkalab_spark_query_record_latency_seconds{{{sel}}}")
    }
    assert set(latency) == {"max", "avg"} and 0 < latency["avg"] <= latency["max"], latency
    interval = value(prometheus, f"kafkalab_spark_query_report_interval_seconds{{{sel}}}")
    assert interval == 10, "a 1-second trigger reports at least every idle-event interval (10 s)"
    print(f"\narchive record latency after {count} records: {json.dumps(latency)} s")


def test_every_spark_panel_of_the_dashboard_returns_data(prometheus: Prometheus) -> None:
    queries = [q for q in dashboards.dashboard_queries(DASHBOARD) if 'job="spark_' in q]
    assert queries, "the dashboard has no Spark panel"

    def empty() -> list[str]:
        return [q for q in queries if not prometheus.query(q)]

    wait_until(lambda: not empty(), 120, "every Spark panel's query to return data", every_s=5)


@pytest.mark.changes_cluster
def test_a_driver_that_stops_answering_fires_the_stalled_query_alert_and_it_resolves(
    prometheus: Prometheus, spark_node: SparkNode
) -> None:
    app = spark_node.config["app_name"]
    scrape = prometheus.interval("prometheus_scrape_interval", "15s")
    evaluation = prometheus.interval("prometheus_evaluation_interval", "15s")
    window = prometheus.interval("prometheus_alert_spark_stalled_for", "1m")
    reports = int(prometheus.settings.get("prometheus_alert_spark_stalled_reports", 5))
    interval = value(prometheus, f'kafkalab_spark_query_report_interval_seconds{{app="{app}", query="records"}}')
    assert interval, "the archive's report interval is not in Prometheus"
    wait_until(
        lambda: prometheus.state("SparkStreamingQueryStalled", app=app, query="records") == "inactive",
        60,
        "the archive to be reporting",
    )
    pid = spark_node.main_pid()
    assert spark_node.host.check_output(f"cat /proc/{pid}/comm").strip() == "java", "the unit's main process"
    host = spark_node.host
    restarts = spark_node.restarts()
    assert host.run(f"kill -STOP {pid}").rc == 0
    stopped = time.monotonic()
    try:
        # Records acked while the driver answers nothing: they wait in Kafka for it.
        run_id, acked, failed = produce_numbered(spark_node.bootstrap, spark_node.topic, 1_000)
        assert not failed
        # Silent for `reports` intervals, then the alert's `for`, plus scrapes and evaluations to see it.
        limit = reports * interval + window + 3 * scrape + 2 * evaluation + 10
        wait_until(
            lambda: prometheus.state("SparkStreamingQueryStalled", app=app, query="records") == "firing",
            limit,
            "SparkStreamingQueryStalled to fire",
            every_s=0.5,
        )
        fired = time.monotonic() - stopped
    finally:
        assert host.run(f"kill -CONT {pid}").rc == 0
    resumed = time.monotonic()
    wait_until(
        lambda: prometheus.state("SparkStreamingQueryStalled", app=app, query="records") == "inactive",
        120,
        "SparkStreamingQueryStalled to resolve",
        every_s=0.5,
    )
    resolved = time.monotonic() - resumed
    assert spark_node.main_pid() == pid and spark_node.restarts() == restarts, "the driver was restarted, not resumed"
    wait_until(lambda: committed(spark_node, "records", acked), 300, "the archive to commit the records", every_s=3)
    delivery, report = archive_report(spark_node, run_id, acked)
    assert delivery.ok and not delivery.unacked_extra, delivery.summary()
    assert report["rows"] == report["distinct_positions"], "duplicates in the whole output"
    print(
        f"\nSparkStreamingQueryStalled fired {fired:.1f} s after SIGSTOP of {SERVICE}'s JVM "
        f"({reports} x {interval:.0f} s silent + for {window:.0f} s), resolved {resolved:.1f} s after SIGCONT; "
        f"{len(acked)} acked during the stall archived once: {delivery.summary()}"
    )
