"""Metrics and alerts, live: the Prometheus of group monitoring scrapes every exporter (and every schema registry
instance, when the inventory has group schema_registry), every query of the console page and of the Grafana
dashboard returns data, the overview page's numbers agree with the Admin API, a stopped
broker fires KafkaNodeDown and KafkaUnderReplicatedPartitions within their `for` plus a scrape and an evaluation and
both resolve once it is back (under acks=all load, 0 lost), and a consumer group that stops consuming fires
KafkaConsumerLagGrowing.

Runs only against an inventory with a monitoring host (the default scenario, the lab); elsewhere it is skipped and
says why. Times to fire and resolve are printed for docs/measurements.md, never asserted beyond the alert's own window.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster
from inventory_hosts import host_variables, inventory_listing, kafka_unit, node
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient
from prometheus_api import Prometheus, wait_until

from kafkalab import dashboards, e2e, kafka_client, report
from kafkalab.ansible_driver import group_hosts

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "roles" / "prometheus" / "files" / "consoles" / "kafka-overview.html"
DASHBOARD = ROOT / "roles" / "prometheus" / "files" / "grafana" / "kafka-overview.json"
# Screenshots of the overview page, kept after the run (one per scenario, or `lab`).
ARTIFACTS = ROOT / ".cache" / "test-artifacts"
# Debian's chromium, headless, as root in a container, on a closed network (no calls home: without these flags it
# tries many at a time and they are refused).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # The page's graphs fetch their series after load: let its scripts run this long (virtual time).
    "--virtual-time-budget=20000",
]


def members(name: str) -> set[str]:
    """The hosts of a group, none when the inventory has no such group."""
    return set(group_hosts(inventory_listing(), name))


MONITORING = sorted(members("monitoring"))
REGISTRIES = sorted(members("schema_registry"))
CONNECT_WORKERS = sorted(members("kafka_connect"))
pytestmark = pytest.mark.skipif(not MONITORING, reason="the inventory has no monitoring host (group monitoring)")


@pytest.fixture(scope="module")
def prometheus() -> Prometheus:
    return Prometheus(MONITORING[0])


def test_prometheus_scrapes_every_exporter_of_the_inventory(prometheus: Prometheus, cluster: Cluster) -> None:
    expected = {
        "kafka": {*cluster.brokers, *cluster.controllers},
        "node": members("kafka")
        | members("zookeeper")
        | members("spark")
        | set(MONITORING)
        | set(REGISTRIES)
        | set(CONNECT_WORKERS),
    }
    if CONNECT_WORKERS:
        expected["kafka_connect"] = set(CONNECT_WORKERS)

    def all_up() -> dict[str, list[dict[str, Any]]]:
        targets = prometheus.get("/api/v1/targets")["data"]["activeTargets"]
        by_job: dict[str, list[dict[str, Any]]] = {}
        for t in targets:
            by_job.setdefault(t["labels"]["job"], []).append(t)
        down = [f"{t['labels']['job']} {t['scrapeUrl']}: {t['lastError']}" for t in targets if t["health"] != "up"]
        return by_job if not down else {}

    by_job = wait_until(all_up, 90, "every target to be up")
    for job, hosts in expected.items():
        assert {t["labels"]["node"] for t in by_job[job]} == hosts, f"job {job} scrapes {by_job[job]}"
    assert {"kafka_lag", "prometheus"} <= set(by_job)
    if cluster.mode == "zookeeper":
        assert {t["labels"]["node"] for t in by_job["zookeeper"]} == members("zookeeper")
    durations = {t["labels"].get("node", job): t["lastScrapeDuration"] for job, ts in by_job.items() for t in ts}
    print(f"\nscrape durations (s): {json.dumps(durations, sort_keys=True)}")


@pytest.mark.skipif(not REGISTRIES, reason="the inventory has no schema registry host (group schema_registry)")
def test_prometheus_scrapes_every_schema_registry_instance(prometheus: Prometheus) -> None:
    def registry_targets() -> list[dict[str, Any]]:
        targets = prometheus.get("/api/v1/targets")["data"]["activeTargets"]
        mine = [t for t in targets if t["labels"]["job"] == "schema_registry"]
        return mine if mine and all(t["health"] == "up" for t in mine) else []

    try:
        targets = wait_until(registry_targets, 90, "every schema registry target to be up")
    except AssertionError:
        targets = prometheus.get("/api/v1/targets")["data"]["activeTargets"]
        down = [f"{t['labels'].get('node')} {t['scrapeUrl']}: {t['health']} {t['lastError']}"
                for t in targets if t["labels"]["job"] == "schema_registry"]  # fmt: skip
        pytest.fail(f"schema registry targets not all up: {down}")
    assert sorted(t["labels"]["node"] for t in targets) == REGISTRIES
    # On its API port's /metrics (over https with TLS: a certificate Prometheus does not trust leaves it down).
    assert all(t["scrapeUrl"].endswith("/metrics") for t in targets), [t["scrapeUrl"] for t in targets]
    # Each instance's own Micrometer series are there, not only the up Prometheus writes itself.
    assert {r["metric"]["node"] for r in prometheus.query("jvm_info_total{job='schema_registry'}")} == set(REGISTRIES)


def declared_connectors() -> list[str]:
    """The connectors the inventory declares present (none without workers)."""
    if not CONNECT_WORKERS:
        return []
    connectors = host_variables(CONNECT_WORKERS[0]).get("kafka_connect_connectors", [])
    return [c["name"] for c in connectors if c.get("state", "present") == "present"]


@pytest.mark.skipif(not CONNECT_WORKERS, reason="the inventory has no Kafka Connect worker (group kafka_connect)")
def test_prometheus_sees_each_connector_and_task_state(prometheus: Prometheus) -> None:
    """The workers' JMX exporter rules turn Connect's string states into the series the alerts read
    (KafkaConnectConnectorFailed, KafkaConnectTaskFailed: their promtool cases use these names and labels), and
    the overview page shows each connector running with all its tasks."""
    declared = declared_connectors()

    def states() -> dict[tuple[str, str], str]:
        found = {}
        for kind in ("connector", "connector_task"):
            for r in prometheus.query(f"kafka_connect_{kind}_status == 1"):
                m = r["metric"]
                found[(m["connector"], m.get("task", "-"))] = m["status"]
        return found if {c for c, _ in found} >= set(declared) else {}

    found = wait_until(states, 90, "each declared connector's state in Prometheus")
    assert {state for (name, _), state in found.items() if name in declared} == {"running"}, found
    assert prometheus.query("sum(kafka_connect_worker_connector_count)")[0]["value"][1] == str(len(declared))
    tasks = {name: sum(1 for (c, t) in found if c == name and t != "-") for name in declared}
    parser = _Cells()
    parser.feed(prometheus.get("/consoles/kafka-overview.html"))
    shown = {name: [parser.cells.get(f"connector-{name}-{cell}") for cell in ("state", "tasks", "running")]
             for name in declared}  # fmt: skip
    assert shown == {name: ["running", str(n), str(n)] for name, n in tasks.items()}, shown


@pytest.fixture(scope="module")
def committed_group(cluster: Cluster) -> Iterator[str]:
    """A consumer group with committed offsets, 10 records behind: what the lag panels show."""
    topic, group_id = f"monitoring-pages-{uuid.uuid4().hex[:8]}", f"pages-{uuid.uuid4().hex[:8]}"
    e2e.create_topic(cluster.bootstrap, topic, partitions=1, replication=min(3, len(cluster.brokers)))
    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(20):
        producer.send(topic, str(i).encode())
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic, **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, group_id=group_id,
        auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=10,
    )  # fmt: skip
    wait_until(lambda: consumer.poll(timeout_ms=1000), 60, "the group to read its first records")
    consumer.commit()
    consumer.close()
    admin = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-monitoring-test"
    )
    try:
        wait_until(lambda: admin.list_group_offsets({group_id: None}).get(group_id), 60, f"{group_id}'s commit")
        yield group_id
        admin.delete_groups([group_id])
    finally:
        admin.close()
    e2e.delete_topic(cluster.bootstrap, topic)


# The KRaft quorum's metrics (the dashboard's quorum row): a ZooKeeper-mode cluster has no such quorum.
# (Share groups: Kafka 4.2+, so KRaft only too.)
KRAFT_ONLY_METRICS = ("kafka_raft_", "kafka_broker_metadata_", "kafka_group_coordinator_share_", "kafka_server_share_")


def live_queries(queries: list[str], cluster: Cluster) -> list[str]:
    """The queries as the page runs them on this cluster: a per-node query once for each node id (the extraction
    puts 'x' where the page puts a label value), ZooKeeper's only where the inventory has an ensemble (the page
    shows them only then), the KRaft quorum's only in KRaft mode; the Spark row is tests/spark_cluster's (it
    needs the job to have read records since it started)."""
    ids = sorted({str(cluster.node_id(n)) for n in {*cluster.brokers, *cluster.controllers}})
    out: list[str] = []
    for query in queries:
        if "zookeeper" in query and not members("zookeeper"):
            continue
        if 'job="spark_' in query:  # the Spark row: tests/spark_cluster checks it, after giving the job records
            continue
        if "job='schema_registry'" in query:  # the page shows the registry's section only when it has instances
            if REGISTRIES:
                out += [query.replace("node='x'", f"node='{h}'") for h in REGISTRIES]
            continue
        if "job='kafka_connect'" in query:  # and Connect's only when it has workers, a row per running connector
            out += [query.replace("connector='x'", f"connector='{c}'") for c in declared_connectors()]
            continue
        if cluster.mode == "zookeeper" and any(m in query for m in KRAFT_ONLY_METRICS):
            continue
        out += [query.replace("'x'", f"'{i}'") for i in ids] if "node_id='x'" in query else [query]
    return list(dict.fromkeys(out))


def lag_exporter_state(prometheus: Prometheus) -> str:
    """What the lag exporter did lately, for a failure's message: its target as Prometheus sees it, its own
    series, and its journal (it prints every reading it could not make)."""
    lines = []
    for target in prometheus.get("/api/v1/targets")["data"]["activeTargets"]:
        if target["labels"]["job"] == "kafka_lag":
            lines.append(f"target: {target['health']} {target['lastScrapeDuration']}s {target['lastError']!r}")
    for series in (
        "kafka_lag_exporter_collect_ok",
        "kafka_lag_exporter_scrape_seconds",
        "kafka_lag_exporter_left_out",
        "count(kafka_consumergroup_lag)",
    ):
        lines.append(f"{series}: {[r['value'][1] for r in prometheus.query(series)]}")
    journal = node(MONITORING[0]).run("journalctl -u kafka-lag-exporter --no-pager -n 30 -o short-monotonic")
    return "\n".join([*lines, "journal:", journal.stdout])


@pytest.mark.parametrize("source", ["console", "dashboard"])
def test_every_page_query_returns_data(
    prometheus: Prometheus, cluster: Cluster, committed_group: str, source: str
) -> None:
    queries = dashboards.console_queries(CONSOLE) if source == "console" else dashboards.dashboard_queries(DASHBOARD)
    assert queries, f"no query found in the {source}"
    queries = live_queries(queries, cluster)

    # A rate needs two samples in its window, and a new group a scrape of the lag exporter.
    def empty() -> list[str]:
        return [q for q in queries if not prometheus.query(q)]

    try:
        wait_until(lambda: not empty(), 120, f"every {source} query to return data", every_s=5)
    except AssertionError:
        pytest.fail(f"{source} queries that return nothing: {empty()}\n{lag_exporter_state(prometheus)}")
    print(f"\n{source}: {len(queries)} queries, each returned data")


class _Cells(html.parser.HTMLParser):
    """The text of every element with an id, as the page renders it."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[str, str] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open.append(dict(attrs).get("id"))

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        ident = next((i for i in reversed(self._open) if i), None)
        if ident and data.strip():
            self.cells[ident] = (self.cells.get(ident, "") + data.strip()).strip()


