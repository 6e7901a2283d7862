"""The alert rules Prometheus loads, checked by Prometheus's own tool: `promtool check rules` on the rendered
file, and `promtool test rules` (tests/unit/alerts/*.test.yml): each alert fires on synthetic series once its
`for` has passed, not before, and resolves."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "prometheus"
TESTS = Path(__file__).parent / "alerts"


def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail("promtool is not installed: `apt-get install prometheus` (Debian ships it there); .ci/run does")
    return found


def render(name: str, **overrides: object) -> str:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string((ROLE / "templates" / f"{name}.j2").read_text()).render(**{**defaults, **overrides})


def test_every_alert_fires_after_its_for_and_not_before(tmp_path: Path) -> None:
    (tmp_path / "kafka-alerts.rules.yml").write_text(render("kafka-alerts.rules.yml"))
    for test in TESTS.glob("*.test.yml"):
        shutil.copy(test, tmp_path)
    check = subprocess.run(
        [promtool(), "check", "rules", "kafka-alerts.rules.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run(
        [promtool(), "test", "rules", *sorted(p.name for p in tmp_path.glob("*.test.yml"))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# A Spark cluster of two hosts (the master on spark1, workers on both) and the consumer job's two applications, as
# the spark and spark_consumer roles publish them.
SPARK = {
    "cluster": {
        "master": "spark1",
        "addresses": {"spark1": "192.0.2.21", "spark2": "192.0.2.22"},
        "workers": {"spark1": {"cores": 2, "memory_mb": 2048}, "spark2": {"cores": 2, "memory_mb": 2048}},
        "webui_ports": {"master": 8080, "worker": 8081},
    },
    "job": {
        "host": "spark1",
        "address": "192.0.2.21",
        "apps": [
            {"name": "consumer", "ui_port": 4040, "metrics_port": 9311},
            {"name": "consumer-realtime", "ui_port": 4041, "metrics_port": 9312},
        ],
    },
}


def test_scrape_config_names_every_exporter_with_its_host_and_promtool_accepts_it(tmp_path: Path) -> None:
    from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
    from ansible_collections.kafkalab.kafka.plugins.filter.prometheus_model import (
        prometheus_model,
        prometheus_scrape_configs,
    )
    from test_preflight_refusals import KAFKA

    hostvars = {f"kafka{i}": {"ansible_host": f"192.0.2.1{i}", "kafka_node_id": i} for i in (1, 2, 3)}
    hostvars["mon1"] = {"ansible_host": "192.0.2.30"}
    hostvars.update({"spark1": {"ansible_host": "192.0.2.21"}, "spark2": {"ansible_host": "192.0.2.22"}})
    settings = {**KAFKA, "metrics_enabled": True, "metrics_port": 7071}
    names = ["kafka1", "kafka2", "kafka3"]
    kafka = kafka_cluster_model(hostvars, names, names, settings)
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    model = prometheus_model(
        hostvars,
        {"kafka": names, "monitoring": ["mon1"]},
        kafka,
        {"servers": {"kafka1": {"address": "192.0.2.11", "myid": 1}}, "ports": {"metrics_port": 7072}},
        {
            **defaults,
            "group": "monitoring",
            "port": 9090,
            "lag_exporter_port": 9308,
            "node_exporter_enabled": True,
            "node_exporter_port": 9100,
        },
        SPARK,
    )
    assert model["problems"] == []
    jobs = {j["name"]: j["targets"] for j in model["jobs"]}
    assert [t["address"] for t in jobs["kafka"]] == ["192.0.2.11:7071", "192.0.2.12:7071", "192.0.2.13:7071"]
    assert jobs["kafka"][0]["labels"] == {"node": "kafka1", "node_id": "1", "roles": "broker+controller"}
    assert [t["labels"]["node"] for t in jobs["node"]] == ["kafka1", "kafka2", "kafka3", "mon1"]
    assert jobs["zookeeper"] == [{"address": "192.0.2.11:7072", "labels": {"node": "kafka1", "myid": "1"}}]
    # Every exporter port is opened to the monitoring host and networks, and nothing else.
    opened = {s["name"]: (s["port"], s.get("from_hosts"), s["from_networks"]) for s in model["firewall_services"]}
    assert opened["kafka metrics"] == (7071, ["mon1"], ["monitoring"])
    assert opened["node exporter"] == (9100, ["mon1"], ["monitoring"])
    assert opened["prometheus"] == (9090, None, ["monitoring"])
    # Spark: the master's and the workers' servlets, each driver's servlet and the job's own exporter.
    assert jobs["spark_master"] == [{"address": "192.0.2.21:8080", "labels": {"node": "spark1"}}]
    assert [t["address"] for t in jobs["spark_worker"]] == ["192.0.2.21:8081", "192.0.2.22:8081"]
    assert [(t["address"], t["labels"]["app"]) for t in jobs["spark_driver"]] == [
        ("192.0.2.21:4040", "consumer"),
        ("192.0.2.21:4041", "consumer-realtime"),
    ]
    assert [t["address"] for t in jobs["spark_job"]] == ["192.0.2.21:9311", "192.0.2.21:9312"]
    spark_opened = {(s["name"], s["port"]): (s["hosts"], s["from_hosts"], s["from_networks"])
                    for s in model["firewall_services"] if s["name"].startswith("spark")}  # fmt: skip
    # The web UIs are open to the monitoring networks already (the spark role); Prometheus's host is added.
    assert spark_opened[("spark metrics", 8081)] == (["spark1", "spark2"], ["mon1"], [])
    assert spark_opened[("spark metrics", 4041)] == (["spark1"], ["mon1"], [])
    assert spark_opened[("spark job metrics", 9311)] == (["spark1"], ["mon1"], ["monitoring"])

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["kafkalab.kafka.prometheus_scrape_configs"] = prometheus_scrape_configs
    env.filters["to_nice_yaml"] = lambda data, indent=2: yaml.safe_dump(data, indent=indent, sort_keys=False)
    text = env.from_string((ROLE / "templates" / "prometheus.yml.j2").read_text()).render(
        **defaults,
        ansible_managed="test",
        inventory_hostname="mon1",
        hostvars={"localhost": {"prometheus_monitoring": model}},
    )
    (tmp_path / "prometheus.yml").write_text(text)
    check = subprocess.run(
        [promtool(), "check", "config", "--syntax-only", "prometheus.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr + text
    parsed = yaml.safe_load(text)
    assert [c["job_name"] for c in parsed["scrape_configs"]] == [
        "kafka",
        "zookeeper",
        "node",
        "spark_master",
        "spark_worker",
        "spark_driver",
        "spark_job",
        "kafka_lag",
        "prometheus",
    ]
    paths = {c["job_name"]: c.get("metrics_path", "/metrics") for c in parsed["scrape_configs"]}
    assert (paths["spark_master"], paths["spark_worker"], paths["spark_driver"], paths["spark_job"]) == (
        # Spark's servlets answer the path without its slash with a redirect (301).
        "/metrics/master/prometheus/",
        "/metrics/prometheus/",
        "/metrics/prometheus/",
        "/metrics",
    )
