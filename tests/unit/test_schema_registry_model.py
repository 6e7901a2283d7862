"""The Schema Registry model (plugins/filter/schema_registry_model.py): instances, Kafka access, firewall and every
refusal of bad settings, each message naming host or variable, the bad value and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.schema_registry_model import (
    min_java,
    registry_acls,
    schema_registry_model,
)

HOSTVARS = {"kafka4": {"firewall_address": "10.0.0.14"}, "kmon": {"firewall_address": "10.0.0.30"}}
GROUPS = {"schema_registry": ["kafka4", "kmon"], "monitoring": ["kmon"], "spark": ["spark1"]}
NODES = {
    f"kafka{i}": {
        "roles": ["broker", "controller"],
        "listeners": [{"name": "INTERNAL", "port": 9092}, {"name": "CONTROLLER", "port": 9093}],
        "metrics_port": 7071,
    }
    for i in (1, 2, 3)
}
KAFKA = {
    "bootstrap_servers": "10.0.0.11:9092",
    "inter_broker_protocol": "SASL_SSL",
    "tls_ca_dir": "/inv/.pki",
    "nodes": NODES,
}
SECURITY = {"users": {"schema-registry": {"state": "present"}}}
AVRO = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}


def settings(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    (tmp_path / "order.avsc").write_text(json.dumps(AVRO))
    base = {
        "schema_registry_group": "schema_registry",
        "schema_registry_version": "3.0.9",
        "schema_registry_port": 8081,
        "schema_registry_tls": True,
        "schema_registry_compatibility": "BACKWARD",
        "schema_registry_subjects": [{"name": "orders-value", "schema_file": "order.avsc"}],
        "schema_registry_schemas_dir": str(tmp_path),
        "schema_registry_client_networks": ["clients", "admin"],
        "schema_registry_client_groups": ["spark"],
        "schema_registry_kafka_user": "schema-registry",
        "schema_registry_journal_topic": "_schemas-journal",
        "schema_registry_snapshots_topic": "_schemas-snapshots",
        "schema_registry_events_topic": "_schemas-events",
        "schema_registry_topic_replication_factor": 3,
        "schema_registry_group_prefix": "schema-registry-",
    }
    return {**base, **overrides}


def model(tmp_path: Path, hostvars: Any = None, groups: Any = None, kafka: Any = None, security: Any = None, **kw: Any):
    return schema_registry_model(
        hostvars or HOSTVARS, groups or GROUPS, kafka or KAFKA, SECURITY if security is None else security,
        settings(tmp_path, **kw),
    )  # fmt: skip


def test_a_good_inventory_gives_instances_topics_acls_and_firewall(tmp_path: Path) -> None:
    m = model(tmp_path)
    assert m["problems"] == []
    assert m["instances"]["kmon"]["url"] == "https://10.0.0.30:8081"
    assert m["instances"]["kafka4"]["names"] == ["kafka4", "10.0.0.14"]
    assert m["client_ca"] == "/inv/.pki/trust.pem"
    assert [t["name"] for t in m["topics"]] == ["_schemas-journal", "_schemas-snapshots", "_schemas-events"]
    assert all(t["partitions"] == 1 and t["configs"]["min.insync.replicas"] == 2 for t in m["topics"])
    assert m["kafka"] == {"bootstrap": "10.0.0.11:9092", "protocol": "SASL_SSL", "user": "schema-registry"}
    assert {(a["resource_type"], a["name"], a["operation"]) for a in m["acls"]} >= {
        ("topic", "_schemas-journal", "write"),
        ("group", "schema-registry-", "read"),
    }
    assert not any(a["resource_type"] == "cluster" or a["name"] == "*" for a in m["acls"])
    (service,) = m["firewall_services"]
    assert service["from_hosts"] == ["kafka4", "kmon", "spark1"]
    assert service["from_networks"] == ["clients", "admin", "monitoring"]
    assert m["subjects"][0]["schema"].startswith("{")


def test_no_registry_hosts_gives_an_empty_model(tmp_path: Path) -> None:
    m = model(tmp_path, groups={"schema_registry": []})
    assert m["instances"] == {} and m["firewall_services"] == [] and m["problems"] == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"security": {"users": {}}}, "schema_registry_kafka_user is 'schema-registry', which kafka_users does not"),
        ({"schema_registry_compatibility": "BACKWARDS"}, "schema_registry_compatibility is 'BACKWARDS': it must be"),
        (
            {"schema_registry_port": 9092, "groups": {"schema_registry": ["kafka1", "kmon"]}},
            "kafka1: schema_registry_port is 9092, which kafka1's Kafka listener INTERNAL uses on the same machine",
        ),
        ({"schema_registry_port": 70000}, "kafka4: schema_registry_port is 70000: it must be a TCP port"),
        ({"schema_registry_topic_replication_factor": 4}, "schema_registry_topic_replication_factor is 4"),
        (
            {"groups": {"schema_registry": ["kmon"], "monitoring": ["kmon"]}},
            "group schema_registry has one host (kmon)",
        ),
        (
            {"schema_registry_subjects": [{"name": "x", "schema_file": "missing.avsc"}]},
            "schema_registry_subjects[0] (x): schema_file 'missing.avsc' is not a file",
        ),
        (
            {"schema_registry_subjects": [{"name": "x", "schema_file": "order.avsc", "compatibilty": "FULL"}]},
            "schema_registry_subjects[0] (x): unknown key(s) compatibilty",
        ),
        (
            {"schema_registry_subjects": [{"name": "x", "schema_file": "order.avsc", "compatibility": "SIDEWAYS"}]},
            "schema_registry_subjects[0] (x): compatibility is 'SIDEWAYS'",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_variable_value_and_fix(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    kw = dict(change)
    groups = kw.pop("groups", None)
    security = kw.pop("security", None)
    problems = model(tmp_path, groups=groups, security=security, **kw)["problems"]
    assert any(expected in p for p in problems), problems


def test_a_port_clash_with_a_spark_worker_ui_is_refused(tmp_path: Path) -> None:
    groups = {**GROUPS, "spark_worker": ["kmon"]}
    problems = model(tmp_path, groups=groups)["problems"]
    assert any("kmon: schema_registry_port is 8081, which kmon's the Spark worker's web UI" in p for p in problems)


def test_a_schema_that_is_not_avro_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.avsc").write_text(json.dumps({"type": "record", "name": "X", "fields": [{"name": "a"}]}))
    (tmp_path / "text.avsc").write_text("not json")
    subjects = [{"name": "a", "schema_file": "bad.avsc"}, {"name": "b", "schema_file": "text.avsc"}]
    problems = model(tmp_path, schema_registry_subjects=subjects)["problems"]
    assert any("(a): schema_file" in p and "is not a valid Avro schema" in p for p in problems), problems
    assert any("(b): schema_file" in p and "is not JSON" in p for p in problems), problems


def test_min_java_per_release() -> None:
    assert min_java("3.0.9") == 17
    assert min_java("3.3.3") == 21


def test_acls_cover_only_the_registrys_topics_and_groups() -> None:
    acls = registry_acls("sr", ["j"], "p-")
    assert {(a["resource_type"], a["name"], a["pattern_type"]) for a in acls} == {
        ("topic", "j", "literal"),
        ("group", "p-", "prefixed"),
    }