def test_overview_page_numbers_agree_with_the_admin_api(prometheus: Prometheus, cluster: Cluster) -> None:
    admin = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-monitoring-test"
    )
    try:
        topics = admin.describe_topics()
    finally:
        admin.close()
    partitions = [p for t in topics for p in t["partitions"]]
    replicas: dict[int, int] = {}
    leaders: dict[int, int] = {}
    for p in partitions:
        for r in p["replica_nodes"]:
            replicas[r] = replicas.get(r, 0) + 1
        leaders[p["leader_id"]] = leaders.get(p["leader_id"], 0) + 1
    want = {
        "partitions-total": len(partitions),
        "partitions-offline": 0,
        "partitions-under-replicated": 0,
        "brokers-up": len(cluster.brokers),  # the page counts nodes with the broker role
        "active-controllers": 1,
        **{f"broker-{b}-partitions": n for b, n in replicas.items()},
        **{f"broker-{b}-leaders": n for b, n in leaders.items()},
    }

    def page() -> dict[str, str]:
        parser = _Cells()
        parser.feed(prometheus.get("/consoles/kafka-overview.html"))
        return parser.cells

    def agrees() -> bool:
        cells = page()
        return all(cells.get(k) == str(v) for k, v in want.items())

    try:
        wait_until(agrees, 60, "the overview page to show the cluster as the Admin API does", every_s=3)
    except AssertionError:
        cells = page()
        pytest.fail(f"page vs Admin API: {[(k, cells.get(k), v) for k, v in want.items() if cells.get(k) != str(v)]}")


