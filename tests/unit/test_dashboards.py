"""The dashboards for people: the Prometheus console page (roles/prometheus/files/consoles/kafka-overview.html) and
the Grafana dashboard (roles/prometheus/files/grafana/kafka-overview.json), checked without a server. Proved here:
every query they send parses as PromQL (Prometheus's own parser: `promtool check rules`, each query a recording
rule); every metric they name is one our exporters produce, read from the job that produces it (the Kafka names
are worked out from the JMX exporter's rules, so renaming a rule there breaks this test); the extraction
(kafkalab.dashboards) finds every query, collapsed rows and printf-built queries included; and the console page
carries the element ids that scripts read its numbers by, each rendering an integer."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab.dashboards import console_queries, dashboard_queries, grafana_substitute, metric_names

ROOT = Path(__file__).resolve().parents[2]
FILES = ROOT / "roles" / "prometheus" / "files"
CONSOLE = FILES / "consoles" / "kafka-overview.html"
GRAFANA = FILES / "grafana" / "kafka-overview.json"
JMX_RULES = ROOT / "roles" / "kafka" / "files" / "jmx-exporter.yml"
CONNECT_JMX_RULES = ROOT / "roles" / "kafka_connect" / "files" / "jmx-exporter.yml"

DASHBOARDS: dict[str, tuple[Path, Callable[[Path], list[str]]]] = {
    "console": (CONSOLE, console_queries),
    "grafana": (GRAFANA, dashboard_queries),
}

# What the JMX exporter agent reports of the JVM itself, next to the beans its rules read.
JMX_AGENT = {
    "jvm_memory_used_bytes",
    "jvm_memory_max_bytes",
    "jvm_gc_collection_seconds_count",
    "jvm_gc_collection_seconds_sum",
    "jvm_threads_current",
    "process_cpu_seconds_total",
}
# ZooKeeper panels keep to its heap: the rest of its exporter's names are not promised.
ZOOKEEPER = {"jvm_memory_used_bytes", "jvm_memory_max_bytes"}
# prometheus-node-exporter 1.5, and the textfile metric naming the file systems that hold Kafka log dirs.
NODE_EXPORTER = {
    "node_cpu_seconds_total",
    "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes",
    "node_filesystem_avail_bytes",
    "node_filesystem_size_bytes",
    "node_load1",
    "kafka_log_dir_info",
}
# The consumer-lag exporter. kafka_consumergroup_members is left out on purpose: it may be absent.
LAG_EXPORTER = {
    "kafka_consumergroup_lag",
    "kafka_consumergroup_committed_offset",
    "kafka_topic_partition_log_end_offset",
    "kafka_lag_exporter_scrape_seconds",
}

# The console page's cells that scripts read (per-broker and per-group ones are built from labels).
CONSOLE_IDS = [
    "brokers-up",
    "partitions-total",
    "partitions-offline",
    "partitions-under-replicated",
    "partitions-under-min-isr",
    "active-controllers",
    "broker-{{ .Labels.node_id }}-leaders",
    "broker-{{ .Labels.node_id }}-partitions",
    "group-{{ .Labels.group }}-lag",
    "connector-{{ .Labels.connector }}-tasks",
    "connector-{{ .Labels.connector }}-running",
]


def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail("promtool is not installed: `apt-get install prometheus` (Debian ships it there); .ci/run does")
    return found


def capture_groups(pattern: str) -> list[str]:
    """The text of each capturing group of a Java regex, numbered as Java numbers them (by opening paren)."""
    groups: list[str] = []
    open_at: list[tuple[int, int | None]] = []  # (start of the group's text, its index in groups or None)
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "(":
            capturing = not pattern.startswith("(?", index)
            open_at.append((index + 1, len(groups) if capturing else None))
            if capturing:
                groups.append("")
        elif char == ")":
            start, number = open_at.pop()
            if number is not None:
                groups[number] = pattern[start:index]
        index += 1
    return groups


def jmx_exporter_metric_names(rules_file: Path = JMX_RULES, *, listed_only: bool = False) -> set[str]:
    """The names a JMX exporter rules file (roles/kafka/files/jmx-exporter.yml by default) gives the beans: each
    rule's name with `$N` expanded to every alternative of the pattern's group N, lower-cased
    (lowercaseOutputName), each run of characters a metric name cannot hold made one underscore (as the exporter
    does), and `_total` after a COUNTER's name (as the 1.x exporter appends it). A rule whose name takes an open
    group such as ([a-z-]+) fails the test, or with `listed_only` is left out."""
    config = yaml.safe_load(rules_file.read_text())
    assert config["lowercaseOutputName"] is True, "the names below are worked out for lowercaseOutputName: true"
    names = set()
    for rule in config["rules"]:
        groups = capture_groups(rule["pattern"])
        references = [int(n) for n in re.findall(r"\$(\d+)", rule["name"])]
        listed = [groups[n - 1] for n in references]
        open_groups = [g for g in listed if not re.fullmatch(r"[\w-]+(\|[\w-]+)*", g)]
        if open_groups and listed_only:
            continue
        assert not open_groups, f"rule {rule['name']}: cannot list the names of ({open_groups[0]})"
        alternatives = [group.split("|") for group in listed]
        for choice in itertools.product(*alternatives):
            name = rule["name"]
            for number, value in zip(references, choice, strict=True):
                name = name.replace(f"${number}", value)
            name = re.sub(r"[^a-zA-Z0-9:]+", "_", name.lower())
            if rule.get("type") == "COUNTER" and not name.endswith("_total"):
                name += "_total"
            names.add(name)
    return names


def spark_job_metric_names() -> set[str]:
    """What the job's progress exporter (kafkalab_spark.metrics) serves for a query that has run batches."""
    from kafkalab_spark import metrics, progress

    batch = {
        "batchId": 1,
        "numInputRows": 1,
        "sources": [{"endOffset": {"t": {"0": 1}}, "latestOffset": {"t": {"0": 2}}}],
        "observedMetrics": {"latency": {"rows": 1, "max_ms": 1, "avg_ms": 1}},
    }
    doc = {"queries": {"records": {"rows_since_start": 1, "last_batch": progress.summarize_progress(batch)}}}
    text = metrics.exposition(doc, {"records": 1.0}, {"records": 10.0}, "app")
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


