"""The monitoring model: what Prometheus scrapes, who may reach each exporter, and every problem in the inventory's
monitoring settings. Built once on the controller (tasks/preflight.yml) from the other roles' public models.

    {"servers": [monitoring hosts],
     "jobs": [{"name": "kafka" | "zookeeper" | "node" | "spark_master" | "spark_worker" | "spark_driver" |
                       "spark_job" | "schema_registry" | "kafka_connect" | "postgresql" | "kafka_lag" | "prometheus",
               "metrics_path": "/metrics" unless the exporter serves elsewhere (Spark's servlets),
               "scheme": "https" where the target serves TLS (the schema registry's API port), else absent (http),
               "ca": {"source": the CA bundle on the controller, "path": its copy on the monitoring hosts} with https,
               "targets": [{"address": "10.0.0.1:7071", "labels": {"node": host, ...}}]}],
     "firewall_services": [firewall role records], "problems": [str]}

The schema registry (Apicurio, a Quarkus app) serves its Micrometer metrics on its API port, so its job is the
registry's own model (schema_registry_cluster: instances, scheme, metrics_path, client_ca) as it stands; the
registry role opens that port to the monitoring hosts.

Pure functions over plain data (unit tested in tests/unit/test_preflight_refusals.py and test_alert_rules.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    FIREWALL_ADDRESS,
    as_bool,
    as_int,
    get,
    host_address,
    is_port,
    machine,
)

# A Prometheus duration as its config accepts it: 30s, 5m, 1h30m, 500ms.
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
DURATIONS = (
    "prometheus_scrape_interval",
    "prometheus_evaluation_interval",
    "prometheus_retention_time",
    "prometheus_alert_offline_for",
    "prometheus_alert_under_replicated_for",
    "prometheus_alert_under_min_isr_for",
    "prometheus_alert_controller_for",
    "prometheus_alert_down_for",
    "prometheus_alert_lag_for",
    "prometheus_alert_disk_for",
    "prometheus_alert_spark_stalled_for",
    "prometheus_alert_certificate_for",
    "prometheus_alert_registration_window",
    "prometheus_alert_connect_failed_for",
    "prometheus_alert_mirror_latency_for",
    "prometheus_alert_slot_for",
)


def _address(hostvars: Mapping[str, Any], host: str) -> str:
    """Where Prometheus reaches a host's node exporter: the address its firewall rules know it by."""
    return str(host_address(hostvars, host, FIREWALL_ADDRESS, bare_names=True))


# The settings that are whole numbers: (name, the least it may be, what it counts and an example).
WHOLE_NUMBERS = (
    ("prometheus_alert_lag_records", 0, "records (e.g. 1000)"),
    ("prometheus_alert_mirror_latency_ms", 1, "milliseconds (e.g. 30000)"),
    ("prometheus_alert_slot_retained_bytes", 1, "bytes (e.g. 4294967296)"),
    ("prometheus_alert_spark_stalled_reports", 1, "report intervals, at least 1 (e.g. 5)"),
    ("prometheus_alert_certificate_days", 1, "days, at least 1 (e.g. 14)"),
)


