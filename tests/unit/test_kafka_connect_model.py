"""The Kafka Connect model (plugins/filter/kafka_connect_model.py) and the connectors module's plan
(plugins/modules/kafka_connectors.py): workers, Kafka access and ACLs, firewall, and every refusal of bad settings,
each message naming the variable, the bad value and the fix."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_connect_model import (
    kafka_connect_model,
    kafka_connect_plugin,
    kafka_connect_secret_file,
)
from ansible_collections.kafkalab.kafka.plugins.modules.kafka_connectors import (
    masked,
    may_run_taskless,
    pending,
    plan,
    validation_errors,
)

HOSTVARS = {"kafka4": {"firewall_address": "10.0.0.14"}, "kmon": {"firewall_address": "10.0.0.30"}}
GROUPS = {"kafka_connect": ["kafka4", "kmon"], "monitoring": ["kmon"], "etl": ["etl1"]}
KAFKA = {
    "bootstrap_servers": "10.0.0.11:9092",
    "inter_broker_protocol": "SASL_SSL",
    "tls_ca_dir": "/inv/.pki",
    "nodes": {f"kafka{i}": {"roles": ["broker", "controller"]} for i in (1, 2, 3)},
}
SECURITY = {"users": {"connect": {"state": "present"}}}
SINK = {
    "name": "orders-sink",
    "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": 2,
        "topics": "orders,refunds",
        "file": "/var/lib/kafka-connect/orders.txt",
    },
}
SECRET = "${file:/etc/kafka-connect/secrets/pg.properties:password}"


def settings(**overrides: Any) -> dict[str, Any]:
    base = {
        "kafka_connect_group": "kafka_connect",
        "kafka_connect_version": "4.3.1",
        "kafka_connect_port": 8083,
        "kafka_connect_metrics_port": 7073,
        "kafka_connect_group_id": "connect-cluster",
        "kafka_connect_config_topic": "connect-configs",
        "kafka_connect_offsets_topic": "connect-offsets",
        "kafka_connect_status_topic": "connect-status",
        "kafka_connect_offsets_partitions": 25,
        "kafka_connect_status_partitions": 5,
        "kafka_connect_topic_replication_factor": 3,
        "kafka_connect_kafka_user": "connect",
        "kafka_connect_rest_users": [{"name": "admin", "password": "s3cret-pass"}],
        "kafka_connect_rest_user": "admin",
        "kafka_connect_client_networks": ["clients"],
        "kafka_connect_client_groups": ["etl"],
        "kafka_connect_connectors": [SINK],
        "kafka_connect_secrets": {"pg": {"password": "pg-pass"}},
        "kafka_connect_secrets_dir": "/etc/kafka-connect/secrets",
    }
    return {**base, **overrides}


def model(**overrides: Any) -> dict[str, Any]:
    return kafka_connect_model(HOSTVARS, GROUPS, KAFKA, SECURITY, settings(**overrides))


def test_workers_topics_acls_and_firewall() -> None:
    m = model()
    assert m["problems"] == []
    assert m["workers"]["kafka4"] == {
        "address": "10.0.0.14",
        "port": 8083,
        "url": "https://10.0.0.14:8083",
        "names": ["kafka4", "10.0.0.14"],
        "metrics_port": 7073,
    }
    assert m["client_ca"] == "/inv/.pki/trust.pem"
    topics = {t["name"]: t for t in m["topics"]}
    # The config topic must have one partition (Connect refuses more); all compacted, RF 3, min ISR 2.
    assert [topics[n]["partitions"] for n in ("connect-configs", "connect-offsets", "connect-status")] == [1, 25, 5]
    assert {t["configs"]["cleanup.policy"] for t in m["topics"]} == {"compact"}
    assert {(t["replication_factor"], t["configs"]["min.insync.replicas"]) for t in m["topics"]} == {(3, 2)}
    acls = {(a["resource_type"], a["name"], a["pattern_type"], a["operation"]) for a in m["acls"]}
    assert ("group", "connect-cluster", "literal", "read") in acls
    assert ("topic", "connect-offsets", "literal", "describe_configs") in acls
    # The sink reads its two topics in its own group, and writes nothing.
    assert {("topic", t, "literal", "read") for t in ("orders", "refunds")} <= acls
    assert ("group", "connect-orders-sink", "literal", "read") in acls
    assert not [a for a in acls if a[0] == "topic" and a[1] in ("orders", "refunds") and a[3] == "write"]
    assert {a["principal"] for a in m["acls"]} == {"User:connect"}
    service, metrics = m["firewall_services"]
    assert service["hosts"] == ["kafka4", "kmon"] and service["port"] == 8083
    # The JMX exporter: Prometheus's hosts and the monitoring networks only.
    assert (metrics["port"], metrics["from_hosts"], metrics["from_networks"]) == (7073, ["kmon"], ["monitoring"])
    # The workers reach each other (a follower forwards to the leader); the admin networks and the client groups too.
    assert service["from_hosts"] == ["etl1", "kafka4", "kmon"]
    assert service["from_networks"] == ["clients", "admin"]
    assert m["connectors"][0]["config"]["tasks.max"] == "2" and m["connectors"][0]["config"]["name"] == "orders-sink"


def test_source_writes_a_prefix_and_no_group() -> None:
    source = {"name": "pg", "writes": ["pg.*"], "config": {"connector.class": "X", "database.password": SECRET}}
    m = model(kafka_connect_connectors=[source])
    assert m["problems"] == []
    acls = {(a["resource_type"], a["name"], a["pattern_type"], a["operation"]) for a in m["acls"]}
    assert ("topic", "pg.", "prefixed", "write") in acls
    assert not [a for a in acls if a[1] == "connect-pg"]


MIRROR_CLUSTERS = {
    "primary": {
        "bootstrap_servers": "10.0.0.11:9093",
        "user": "mirror",
        "password": "${file:/etc/kafka-connect/secrets/mirror.properties:primary}",
        "ca_file": "/inv/primary-ca.pem",
    }
}


def test_a_mirror_runs_as_connectors_of_these_workers_with_their_own_login_from_a_secret_file() -> None:
    m = model(
        kafka_connect_cluster_alias="dr",
        kafka_connect_config_dir="/etc/kafka-connect",
        kafka_connect_mirrors=[{"source": "primary", "topics": ["orders"], "groups": ["billing"]}],
        kafka_connect_mirror_clusters=MIRROR_CLUSTERS,
        kafka_connect_secrets={"pg": {"password": "x"}, "mirror": {"primary": "mirror-pass"}},
    )
    assert m["problems"] == []
    assert [c["name"] for c in m["connectors"]] == ["orders-sink", "mirror-primary-source", "mirror-primary-checkpoint"]
    source = m["connectors"][1]["config"]
    assert source["target.cluster.sasl.jaas.config"] == (
        "${file:/etc/kafka-connect/secrets/connect-kafka-login.properties:sasl.jaas.config}"
    )
    assert m["login_file"] == "/etc/kafka-connect/secrets/connect-kafka-login.properties"
    assert m["mirror_files"] == [{"src": "/inv/primary-ca.pem", "dest": "/etc/kafka-connect/mirror/primary-ca.pem"}]
    acls = {(a["resource_type"], a["name"], a["operation"]) for a in m["acls"]}
    assert {("topic", "primary.orders", "create"), ("group", "billing", "read")} <= acls
    assert {a["principal"] for a in m["acls"]} == {"User:connect"}
    assert {a["principal"] for a in m["mirror_source_acls"]["primary"]} == {"User:mirror"}


def test_a_mirror_password_from_an_undeclared_secret_file_and_a_name_clash_are_refused() -> None:
    m = model(
        kafka_connect_cluster_alias="dr",
        kafka_connect_mirrors=[{"source": "primary", "topics": ["orders"]}],
        kafka_connect_mirror_clusters=MIRROR_CLUSTERS,
        kafka_connect_connectors=[{**SINK, "name": "mirror-primary-source"}],
    )
    assert any("jaas.config reads /etc/kafka-connect/secrets/mirror.properties, which" in p for p in m["problems"])
    assert any("the name of a connector kafka_connect_mirrors makes" in p for p in m["problems"]), m["problems"]


def test_no_monitoring_hosts_no_metrics_port() -> None:
    m = kafka_connect_model(HOSTVARS, {**GROUPS, "monitoring": []}, KAFKA, SECURITY, settings())
    assert {w["metrics_port"] for w in m["workers"].values()} == {None}
    assert [s["name"] for s in m["firewall_services"]] == ["kafka connect rest"]


def test_no_workers_no_model() -> None:
    m = kafka_connect_model(HOSTVARS, {}, KAFKA, SECURITY, settings())
    assert m["workers"] == {} and m["firewall_services"] == [] and m["problems"] == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"kafka_connect_rest_users": []}, "kafka_connect_rest_users is empty"),
        ({"kafka_connect_rest_user": "root"}, "kafka_connect_rest_user is 'root'"),
        ({"kafka_connect_kafka_user": "nobody"}, "kafka_connect_kafka_user is 'nobody', which kafka_users"),
        ({"kafka_connect_topic_replication_factor": 4}, "kafka_connect_topic_replication_factor is 4"),
        ({"kafka_connect_port": "http"}, "kafka4: kafka_connect_port is 'http'"),
        ({"kafka_connect_offsets_partitions": 0}, "kafka_connect_offsets_partitions is 0"),
        ({"kafka_connect_metrics_port": 8083}, "kafka4: kafka_connect_metrics_port is 8083"),
        ({"kafka_connect_status_topic": "connect-configs"}, "three different names"),
        ({"kafka_connect_connectors": [SINK, SINK]}, "connector orders-sink is declared twice"),
        ({"kafka_connect_connectors": [{"name": "x", "config": {"topics": "a"}}]}, "x): config must be a mapping with"),
        ({"kafka_connect_connectors": [{**SINK, "tasks": 1}]}, "unknown key(s) tasks"),
        ({"kafka_connect_connectors": [{**SINK, "state": "gone"}]}, "state is 'gone'"),
        (
            {
                "kafka_connect_connectors": [
                    {"name": "pg", "config": {"connector.class": "X", "database.password": "p"}}
                ]
            },
            "database.password holds a secret in clear",
        ),
        (
            {
                "kafka_connect_connectors": [{"name": "pg", "config": {"connector.class": "X", "pw": SECRET}}],
                "kafka_connect_secrets": {},
            },
            "pw reads /etc/kafka-connect/secrets/pg.properties, which kafka_connect_secrets does not declare",
        ),
        (
            {
                "kafka_connect_connectors": [{"name": "pg", "config": {"connector.class": "X", "pw": SECRET}}],
                "kafka_connect_secrets": {"pg": {"user": "u"}},
            },
            "has no such key",
        ),
        ({"kafka_connect_secrets": {"a/b": {"k": "v"}}}, "file name 'a/b'"),
        (
            {"kafka_connect_connectors": [{**SINK, "name": "cluster"}], "kafka_connect_group_id": "connect-cluster"},
            "clashes with the workers' group",
        ),
    ],
)
def test_refusals_name_the_variable_and_the_fix(overrides: dict[str, Any], expected: str) -> None:
    problems = model(**overrides)["problems"]
    assert any(expected in p for p in problems), problems


def test_port_taken_by_the_registry_on_the_same_host() -> None:
    groups = {**GROUPS, "schema_registry": ["kafka4"]}
    m = kafka_connect_model(HOSTVARS, groups, KAFKA, SECURITY, settings(kafka_connect_port=8081))
    assert any("kafka4: kafka_connect_port is 8081, which the Schema Registry" in p for p in m["problems"])


def test_secret_values_stay_out_of_the_model_and_land_in_a_closed_file() -> None:
    m = model()
    assert m["secret_files"] == {"/etc/kafka-connect/secrets/pg.properties": ["password"]}
    assert "pg-pass" not in repr(m) and "s3cret-pass" not in repr(m)
    record = kafka_connect_secret_file({"key": "pg", "value": {"password": "a\\b"}}, "/s", "kafka-connect")
    assert record == {
        "path": "/s/pg.properties",
        "content": "password=a\\\\b\n",
        "group": "kafka-connect",
        "mode": "0640",
    }


def test_plan_writes_only_what_differs() -> None:
    stored = {"a": {"name": "a", "connector.class": "X", "tasks.max": "1"}, "gone": {"name": "gone"}}
    declared = [
        {"name": "a", "state": "present", "config": {"name": "a", "connector.class": "X", "tasks.max": "1"}},
        {"name": "b", "state": "present", "config": {"name": "b", "connector.class": "X"}},
        {"name": "gone", "state": "absent", "config": {}},
        {"name": "never", "state": "absent", "config": {}},
    ]
    assert plan(declared, stored) == {"created": ["b"], "updated": {}, "deleted": ["gone"]}
    declared[0]["config"]["tasks.max"] = "2"
    assert plan(declared, stored)["updated"] == {"a": ["tasks.max"]}
    # A connector not declared at all is left alone (only state: absent deletes).
    assert plan(declared[:1], {**stored, "other": {}})["deleted"] == []


def test_validation_errors_and_masking() -> None:
    answer = {
        "error_count": 1,
        "configs": [
            {"value": {"name": "topics", "errors": []}},
            {"value": {"name": "file", "errors": ['Missing required configuration "file"']}},
        ],
    }
    assert validation_errors("s", answer) == ['connector s: file: Missing required configuration "file"']
    assert masked({"db.password": "p", "db.user": "u", "api.password": SECRET}) == {
        "db.password": "********",
        "db.user": "u",
        "api.password": SECRET,
    }


def write_jar(path: Path, services: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for service, text in services.items():
            jar.writestr(f"META-INF/services/{service}", text)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def test_a_plugin_lock_gives_its_files_and_the_connector_classes_its_jars_declare(tmp_path: Path) -> None:
    locks, cache = tmp_path / "locks", tmp_path / "cache"
    (cache / "pg-1.0").mkdir(parents=True)
    locks.mkdir()
    source = "org.apache.kafka.connect.source.SourceConnector"
    jar = write_jar(
        tmp_path / "connector.jar",
        {source: "# a comment\ncom.example.PgConnector\n", "org.apache.kafka.connect.storage.Converter": "x.Y\n"},
    )
    with tarfile.open(cache / "pg-1.0" / "pg-1.0-plugin.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo("pg/connector.jar")
        info.size = len(jar)
        archive.addfile(info, io.BytesIO(jar))
    write_jar(cache / "pg-1.0" / "sink-1.0.jar", {"org.apache.kafka.connect.sink.SinkConnector": "com.example.Sink"})
    files = [{"file": "pg-1.0-plugin.tar.gz", "sha512": "a" * 128}, {"file": "sink-1.0.jar", "sha512": "b" * 128}]
    (locks / "pg-1.0.json").write_text(json.dumps({"artifacts": files}))

    plugin = kafka_connect_plugin("pg-1.0", str(locks), str(cache))
    assert plugin["problem"] == ""
    assert plugin["classes"] == ["com.example.PgConnector", "com.example.Sink"]
    assert plugin["manifests"] is True
    assert [(f["path"], f["archive"]) for f in plugin["files"]] == [
        (f"{cache}/pg-1.0/pg-1.0-plugin.tar.gz", True),
        (f"{cache}/pg-1.0/sink-1.0.jar", False),
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../etc", "kafka_connect_plugins has '../etc': an entry is the name of a jar lock"),
        (["x"], "kafka_connect_plugins has ['x']"),
        ("missing-1.0", "kafka_connect_plugins names missing-1.0, but"),
    ],
)
def test_a_plugin_the_repository_does_not_pin_is_refused(tmp_path: Path, name: Any, expected: str) -> None:
    plugin = kafka_connect_plugin(name, str(tmp_path), str(tmp_path))
    assert plugin["problem"].startswith(expected), plugin["problem"]
    assert "Fix kafka_connect_plugins" in plugin["problem"]


@pytest.mark.parametrize(
    ("services", "manifests"),
    [({}, False), ({"org.apache.kafka.connect.storage.Converter": "com.example.Converter\n"}, True)],
)
def test_a_plugin_without_connect_manifests_is_told_apart(
    tmp_path: Path, services: dict[str, str], manifests: bool
) -> None:
    # plugin.discovery=service_load would not find a plugin without manifests: the preflight refuses it then.
    (tmp_path / "p-1").mkdir()
    write_jar(tmp_path / "p-1" / "p.jar", services)
    (tmp_path / "p-1.json").write_text(json.dumps({"artifacts": [{"file": "p.jar", "sha512": "d" * 128}]}))
    plugin = kafka_connect_plugin("p-1", str(tmp_path), str(tmp_path))
    assert (plugin["classes"], plugin["manifests"]) == ([], manifests)


def test_a_plugin_file_that_is_missing_declares_no_class(tmp_path: Path) -> None:
    (tmp_path / "gone-1.json").write_text(json.dumps({"artifacts": [{"file": "gone.tar.gz", "sha512": "c" * 128}]}))
    plugin = kafka_connect_plugin("gone-1", str(tmp_path), str(tmp_path))
    assert plugin["problem"] == "" and plugin["classes"] == []  # the preflight's sha512 check refuses it


@pytest.mark.parametrize(
    ("connector_class", "expected"),
    [
        ("io.debezium.connector.postgresql.PostgresConnector", True),
        ("PostgresConnector", True),
        ("Postgres", True),
        ("io.debezium.connector.postgresql.PostgresConector", False),
        ("FileStreamSink", False),
    ],
)
def test_a_connector_of_a_plugin_being_installed_is_known_by_any_alias(connector_class: str, expected: bool) -> None:
    assert pending(connector_class, ["io.debezium.connector.postgresql.PostgresConnector"]) is expected


def test_only_mirrormaker_connectors_may_run_without_a_task() -> None:
    assert may_run_taskless({"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector"})
    assert may_run_taskless({"connector.class": "MirrorCheckpoint"})
    assert not may_run_taskless(SINK["config"])


def test_an_unknown_key_is_named_with_every_key_its_kind_knows() -> None:
    problems = kafka_connect_model(
        HOSTVARS, GROUPS, KAFKA, SECURITY, settings(kafka_connect_connectors=[{**SINK, "tasks": 1}])
    )["problems"]
    assert (
        "kafka_connect_connectors[0] (orders-sink): unknown key(s) tasks; a connector knows config, name, reads, "
        "state, writes. Fix the spelling." in problems
    ), problems
