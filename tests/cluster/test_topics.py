"""Topics as code against a live cluster: playbooks/topics.yml creates, grows, reconfigures and deletes
(only when declared absent) through the Admin API, refuses what it promises to refuse, and changes
nothing on a re-run or in check mode."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster
from inventory_hosts import group, run_playbook, runner
from kafka.admin import ConfigResource, KafkaAdminClient

from kafkalab import kafka_client

ROOT = Path(__file__).resolve().parents[2]


def run_topics(topics: list[dict[str, Any]] | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    args = ["-e", json.dumps({"kafka_topics": topics})] if topics is not None else []
    return run_playbook("topics.yml", [*args, *(["--check", "--diff"] if check else [])], timeout=600)


def recap_changed(output: str) -> int:
    match = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", output)
    assert match, output[-2000:]
    return int(match.group(1))


def shape(admin: KafkaAdminClient, name: str) -> dict[str, Any] | None:
    if name not in admin.list_topics():
        return None
    partitions = admin.describe_topics([name])[0]["partitions"]
    configs = admin.describe_configs([ConfigResource("topic", name)])["topic"][name]
    return {
        "partitions": len(partitions),
        "replication_factor": len(partitions[0]["replica_nodes"]),
        "configs": {k: v["value"] for k, v in configs.items() if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"},
    }


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> Any:
    client = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-verify-topics"
    )
    yield client
    client.close()


def test_declared_topics_exist_as_declared(admin: KafkaAdminClient) -> None:
    declared = runner().get_variables(group("kafka_broker")[0]).get("kafka_topics") or []
    assert declared, "the inventory declares no topics to check"
    for topic in declared:
        found = shape(admin, topic["name"])
        assert found is not None, topic["name"]
        assert found["partitions"] == topic["partitions"], topic["name"]
        assert found["replication_factor"] == topic["replication_factor"], topic["name"]
        for key, value in (topic.get("configs") or {}).items():
            assert found["configs"].get(key) == str(value), (topic["name"], key)


def test_declared_topics_spread_their_replicas_over_the_brokers(cluster: Cluster, admin: KafkaAdminClient) -> None:
    """Each declared topic's replicas are on distinct brokers per partition and, where it has enough of them,
    cover every broker: on one machine, every instance holds a share of each topic."""
    declared = runner().get_variables(group("kafka_broker")[0]).get("kafka_topics") or []
    brokers = {cluster.node_id(name) for name in cluster.brokers}
    for topic in declared:
        partitions = admin.describe_topics([topic["name"]])[0]["partitions"]
        used: set[int] = set()
        for partition in partitions:
            replicas = list(partition["replica_nodes"])
            assert len(set(replicas)) == len(replicas) == topic["replication_factor"], (topic["name"], replicas)
            assert set(replicas) <= brokers, (topic["name"], replicas)
            used |= set(replicas)
        if topic["partitions"] * topic["replication_factor"] >= len(brokers):
            assert used == brokers, (topic["name"], sorted(used), sorted(brokers))


@pytest.mark.changes_cluster
def test_rerun_changes_nothing() -> None:
    result = run_topics()
    assert result.returncode == 0, result.stdout[-3000:]
    assert recap_changed(result.stdout) == 0


def test_check_mode_shows_the_plan_and_changes_nothing(admin: KafkaAdminClient) -> None:
    name = f"verify-plan-{uuid.uuid4().hex[:8]}"
    result = run_topics([{"name": name, "partitions": 2, "replication_factor": 1}], check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"create {name} (partitions=2, replication_factor=1)" in result.stdout
    assert f"+{name}: partitions=2 replication_factor=1" in result.stdout  # the diff
    assert shape(admin, name) is None


@pytest.mark.changes_cluster
def test_topic_lifecycle_grow_reconfigure_refuse_shrink_delete(admin: KafkaAdminClient) -> None:
    name = f"verify-topics-{uuid.uuid4().hex[:8]}"
    rf = min(2, len(group("kafka_broker")))
    try:
        created = run_topics([{"name": name, "partitions": 2, "replication_factor": rf}])
        assert created.returncode == 0, created.stdout[-3000:]
        assert shape(admin, name) == {"partitions": 2, "replication_factor": rf, "configs": {}}

        grown = run_topics(
            [{"name": name, "partitions": 3, "replication_factor": rf, "configs": {"retention.ms": 3600000}}]
        )
        assert grown.returncode == 0, grown.stdout[-3000:]
        assert f"add partitions to {name}: 2 -> 3" in grown.stdout
        assert shape(admin, name) == {"partitions": 3, "replication_factor": rf, "configs": {"retention.ms": "3600000"}}

        shrunk = run_topics([{"name": name, "partitions": 1, "replication_factor": rf}])
        assert shrunk.returncode != 0
        assert f"topic '{name}': partitions 1 is lower than the 3 it has" in shrunk.stdout
        assert shape(admin, name)["partitions"] == 3  # type: ignore[index]

        deleted = run_topics([{"name": name, "state": "absent"}])
        assert deleted.returncode == 0, deleted.stdout[-3000:]
        assert f"delete {name}" in deleted.stdout
    finally:
        if name in admin.list_topics():
            admin.delete_topics([name])
    assert name not in admin.list_topics()


@pytest.mark.parametrize(
    "topic,message",
    [
        ({"partitions": 1, "replication_factor": 9}, "replication_factor 9 is larger than the number of brokers"),
        (
            {"partitions": 1, "replication_factor": 1, "configs": {"min.insync.replicas": 2}},
            "configs.min.insync.replicas 2 is larger than replication_factor 1",
        ),
        ({"partitions": 1, "replication_factor": 1, "configs": {"retention.mss": 1}}, "configs.retention.mss is not"),
    ],
    ids=["rf-above-brokers", "min-isr-above-rf", "unknown-config"],
)
@pytest.mark.changes_cluster
def test_bad_topic_declaration_is_refused_before_any_change(
    admin: KafkaAdminClient, topic: dict[str, Any], message: str
) -> None:
    name = f"verify-bad-{uuid.uuid4().hex[:8]}"
    result = run_topics([{"name": name, **topic}])
    assert result.returncode != 0
    assert f"topic '{name}': {message}" in result.stdout
    assert shape(admin, name) is None