class _Graphs(html.parser.HTMLParser):
    """For each element whose id ends in Graph: whether an <svg> was drawn inside it, and the text it shows."""

    def __init__(self) -> None:
        super().__init__()
        self.drawn: dict[str, bool] = {}
        self.text: dict[str, str] = {}
        self._open: list[str | None] = []

    def _graph(self) -> str | None:
        return next((i for i in reversed(self._open) if i and i.endswith("Graph")), None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id")
        if ident and ident.endswith("Graph"):
            self.drawn.setdefault(ident, False)
        graph = self._graph()
        if graph and tag == "svg":
            self.drawn[graph] = True
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "line", "rect", "circle"):
            self._open.append(ident)

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag not in ("br", "img", "input", "meta", "link", "hr", "path", "line", "rect", "circle"):
            self._open.pop()

    def handle_data(self, data: str) -> None:
        graph = self._graph()
        if graph and data.strip():
            self.text[graph] = (self.text.get(graph, "") + " " + data.strip()).strip()


def chromium(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if not binary:
        pytest.fail("chromium is not installed on the controller: apt-get install chromium (.ci/run does)")
    with tempfile.TemporaryDirectory(prefix="kafkalab-chromium-") as profile:
        return subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=180,
        )


def test_overview_page_draws_every_graph_in_a_headless_browser(prometheus: Prometheus, committed_group: str) -> None:
    """Debian's chromium loads the page with its scripts (Debian's rickshaw, d3, jQuery): every graph draws a chart
    of live series (none says "No timeseries returned"), and a screenshot is kept in .cache/test-artifacts."""
    url = f"{prometheus.url}/consoles/kafka-overview.html"
    graphs = re.findall(r'<div id="(\w+Graph)"', CONSOLE.read_text())
    assert graphs, "the page has no graph"

    def drawn() -> _Graphs:
        page = chromium(url, "--dump-dom")
        assert page.returncode == 0, page.stderr[-2000:]
        parsed = _Graphs()
        parsed.feed(page.stdout)
        return parsed

    # Prometheus needs a scrape or two of the new consumer group before the lag graph has a series.
    last: list[_Graphs] = []

    def every_graph_drawn() -> bool:
        last[:] = [drawn()]
        return all(last[0].drawn.get(g) and "No timeseries" not in last[0].text.get(g, "") for g in graphs)

    try:
        wait_until(every_graph_drawn, 120, "every graph of the page to be drawn", every_s=5)
    except AssertionError:
        page = last[0] if last else _Graphs()
        pytest.fail(f"graphs not drawn: {[(g, page.drawn.get(g), page.text.get(g)) for g in graphs]}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"kafka-overview-{os.environ.get('MOLECULE_SCENARIO_NAME', 'lab')}.png"
    taken = chromium(url, f"--screenshot={shot}", "--window-size=1400,2800", "--hide-scrollbars")
    assert taken.returncode == 0, taken.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{shot} is not a PNG"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (1400, 2800), (width, height)
    print(f"\n{len(graphs)} graphs drawn; screenshot {shot} ({shot.stat().st_size} bytes)")


def lag_served_for_every_group(prometheus: Prometheus, cluster: Cluster) -> bool:
    """Every group that a fresh reading finds lagging on a partition that has a leader has a lag series."""
    admin = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-monitoring-test"
    )
    try:
        groups = report.collect_groups(admin, report.collect_topics(admin), 10_000)
    finally:
        admin.close()
    expected = {g["group"] for g in groups if any(row["lag"] is not None for row in g["partitions"])}
    assert expected, "no group with committed offsets to look for"
    served = prometheus.query('count by (group) (kafka_consumergroup_lag{job="kafka_lag"})')
    return expected <= {r["metric"]["group"] for r in served}