# Apicurio Registry 3.0.9's Micrometer endpoint (/metrics on its API port), read off a running registry: its REST
# calls counted by method, route template and status class.
SCHEMA_REGISTRY = {"rest_requests_count_total"}
# Spark's own servlets (PrometheusServlet) as the spark scenario reads them: the master's and the workers' gauges.
# A Connect worker (roles/kafka_connect/files/jmx-exporter.yml): the names its rules fix, and those of the worker's
# own gauges (rule kafka_connect_worker_$1) read off a running worker.
CONNECT_WORKER = {"kafka_connect_worker_connector_count", "kafka_connect_worker_task_count"}
SPARK_MASTER = {"metrics_master_aliveWorkers_Value", "metrics_master_apps_Value"}
SPARK_WORKER = {"metrics_worker_coresUsed_Value", "metrics_worker_memUsed_MB_Value"}


def metrics_by_job() -> dict[str, set[str]]:
    kafka = jmx_exporter_metric_names() | JMX_AGENT
    jobs = {
        "kafka": kafka,
        "zookeeper": ZOOKEEPER,
        "node": NODE_EXPORTER,
        "kafka_lag": LAG_EXPORTER,
        "spark_master": SPARK_MASTER,
        "spark_worker": SPARK_WORKER,
        "spark_job": spark_job_metric_names(),
        "schema_registry": SCHEMA_REGISTRY,
        "kafka_connect": jmx_exporter_metric_names(CONNECT_JMX_RULES, listed_only=True) | CONNECT_WORKER | JMX_AGENT,
    }
    return {job: names | {"up"} for job, names in jobs.items()}


def selected_jobs(expr: str, name: str) -> list[str | None]:
    """The job matcher of each selector of `name` in `expr` (None where a selector has none)."""
    jobs: list[str | None] = []
    for selector in re.finditer(rf"(?<![\w.:]){re.escape(name)}(?![\w:])\s*(\{{[^{{}}]*\}})?", expr):
        job = re.search(r"""\bjob\s*=\s*(["'])(.*?)\1""", selector.group(1) or "")
        jobs.append(job.group(2) if job else None)
    return jobs


