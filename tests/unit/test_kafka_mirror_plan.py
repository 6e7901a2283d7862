"""MirrorMaker 2 as connectors (plugins/module_utils/kafka_mirror_plan.py): the connector configs a declared mirror
becomes on the target site's Connect cluster, the ACLs on both sides, and every refusal, each naming the variable and
the fix."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_mirror_plan import (
    as_regex,
    checkpoint_reread,
    copy_name,
    decode_checkpoint,
    decode_offset_sync,
    mirror_plan,
    translate_down,
    translate_up,
)

LOCAL = {
    "alias": "dr",
    "bootstrap_servers": "10.0.1.21:9093",
    "security_protocol": "SASL_SSL",
    "sasl_mechanism": "SCRAM-SHA-512",
    "user": "connect",
    "jaas": "${file:/etc/kafka-connect/secrets/connect-kafka-login.properties:sasl.jaas.config}",
    "ca_path": "/etc/kafka-connect/tls/ca.pem",
    "config_dir": "/etc/kafka-connect",
    "replication_factor": 1,
}
CLUSTERS = {
    "primary": {
        "bootstrap_servers": "10.0.0.11:9093,10.0.0.12:9093",
        "security_protocol": "SASL_SSL",
        "user": "mirror",
        "password": "${file:/etc/kafka-connect/secrets/mirror.properties:primary}",
        "ca_file": "/controller/.pki/trust.pem",
    }
}


def plan_of(mirrors: Any, clusters: Any = None, **local: Any) -> tuple[dict[str, Any], list[str]]:
    problems: list[str] = []
    plan = mirror_plan(mirrors, CLUSTERS if clusters is None else clusters, {**LOCAL, **local}, problems)
    return plan, problems


def test_a_mirror_becomes_a_source_and_a_checkpoint_connector_of_this_site() -> None:
    plan, problems = plan_of([{"source": "primary", "topics": ["orders", "pay*"], "groups": ["billing"]}])
    assert problems == []
    source, checkpoint = plan["connectors"]
    assert (source["name"], checkpoint["name"]) == ("mirror-primary-source", "mirror-primary-checkpoint")
    config = source["config"]
    assert config["connector.class"] == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert config["topics"] == "orders,pay.*"
    assert config["source.cluster.alias"] == "primary" and config["target.cluster.alias"] == "dr"
    assert config["source.cluster.bootstrap.servers"] == "10.0.0.11:9093,10.0.0.12:9093"
    assert config["source.cluster.ssl.truststore.location"] == "/etc/kafka-connect/mirror/primary-ca.pem"
    assert (
        'username="mirror" password="${file:/etc/kafka-connect/secrets/mirror.properties:primary}"'
        in config["source.cluster.sasl.jaas.config"]
    )
    assert config["target.cluster.bootstrap.servers"] == "10.0.1.21:9093"
    assert config["target.cluster.ssl.truststore.location"] == "/etc/kafka-connect/tls/ca.pem"
    assert config["target.cluster.sasl.jaas.config"] == LOCAL["jaas"]
    # The settings Connect mode needs that the dedicated driver would set itself.
    for key in ("key.converter", "value.converter", "header.converter"):
        assert config[key] == "org.apache.kafka.connect.converters.ByteArrayConverter"
    assert config["offset-syncs.topic.location"] == checkpoint["config"]["offset-syncs.topic.location"] == "target"
    assert config["sync.topic.acls.enabled"] == "false"
    assert config["replication.factor"] == "1" and config["offset-syncs.topic.replication.factor"] == "1"
    assert checkpoint["config"]["groups"] == "billing"
    assert checkpoint["config"]["sync.group.offsets.enabled"] == "true"
    assert all(isinstance(v, str) for c in plan["connectors"] for v in c["config"].values())
    assert source["writes"] == ["primary.orders", "primary.pay*"]
    assert plan["files"] == [{"src": "/controller/.pki/trust.pem", "dest": "/etc/kafka-connect/mirror/primary-ca.pem"}]


def test_the_acls_on_this_site_and_the_read_only_ones_the_source_site_gives() -> None:
    plan, _ = plan_of([{"source": "primary", "topics": ["orders", "pay*"], "groups": ["billing"]}])
    here = {(a["resource_type"], a["name"], a["pattern_type"], a["operation"]) for a in plan["acls"]}
    assert ("topic", "primary.orders", "literal", "create") in here
    assert ("topic", "primary.pay", "prefixed", "write") in here
    assert ("topic", "mm2-offset-syncs.primary.internal", "literal", "write") in here
    assert ("topic", "primary.checkpoints.internal", "literal", "read") in here
    assert ("group", "billing", "literal", "read") in here
    assert {a["principal"] for a in plan["acls"]} == {"User:connect"}
    there = {(a["resource_type"], a["name"], a["operation"]) for a in plan["source_acls"]["primary"]}
    assert there == {
        ("topic", "orders", "read"),
        ("topic", "orders", "describe"),
        ("topic", "orders", "describe_configs"),
        ("topic", "pay", "read"),
        ("topic", "pay", "describe"),
        ("topic", "pay", "describe_configs"),
        ("group", "billing", "describe"),
        ("group", "billing", "read"),
    }
    assert {a["principal"] for a in plan["source_acls"]["primary"]} == {"User:mirror"}


def test_identity_keeps_the_names_and_no_groups_no_checkpoint_connector() -> None:
    plan, problems = plan_of([{"source": "primary", "topics": ["orders"], "replication_policy": "identity"}])
    assert problems == []
    source, checkpoint = plan["connectors"]
    assert source["config"]["replication.policy.class"].endswith("IdentityReplicationPolicy")
    assert source["writes"] == ["orders"]
    assert checkpoint == {
        "name": "mirror-primary-checkpoint",
        "config": {},
        "state": "absent",
        "reads": [],
        "writes": [],
    }


def test_a_mirror_declared_absent_removes_both_connectors() -> None:
    plan, problems = plan_of([{"source": "primary", "topics": ["orders"], "state": "absent"}])
    assert problems == [] and [c["state"] for c in plan["connectors"]] == ["absent", "absent"]
    assert plan["acls"] == [] and plan["files"] == []


def test_regex_characters_in_names_are_taken_literally() -> None:
    assert as_regex(["a.b", "c-d*"]) == r"a\.b,c\-d.*"


@pytest.mark.parametrize(
    ("mirrors", "clusters", "local", "expected"),
    [
        (
            [{"source": "primary", "topics": ["orders"], "replication_policy": "identity"}],
            {"primary": {**CLUSTERS["primary"], "mirrors_from_here": True}},
            {},
            "replication_policy identity while primary mirrors from dr too",
        ),
        ([{"source": "east", "topics": ["x"]}], None, {}, "source 'east' is not in kafka_connect_mirror_clusters"),
        ([{"source": "primary", "topics": []}], None, {}, "topics is []: give a list of names"),
        ([{"source": "primary", "topics": ["a b"]}], None, {}, "topics is ['a b']"),
        ([{"source": "primary", "topic": ["x"], "topics": ["x"]}], None, {}, "unknown key(s) topic"),
        (
            [{"source": "primary", "topics": ["x"]}],
            {"primary": {**CLUSTERS["primary"], "password": "hunter2"}},
            {},
            "password must be a placeholder",
        ),
        (
            [{"source": "primary", "topics": ["x"]}],
            {"primary": {**CLUSTERS["primary"], "ca_file": ""}},
            {},
            "needs ca_file",
        ),
        ([{"source": "primary", "topics": ["x"]}], None, {"alias": ""}, "kafka_connect_cluster_alias is ''"),
        ([{"source": "dr", "topics": ["x"]}], {"dr": CLUSTERS["primary"]}, {}, "differ from this cluster's own"),
        (
            [{"source": "primary", "topics": ["x"]}, {"source": "primary", "topics": ["y"]}],
            None,
            {},
            "primary is mirrored twice",
        ),
        ({"source": "primary"}, None, {}, "kafka_connect_mirrors is a dict"),
    ],
)
def test_refusals_name_the_variable_and_the_fix(
    mirrors: Any, clusters: Any, local: dict[str, Any], expected: str
) -> None:
    _, problems = plan_of(mirrors, clusters, **local)
    assert any(expected in p for p in problems), problems


def encode_string(text: str) -> bytes:
    return len(text).to_bytes(2, "big") + text.encode()


def test_mirror_records_decode_as_connect_mirror_writes_them() -> None:
    key = encode_string("orders") + (2).to_bytes(4, "big")
    value = (1500).to_bytes(8, "big") + (1490).to_bytes(8, "big")
    assert decode_offset_sync(key, value) == ("orders", 2, 1500, 1490)
    key = encode_string("billing") + encode_string("primary.orders") + (1).to_bytes(4, "big")
    value = (0).to_bytes(2, "big") + (77).to_bytes(8, "big") + (70).to_bytes(8, "big") + encode_string("")
    assert decode_checkpoint(key, value) == {
        "group": "billing",
        "topic": "primary.orders",
        "partition": 1,
        "upstream": 77,
        "downstream": 70,
    }


SYNCS = [(0, 0), (100, 98), (200, 195)]


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [(0, (0, 0)), (100, (98, 0)), (150, (99, 49)), (250, (196, 49)), (200, (195, 0))],
)
def test_a_source_offset_goes_to_the_copy_past_the_newest_sync_before_it(upstream: int, expected: Any) -> None:
    # As MirrorMaker's OffsetSyncStore: never past a record the group has not read; what it read since the sync again.
    assert translate_down(SYNCS, upstream) == expected


@pytest.mark.parametrize(
    ("downstream", "expected"),
    [(0, (0, 0)), (98, (100, 0)), (150, (101, 51)), (195, (200, 0)), (300, (201, 104))],
)
def test_a_copy_offset_goes_back_to_the_source_past_the_newest_sync_before_it(downstream: int, expected: Any) -> None:
    assert translate_up(SYNCS, downstream) == expected


def test_an_offset_before_every_sync_is_not_translated() -> None:
    assert translate_down([(10, 5)], 3) is None and translate_up([(10, 5)], 3) is None
    assert copy_name("primary", "orders", "default") == "primary.orders"
    assert copy_name("primary", "orders", "identity") == "orders"


@pytest.mark.parametrize(
    ("upstream", "downstream", "expected"),
    [(100, 98, 0), (150, 99, 49), (150, 196, 0 + 150 - 100), (10, 0, 10), (300, 196, 99)],
)
def test_what_a_group_resuming_at_a_checkpoint_reads_again(upstream: int, downstream: int, expected: int) -> None:
    # (150, 99): translated through the sync (100, 98); (150, 196): no sync at 195/196 for it, the newest older
    # one (100, 98) bounds it; (10, 0): no sync older than it, everything before it.
    assert checkpoint_reread(SYNCS, upstream, downstream) == expected