# The alerts fire on the same exporters and rules in both modes: proven in KRaft mode (the default scenario), left
# out of the ZooKeeper scenario for CI's time (it keeps the ZooKeeper targets, the pages and the page's numbers).
@pytest.mark.kraft
@pytest.mark.failover
def test_a_stopped_broker_fires_node_down_and_under_replicated_and_both_resolve(
    prometheus: Prometheus, cluster: Cluster, committed_group: str
) -> None:
    victim = cluster.brokers[-1]
    topic = f"monitoring-{uuid.uuid4().hex[:8]}"
    e2e.create_topic(cluster.bootstrap, topic, partitions=3, replication=3, configs={"min.insync.replicas": "2"})
    scrape = prometheus.interval("prometheus_scrape_interval", "15s")
    evaluation = prometheus.interval("prometheus_evaluation_interval", "15s")
    windows = {
        "KafkaNodeDown": prometheus.interval("prometheus_alert_down_for", "1m"),
        "KafkaUnderReplicatedPartitions": prometheus.interval("prometheus_alert_under_replicated_for", "5m"),
    }
    for name in windows:
        assert prometheus.state(name) == "inactive", f"{name} is already {prometheus.state(name)}"
    producer = e2e.BackgroundProducer(cluster.bootstrap, topic, rate_per_s=100).start()
    host = node(victim)
    fired: dict[str, float] = {}
    resolved: dict[str, float] = {}
    try:
        time.sleep(2)
        assert host.run(f"systemctl stop {kafka_unit(victim)}").rc == 0
        stopped = time.monotonic()
        try:
            # Within its `for`, plus a scrape to see the change, an evaluation to start pending and one to fire,
            # plus a scrape of slack for the exporter's own lag (under-replication shows after replica.lag.time.max).
            for name, window in windows.items():
                limit = window + 2 * scrape + 2 * evaluation + (30 if "Under" in name else 0)
                wait_until(lambda n=name: prometheus.state(n) == "firing", limit, f"{name} to fire", every_s=0.5)
                fired[name] = time.monotonic() - stopped
        finally:
            assert host.run(f"systemctl start {kafka_unit(victim)}").rc == 0
        started = time.monotonic()
        for name in windows:
            wait_until(lambda n=name: prometheus.state(n) == "inactive", 180, f"{name} to resolve", every_s=0.5)
            resolved[name] = time.monotonic() - started
        # With the broker back, the lag exporter serves every group again (a client that kept its metadata from
        # while the broker was away left that broker's groups out, with no error, until its next refresh).
        wait_until(
            lambda: lag_served_for_every_group(prometheus, cluster), 4 * scrape + 10, "every group's lag", every_s=1
        )
    finally:
        unresolved = producer.stop()
    assert unresolved == 0, f"while {victim} was stopped: {producer.diagnosis()}"
    consumed = e2e.consume_run(cluster.bootstrap, topic, producer.run_id)
    result = e2e.compare(producer.acked, consumed)
    e2e.delete_topic(cluster.bootstrap, topic)
    print(
        f"\nalerts on stopping {victim}: fired after {json.dumps({k: round(v, 1) for k, v in fired.items()})} s, "
        f"resolved {json.dumps({k: round(v, 1) for k, v in resolved.items()})} s after the start; "
        f"windows {windows}, scrape {scrape}s, evaluation {evaluation}s; sent={producer.sent} {result.summary()}"
    )
    assert result.lost == [], f"lost {len(result.lost)} acknowledged messages"
    assert result.duplicated == []