def queries_of(dashboard: str) -> list[str]:
    path, extract = DASHBOARDS[dashboard]
    return extract(path)


def grafana_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for panel in panels for p in [panel, *grafana_panels(panel.get("panels", []))]]


def exprs_anywhere(node: object) -> list[str]:
    """Every value of an "expr" key, wherever it sits in a JSON document."""
    if isinstance(node, dict):
        found = [node["expr"]] if "expr" in node else []
        return found + [e for key, value in node.items() if key != "expr" for e in exprs_anywhere(value)]
    if isinstance(node, list):
        return [e for item in node for e in exprs_anywhere(item)]
    return []


@pytest.mark.parametrize("dashboard", DASHBOARDS)
def test_every_query_of_the_dashboard_parses_as_promql(dashboard: str, tmp_path: Path) -> None:
    queries = queries_of(dashboard)
    rules = [{"record": f"q_{n}", "expr": query} for n, query in enumerate(queries)]
    (tmp_path / "queries.rules.yml").write_text(yaml.safe_dump({"groups": [{"name": dashboard, "rules": rules}]}))
    check = subprocess.run(
        [promtool(), "check", "rules", "queries.rules.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    listing = "\n".join(f"q_{n}: {query}" for n, query in enumerate(queries))
    assert check.returncode == 0, f"{check.stdout}{check.stderr}\n{listing}"


@pytest.mark.parametrize("dashboard", DASHBOARDS)
def test_every_metric_the_dashboard_names_is_one_our_exporters_produce(dashboard: str) -> None:
    produced = set().union(*metrics_by_job().values())
    unknown = {(name, query) for query in queries_of(dashboard) for name in metric_names(query) - produced}
    assert not unknown, "metrics no exporter of ours produces:\n" + "\n".join(f"{n} in {q}" for n, q in sorted(unknown))


@pytest.mark.parametrize("dashboard", DASHBOARDS)
def test_every_metric_is_selected_from_the_job_that_produces_it(dashboard: str) -> None:
    jobs = metrics_by_job()
    wrong = []
    for query in queries_of(dashboard):
        for name in sorted(metric_names(query)):
            for job in selected_jobs(query, name):
                if job is None:
                    wrong.append(f"{name} without a job matcher in {query}")
                elif name not in jobs.get(job, set()):
                    wrong.append(f"{name} from job {job!r}, which does not produce it, in {query}")
    assert not wrong, "\n".join(wrong)


def test_the_kafka_metric_names_are_worked_out_as_the_jmx_exporter_names_them() -> None:
    # The oracle of the tests above, held to names read off a running 1.x exporter.
    assert {
        "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_replicamanager_isrshrinks_total",
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_network_requests_total",
        "kafka_network_request_total_time_ms",
        "kafka_controller_uncleanleaderelections_total",
        "kafka_controller_globalpartitioncount",
        "kafka_log_flushes_total",
        "kafka_raft_current_state",
        "kafka_raft_high_watermark",
    } <= jmx_exporter_metric_names()


def test_every_expr_of_the_grafana_dashboard_is_extracted_collapsed_rows_included() -> None:
    document = json.loads(GRAFANA.read_text())
    panels = [p for p in grafana_panels(document["panels"]) if p["type"] != "row"]
    nested = [p for row in document["panels"] if row["type"] == "row" for p in row.get("panels", [])]
    queries = dashboard_queries(GRAFANA)
    assert nested, "the dashboard has no collapsed row to prove nested panels are read"
    assert sorted(queries) == sorted(grafana_substitute(expr) for expr in exprs_anywhere(document))
    assert len(queries) >= len(panels)
    assert all(panel.get("targets") for panel in panels), "a panel without a query"


def test_grafana_panels_query_the_templated_prometheus_datasource() -> None:
    document = json.loads(GRAFANA.read_text())
    variables = {v["name"]: v for v in document["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    panels = [p for p in grafana_panels(document["panels"]) if p["type"] != "row"]
    assert len({p["id"] for p in grafana_panels(document["panels"])}) == len(grafana_panels(document["panels"]))
    for panel in panels:
        sources = [panel["datasource"], *(target["datasource"] for target in panel["targets"])]
        assert all(s == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"} for s in sources), panel["title"]


def test_grafana_variables_are_replaced_by_values_prometheus_accepts(tmp_path: Path) -> None:
    dashboard = {
        "panels": [
            {"type": "timeseries", "targets": [{"expr": 'rate(a_total{node=~"$node"}[$__rate_interval])'}]},
            {"type": "row", "collapsed": True, "panels": [{"targets": [{"expr": 'b{g=~"${group:regex}"}'}]}]},
            {"type": "stat", "targets": [{"expr": "increase(c_total[$__range])"}, {"expr": ""}]},
            {"type": "text"},
            {"type": "table", "targets": [{"expr": 'd{g=~"[[group]]"} > ${__range_s}'}]},
        ]
    }
    (tmp_path / "d.json").write_text(json.dumps(dashboard))
    assert dashboard_queries(tmp_path / "d.json") == [
        'rate(a_total{node=~".*"}[1m])',
        'b{g=~".*"}',
        "increase(c_total[1m])",
        'd{g=~".*"} > 60',
    ]


def test_console_extraction_reads_queries_in_every_form_the_page_may_write_them(tmp_path: Path) -> None:
    page = """{{/* query "not_a_query" in a comment */}}
{{ template "head" . }}
{{ if query "up{job='a'}" }}<p>yes</p>{{ end }}
{{ range $i, $s := query "sum by (x) (b{job='a'})" | sortByLabel "x" }}{{ end }}
{{ range printf "c{job='a',x='%s'}" .Labels.x | query }}{{ end }}
{{ with query (printf "d{job='a'} > %d" 3) }}{{ . | first | value }}{{ else }}-{{ end }}
<td>{{ template "prom_query_drilldown" (args "e{job='a'}" "" "printf.0f") }}</td>
<td>{{ template "prom_query_drilldown" (args (printf "f{job='a',x='%s'}" .Labels.x) "B" "humanize") }}</td>
<script>
new PromConsole.Graph({ node: document.querySelector("#g"), expr: "rate(g_total{job='a'}[5m])", name: "[[ x ]]" })
</script>
<script>
new PromConsole.Graph({
  node: document.querySelector("#h"),
  expr: [
    "h{job='a',instance='{{ .Params.instance }}'}",
    'i{job="a"}',
  ],
})
</script>
"""
    (tmp_path / "page.html").write_text(page)
    assert console_queries(tmp_path / "page.html") == [
        "up{job='a'}",
        "sum by (x) (b{job='a'})",
        "c{job='a',x='x'}",
        "d{job='a'} > 0",
        "e{job='a'}",
        "f{job='a',x='x'}",
        "rate(g_total{job='a'}[5m])",
        "h{job='a',instance='x'}",
        'i{job="a"}',
    ]


def test_a_console_query_whose_expression_is_not_on_the_page_is_refused(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("{{ with query .Params.expr }}{{ . | first | value }}{{ end }}")
    with pytest.raises(ValueError, match="cannot read the expression"):
        console_queries(tmp_path / "page.html")


def test_the_console_page_yields_a_query_for_every_graph_and_drilldown() -> None:
    page = CONSOLE.read_text()
    expected = page.count('template "prom_query_drilldown"') + page.count("new PromConsole.Graph(")
    queries = console_queries(CONSOLE)
    assert expected >= 10
    assert len(queries) >= expected


@pytest.mark.parametrize("element_id", CONSOLE_IDS)
def test_the_console_page_has_the_cell_scripts_read(element_id: str) -> None:
    assert f'id="{element_id}"' in CONSOLE.read_text()


def test_every_numeric_cell_of_the_console_page_renders_an_integer_or_a_dash() -> None:
    # Drilldowns print "-" when the query returns nothing; printf "%.0f" drops the fraction a float would show.
    cells = re.findall(r'<td id="([^"]*)"[^>]*>(.*?)</td>', CONSOLE.read_text(), re.DOTALL)
    numeric = [(i, body) for i, body in cells if not i.endswith(("-up", "-state")) or i == "brokers-up"]
    assert len(numeric) >= len(CONSOLE_IDS)
    for element_id, body in numeric:
        assert '"printf.0f"' in body or 'printf "%.0f"' in body, f"cell {element_id}: {body}"