def _setting_problems(settings: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in DURATIONS:
        value = settings.get(name)
        if not isinstance(value, str) or not DURATION.match(value):
            problems.append(
                f"{name} is {value!r}: it must be a Prometheus duration such as 30s, 5m or 1h (a quoted string). "
                f"Fix {name} in group_vars."
            )
    for name, minimum, what in WHOLE_NUMBERS:
        value = settings.get(name)
        if isinstance(value, bool) or as_int(value) is None or (as_int(value) or 0) < minimum:
            problems.append(f"{name} is {value!r}: it must be a whole number of {what}. Fix {name} in group_vars.")
    ratio = settings.get("prometheus_alert_disk_used_ratio")
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        problems.append(
            f"prometheus_alert_disk_used_ratio is {ratio!r}: it must be a number above 0 and at most 1 "
            "(0.85 alerts at 85 % full). Fix prometheus_alert_disk_used_ratio in group_vars."
        )
    return problems


def _machine_ports(
    hostvars: Mapping[str, Any], kafka: Mapping[str, Any], zookeeper: Mapping[str, Any]
) -> dict[str, dict[int, str]]:
    """Every port the Kafka and ZooKeeper roles open, by machine, named for the messages."""
    used: dict[str, dict[int, str]] = {}
    for host, node in kafka.get("nodes", {}).items():
        ports = used.setdefault(str(node.get("machine")), {})
        for item in node.get("listeners", []):
            ports[int(item["port"])] = f"Kafka listener {item['name']} of {host}"
        if node.get("controller_port"):
            ports[int(node["controller_port"])] = f"the KRaft controller port of {host}"
        if node.get("metrics_port"):
            ports[int(node["metrics_port"])] = f"kafka_metrics_port of {host}"
    zk_ports = zookeeper.get("ports", {})
    for host in zookeeper.get("servers", {}):
        ports = used.setdefault(machine(hostvars, host), {})
        for name, port in zk_ports.items():
            if port is not None:
                ports.setdefault(int(port), f"zookeeper_{name} of {host}")
    return used


def _registry_job(registry: Mapping[str, Any], ca_file: str) -> tuple[dict[str, Any], list[str]]:
    """The schema registry's scrape job: one target per instance, on its API port (Micrometer's /metrics there).

    Over https Prometheus checks the certificate against the target's address (an IP SAN of every registry
    certificate), so no server_name is needed; it trusts a copy of the registry's client_ca (ca.path)."""
    instances = registry.get("instances") or {}
    scheme = str(registry.get("scheme") or "http")
    job: dict[str, Any] = {
        "name": "schema_registry",
        "metrics_path": str(registry.get("metrics_path") or "/metrics"),
        "targets": [
            {"address": f"{i['address']}:{i['port']}", "labels": {"node": host}} for host, i in instances.items()
        ],
    }
    if not instances or scheme == "http":
        return job, []
    client_ca = str(registry.get("client_ca") or "")
    if scheme != "https" or not client_ca or not ca_file:
        # The registry's model is built by its own preflight: this is a mismatch between two roles, not a setting.
        return job, [
            f"the schema registry serves {scheme!r} with client_ca {client_ca!r}, which Prometheus cannot scrape "
            "(https needs the CA that signed the registry's certificates): check schema_registry_cluster from the "
            "schema_registry role's preflight."
        ]
    return {**job, "scheme": "https", "ca": {"source": client_ca, "path": ca_file}}, []


def prometheus_model(
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    kafka: Mapping[str, Any],
    zookeeper: Mapping[str, Any],
    settings: Mapping[str, Any],
    spark: Mapping[str, Any] | None = None,
    registry: Mapping[str, Any] | None = None,
    connect: Mapping[str, Any] | None = None,
    postgresql: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """settings: the prometheus role's variables (port, lag exporter port, durations, thresholds, group names,
    registry_ca_file: where the monitoring hosts keep the registry's CA) and the node exporter's defaults
    (node_exporter_enabled, node_exporter_port) for hosts that do not set their own.
    spark: {"cluster": the spark role's spark_cluster, "job": the spark_consumer role's spark_consumer_endpoints}
    (either empty without Spark hosts).
    registry: the schema_registry role's schema_registry_cluster ({} or no instances without registry hosts).
    connect: the kafka_connect role's kafka_connect_cluster ({} or no workers without Connect hosts); its workers'
    JMX exporter ports are its own, and opened by it (its firewall services).
    postgresql: the postgresql role's postgresql_cluster ({} or no servers without PostgreSQL hosts); its servers'
    exporter ports are its own, and opened by it."""
    problems = _setting_problems(settings)
    monitoring_group = str(settings.get("group") or "monitoring")
    servers = list(groups.get(monitoring_group) or [])
    # The hosts this project manages (the firewall role's groups): each gets a node exporter.
    cluster = list(
        dict.fromkeys(
            h
            for g in ("kafka", "zookeeper", "spark", monitoring_group, "schema_registry", "kafka_connect", "postgresql")
            for h in groups.get(g) or []
        )
    )
    kafka_nodes = kafka.get("nodes", {})
    zk_servers = zookeeper.get("servers", {})
    zk_port = (zookeeper.get("ports") or {}).get("metrics_port")

    node_exporters: dict[str, tuple[str, int]] = {}  # machine -> (first host on it, port)
    for host in cluster:
        enabled = as_bool(get(hostvars, host, "node_exporter_enabled", settings.get("node_exporter_enabled")))
        if enabled is None:
            problems.append(f"{host}: node_exporter_enabled must be true or false. Fix it for {host}.")
            continue
        raw = get(hostvars, host, "node_exporter_port", settings.get("node_exporter_port"))
        if not enabled:
            continue
        if not is_port(raw):
            problems.append(f"{host}: node_exporter_port '{raw}' is not a TCP port number. Fix it for {host}.")
            continue
        node_exporters.setdefault(machine(hostvars, host), (host, int(as_int(raw) or 0)))

    exporting = [
        *(f"{h} (kafka_metrics_enabled)" for h, n in kafka_nodes.items() if n.get("metrics_port")),
        *(f"{h} (zookeeper_metrics_enabled)" for h in zk_servers if zk_port),
        *(f"{h} (node_exporter_enabled)" for h, _port in node_exporters.values()),
    ]
    if exporting and not servers:
        problems.append(
            f"metrics exporters are on for {', '.join(exporting[:6])}{' ...' if len(exporting) > 6 else ''} but group "
            f"{monitoring_group} has no host, so nothing would scrape them. Put the host that runs Prometheus in group "
            f"{monitoring_group}, or set kafka_metrics_enabled, zookeeper_metrics_enabled and node_exporter_enabled "
            "to false."
        )

    # Ports that must not clash on one machine: the exporters and Prometheus against Kafka's, ZooKeeper's and Spark's.
    used = _machine_ports(hostvars, kafka, zookeeper)
    spark_cluster = (spark or {}).get("cluster") or {}
    spark_job = (spark or {}).get("job") or {}
    spark_webui = spark_cluster.get("webui_ports") or {}
    spark_master = str(spark_cluster.get("master") or "")
    spark_workers = list(spark_cluster.get("workers") or {})
    spark_addresses = spark_cluster.get("addresses") or {}
    apps = list(spark_job.get("apps") or []) if spark_master else []
    exporting_apps = [a for a in apps if a.get("metrics_port")]
    # Spark's web UIs (the master's, each worker's, each driver's): (host, port, what), scraped and guarded alike.
    spark_ui = (
        [(spark_master, spark_webui.get("master"), f"spark_master_webui_port of {spark_master}")]
        if spark_master
        else []
    )
    spark_ui += [(h, spark_webui.get("worker"), f"spark_worker_webui_port of {h}") for h in spark_workers]
    spark_ui += [(spark_master, a["ui_port"], f"the Spark UI port of {a['name']} on {spark_master}") for a in apps]
    for host, ui_port, what in spark_ui:
        used.setdefault(machine(hostvars, host), {}).setdefault(int(ui_port or 0), what)
    own_ports: list[tuple[str, str, int, str]] = [
        (m, h, p, f"node_exporter_port of {h}") for m, (h, p) in node_exporters.items()
    ]
    for host in servers:
        for name in ("prometheus_port", "prometheus_lag_exporter_port"):
            port = as_int(get(hostvars, host, name, settings.get(name.removeprefix("prometheus_"))))
            if port is None or not is_port(port):
                problems.append(f"{host}: {name} is not a TCP port number. Fix {name}.")
                continue
            own_ports.append((machine(hostvars, host), host, port, f"{name} of {host}"))
    connect_workers = {h: w for h, w in ((connect or {}).get("workers") or {}).items() if w.get("metrics_port")}
    own_ports += [
        (machine(hostvars, h), h, int(w["metrics_port"]), f"kafka_connect_metrics_port of {h}")
        for h, w in connect_workers.items()
    ]
    pg_servers = {h: s for h, s in ((postgresql or {}).get("servers") or {}).items() if s.get("metrics_port")}
    own_ports += [
        (machine(hostvars, h), h, int(s["metrics_port"]), f"postgresql_metrics_port of {h}")
        for h, s in pg_servers.items()
    ]
    own_ports += [
        (
            machine(hostvars, spark_master),
            spark_master,
            int(app["metrics_port"]),
            f"{app.get('metrics_port_variable', 'the metrics port')} (the metrics of {app['name']})",
        )
        for app in exporting_apps
    ]
    for where, host, port, what in own_ports:
        taken = used.setdefault(where, {})
        if port in taken:
            problems.append(
                f"{host}: {what} is {port}, which {taken[port]} uses too on the same machine. Give one of them "
                "another port."
            )
        else:
            taken[port] = what

    jobs: list[dict[str, Any]] = []
    jobs.append(
        {
            "name": "kafka",
            "targets": [
                {
                    "address": f"{n['address']}:{n['metrics_port']}",
                    "labels": {"node": h, "node_id": str(n["node_id"]), "roles": "+".join(n.get("roles", []))},
                }
                for h, n in kafka_nodes.items()
                if n.get("metrics_port")
            ],
        }
    )
    if zk_port:
        jobs.append(
            {
                "name": "zookeeper",
                "targets": [
                    {"address": f"{s['address']}:{zk_port}", "labels": {"node": h, "myid": str(s.get("myid"))}}
                    for h, s in zk_servers.items()
                ],
            }
        )
    jobs.append(
        {
            "name": "node",
            "targets": [
                {"address": f"{_address(hostvars, h)}:{p}", "labels": {"node": h}} for h, p in node_exporters.values()
            ],
        }
    )
    if spark_master and servers:
        # Spark's own servlets on the web UI ports (spark role's metrics.properties, the job's spark-submit
        # properties), and the job's progress exporter (kafkalab_spark.metrics).
        master_target = {
            "address": f"{spark_addresses[spark_master]}:{spark_webui.get('master')}",
            "labels": {"node": spark_master},
        }
        jobs.append({"name": "spark_master", "metrics_path": "/metrics/master/prometheus/", "targets": [master_target]})
        jobs.append(
            {
                "name": "spark_worker",
                "metrics_path": "/metrics/prometheus/",
                "targets": [
                    {"address": f"{spark_addresses[h]}:{spark_webui.get('worker')}", "labels": {"node": h}}
                    for h in spark_workers
                ],
            }
        )
        driver = spark_job.get("address") or spark_addresses[spark_master]
        labels = {"node": str(spark_job.get("host") or spark_master)}
        jobs.append(
            {
                "name": "spark_driver",
                "metrics_path": "/metrics/prometheus/",
                "targets": [
                    {"address": f"{driver}:{a['ui_port']}", "labels": {**labels, "app": a["name"]}} for a in apps
                ],
            }
        )
        jobs.append(
            {
                "name": "spark_job",
                "targets": [
                    {"address": f"{driver}:{a['metrics_port']}", "labels": {**labels, "app": a["name"]}}
                    for a in exporting_apps
                ],
            }
        )
    registry_job, registry_problems = _registry_job(registry or {}, str(settings.get("registry_ca_file") or ""))
    problems += registry_problems
    jobs.append(registry_job)
    jobs.append(
        {
            "name": "kafka_connect",
            "targets": [
                {"address": f"{w['address']}:{w['metrics_port']}", "labels": {"node": h}}
                for h, w in connect_workers.items()
            ],
        }
    )
    jobs.append(
        {
            "name": "postgresql",
            "targets": [
                {"address": f"{s['address']}:{s['metrics_port']}", "labels": {"node": h}} for h, s in pg_servers.items()
            ],
        }
    )
    lag_port = as_int(settings.get("lag_exporter_port"))
    port = as_int(settings.get("port"))
    jobs.append({"name": "kafka_lag", "targets": [{"address": f"127.0.0.1:{lag_port}", "labels": {}}]})
    jobs.append({"name": "prometheus", "targets": [{"address": f"127.0.0.1:{port}", "labels": {}}]})
    jobs = [j for j in jobs if j["targets"]]

    def services_of(name: str, ports: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        """One record per port (instances on one machine each have their own), open to the monitoring hosts and
        networks."""
        by_port: dict[Any, list[str]] = {}
        for host, exporter_port in ports:
            by_port.setdefault(exporter_port, []).append(host)
        return [
            {"name": name, "hosts": hosts, "port": p, "from_hosts": servers, "from_networks": ["monitoring"]}
            for p, hosts in by_port.items()
        ]

    services = services_of(
        "kafka metrics", [(h, n["metrics_port"]) for h, n in kafka_nodes.items() if n.get("metrics_port")]
    )
    services += services_of("zookeeper metrics", [(h, zk_port) for h in zk_servers] if zk_port else [])
    services += services_of("node exporter", list(node_exporters.values()))
    if spark_master and servers:
        # The spark role opens the web UIs to the monitoring networks; Prometheus's host scrapes them too.
        ui = [(host, ui_port) for host, ui_port, _other in spark_ui]
        services += [{**s, "from_networks": []} for s in services_of("spark metrics", ui)]
        services += services_of("spark job metrics", [(spark_master, a["metrics_port"]) for a in exporting_apps])
    if servers:
        # The Prometheus UI and API: the monitoring networks (operators, dashboards) only.
        services.append({"name": "prometheus", "hosts": servers, "port": port, "from_networks": ["monitoring"]})
    return {"servers": servers, "jobs": jobs, "firewall_services": services, "problems": problems}


def prometheus_scrape_configs(model: Mapping[str, Any]) -> list[dict[str, Any]]:
    """prometheus.yml's scrape_configs (every job at the global scrape interval): one static_config per target, so
    each keeps its own labels."""
    return [
        {
            "job_name": job["name"],
            **({"metrics_path": job["metrics_path"]} if job.get("metrics_path") else {}),
            **({"scheme": job["scheme"]} if job.get("scheme") else {}),
            **({"tls_config": {"ca_file": job["ca"]["path"]}} if job.get("ca") else {}),
            "static_configs": [{"targets": [t["address"]], "labels": t["labels"]} for t in job["targets"]],
        }
        for job in model.get("jobs", [])
    ]


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"prometheus_model": prometheus_model, "prometheus_scrape_configs": prometheus_scrape_configs}