@pytest.mark.kraft
def test_a_stalled_consumer_group_fires_the_lag_alert(prometheus: Prometheus, cluster: Cluster) -> None:
    topic = f"monitoring-lag-{uuid.uuid4().hex[:8]}"
    group_id = f"stalled-{uuid.uuid4().hex[:8]}"
    threshold = int(prometheus.settings.get("prometheus_alert_lag_records", 1000))
    window = prometheus.interval("prometheus_alert_lag_for", "10m")
    scrape = prometheus.interval("prometheus_scrape_interval", "15s")
    e2e.create_topic(cluster.bootstrap, topic, partitions=1, replication=min(3, len(cluster.brokers)))
    consumer = KafkaConsumer(
        topic,
        **kafka_client.settings(),
        bootstrap_servers=cluster.bootstrap,
        group_id=group_id,
        auto_offset_reset="earliest",
    )
    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        producer.send(topic, b"first").get(timeout=30)
        wait_until(lambda: consumer.poll(timeout_ms=1000), 60, "the group to read the first record")
        consumer.commit()
        consumer.close()  # the group stops consuming; its committed offset stays
        began = time.monotonic()

        def alert_for_group() -> bool:
            producer.send(topic, b"x" * 100)
            alerts = prometheus.alerts("KafkaConsumerLagGrowing")
            return any(a["labels"].get("group") == group_id and a["state"] == "firing" for a in alerts)

        # The lag must pass the threshold (200 records/s here), then keep growing for the window.
        wait_until(alert_for_group, threshold / 50 + 2 * window + 4 * scrape + 30, "the lag alert", every_s=0.02)
        fired = time.monotonic() - began
        lag = prometheus.query(f'sum(kafka_consumergroup_lag{{group="{group_id}"}})')
        print(f"\nlag alert for {group_id} fired {fired:.1f}s after it stopped (window {window}s); lag {lag}")
    finally:
        producer.close()
        admin = KafkaAdminClient(
            **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-monitoring-test"
        )
        try:
            admin.delete_groups([group_id])
        finally:
            admin.close()
        e2e.delete_topic(cluster.bootstrap, topic)
