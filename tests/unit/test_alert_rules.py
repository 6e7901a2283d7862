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


def test_every_alert_has_a_promtool_case() -> None:
    rules = yaml.safe_load(render("kafka-alerts.rules.yml"))
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tested = {
        t["alertname"]
        for f in TESTS.glob("*.test.yml")
        for case in yaml.safe_load(f.read_text())["tests"]
        for t in case.get("alert_rule_test", [])
    }
    assert {"SchemaRegistryDown", "SchemaRegistryRegistrationFailing"} <= alerts
    assert alerts - tested == set()


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


# Two schema registry instances over https, as the schema_registry role's preflight publishes them.
REGISTRY = {
    "instances": {
        "registry1": {"address": "192.0.2.41", "port": 8081, "url": "https://192.0.2.41:8081"},
        "registry2": {"address": "192.0.2.42", "port": 8081, "url": "https://192.0.2.42:8081"},
    },
    "scheme": "https",
    "metrics_path": "/metrics",
    "client_ca": "/work/pki/ca/trust.pem",
    "firewall_services": [],
    "problems": [],
}
# Two Kafka Connect workers, as the kafka_connect role's preflight publishes them: one exports metrics.
CONNECT = {
    "workers": {
        "connect1": {"address": "192.0.2.51", "port": 8083, "metrics_port": 7073},
        "connect2": {"address": "192.0.2.52", "port": 8083, "metrics_port": None},
    }
}
# A PostgreSQL server on spark1, as the postgresql role's preflight publishes it: its exporter's port.
POSTGRESQL = {"servers": {"spark1": {"address": "192.0.2.21", "port": 5432, "metrics_port": 9187}}}
REGISTRY_CA_FILE = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__prometheus_registry_ca_file"]


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
        {"kafka": names, "monitoring": ["mon1"], "postgresql": ["spark1"]},
        kafka,
        {"servers": {"kafka1": {"address": "192.0.2.11", "myid": 1}}, "ports": {"metrics_port": 7072}},
        {
            **defaults,
            "group": "monitoring",
            "port": 9090,
            "lag_exporter_port": 9308,
            "node_exporter_enabled": True,
            "node_exporter_port": 9100,
            "registry_ca_file": REGISTRY_CA_FILE,
        },
        SPARK,
        REGISTRY,
        CONNECT,
        POSTGRESQL,
    )
    assert model["problems"] == []
    jobs = {j["name"]: j["targets"] for j in model["jobs"]}
    assert [t["address"] for t in jobs["kafka"]] == ["192.0.2.11:7071", "192.0.2.12:7071", "192.0.2.13:7071"]
    assert jobs["kafka"][0]["labels"] == {"node": "kafka1", "node_id": "1", "roles": "broker+controller"}
    # Every managed host has a node exporter, a PostgreSQL host in no other group too.
    assert [t["labels"]["node"] for t in jobs["node"]] == ["kafka1", "kafka2", "kafka3", "mon1", "spark1"]
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

    # The registry: one https target per instance on its API port, trusting a copy of its client_ca.
    assert jobs["schema_registry"] == [
        {"address": "192.0.2.41:8081", "labels": {"node": "registry1"}},
        {"address": "192.0.2.42:8081", "labels": {"node": "registry2"}},
    ]
    registry_job = next(j for j in model["jobs"] if j["name"] == "schema_registry")
    assert registry_job["ca"] == {"source": "/work/pki/ca/trust.pem", "path": REGISTRY_CA_FILE}
    # Its port is the registry role's to open: the monitoring model adds no firewall record for it.
    assert not [s for s in model["firewall_services"] if "registry" in s["name"]]

    # Kafka Connect: each worker's JMX exporter, plain http; its port is the kafka_connect role's to open.
    assert jobs["kafka_connect"] == [{"address": "192.0.2.51:7073", "labels": {"node": "connect1"}}]
    assert not [s for s in model["firewall_services"] if "connect" in s["name"]]
    # PostgreSQL: each server's exporter, plain http; its port is the postgresql role's to open.
    assert jobs["postgresql"] == [{"address": "192.0.2.21:9187", "labels": {"node": "spark1"}}]
    assert not [s for s in model["firewall_services"] if "postgresql" in s["name"]]

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
        "schema_registry",
        "kafka_connect",
        "postgresql",
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
    registry_config = next(c for c in parsed["scrape_configs"] if c["job_name"] == "schema_registry")
    assert (registry_config["scheme"], registry_config["metrics_path"]) == ("https", "/metrics")
    # The certificates carry the instance's IP address, which Prometheus checks them against: no server_name.
    assert registry_config["tls_config"] == {"ca_file": REGISTRY_CA_FILE}
    assert registry_config["static_configs"][0] == {"targets": ["192.0.2.41:8081"], "labels": {"node": "registry1"}}
    assert all(
        "tls_config" not in c and "scheme" not in c for c in parsed["scrape_configs"] if c is not registry_config
    )


NO_REGISTRY = {"instances": {}, "scheme": "http", "metrics_path": "/metrics", "client_ca": "", "firewall_services": [],
               "problems": []}  # fmt: skip


@pytest.mark.parametrize("registry", [None, {}, NO_REGISTRY], ids=["not passed", "undefined", "no hosts"])
def test_an_inventory_without_registry_hosts_has_no_registry_job(registry: dict[str, object] | None) -> None:
    from ansible_collections.kafkalab.kafka.plugins.filter.prometheus_model import prometheus_model
    from test_preflight_refusals import PROMETHEUS

    model = prometheus_model({"mon1": {"ansible_host": "192.0.2.30"}}, {"monitoring": ["mon1"]}, {}, {}, PROMETHEUS,
                             None, registry)  # fmt: skip
    assert model["problems"] == []
    assert "schema_registry" not in [j["name"] for j in model["jobs"]]


def test_a_registry_over_plain_http_is_scraped_without_tls() -> None:
    from ansible_collections.kafkalab.kafka.plugins.filter.prometheus_model import (
        prometheus_model,
        prometheus_scrape_configs,
    )
    from test_preflight_refusals import PROMETHEUS

    registry = {
        **NO_REGISTRY,
        "instances": {"registry1": {"address": "192.0.2.41", "port": 8080, "url": "http://192.0.2.41:8080"}},
    }
    model = prometheus_model({}, {}, {}, {}, {**PROMETHEUS, "registry_ca_file": REGISTRY_CA_FILE}, None, registry)
    config = next(c for c in prometheus_scrape_configs(model) if c["job_name"] == "schema_registry")
    assert config == {
        "job_name": "schema_registry",
        "metrics_path": "/metrics",
        "static_configs": [{"targets": ["192.0.2.41:8080"], "labels": {"node": "registry1"}}],
    }


def test_a_registry_over_https_without_its_ca_is_refused() -> None:
    from ansible_collections.kafkalab.kafka.plugins.filter.prometheus_model import prometheus_model
    from test_preflight_refusals import PROMETHEUS

    model = prometheus_model(
        {}, {}, {}, {}, {**PROMETHEUS, "registry_ca_file": REGISTRY_CA_FILE}, None, {**REGISTRY, "client_ca": ""}
    )
    assert model["problems"] == [
        "the schema registry serves 'https' with client_ca '', which Prometheus cannot scrape (https needs the CA that "
        "signed the registry's certificates): check schema_registry_cluster from the schema_registry role's preflight."
    ]
