"""Cluster-wide checks from the controller, through the advertised listeners, with kafka-python."""

from __future__ import annotations

import uuid

import pytest
from conftest import Cluster, read_properties
from inventory_hosts import node
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from kafkalab import e2e, kafka_client


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> KafkaAdminClient:
    client = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-verify"
    )
    yield client
    client.close()


@pytest.mark.kraft
def test_metadata_quorum_has_every_controller_as_voter_and_a_leader(cluster: Cluster, admin: KafkaAdminClient) -> None:
    quorum = admin.describe_metadata_quorum()
    partition = quorum["topics"][0]["partitions"][0]
    voters = {v["replica_id"] for v in partition["current_voters"]}
    expected = {int(cluster.properties[c]["node.id"]) for c in cluster.controllers}
    assert voters == expected
    assert partition["leader_id"] in expected


def test_every_broker_enforces_the_min_insync_replicas_its_properties_declare(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    """The value a broker enforces for topics without their own, as the broker reports it. In KRaft with
    eligible leader replicas (the default since 4.1) a cluster-level value overrides each broker's: seeded
    once from the active controller's static config, so a dedicated controller must carry it too (it once
    did not, and the cluster enforced 1)."""
    enforced = {}
    for name in cluster.brokers:
        broker = str(cluster.node_id(name))
        described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, broker)], config_filter="all")
        entry = described["broker"][broker]["min.insync.replicas"]
        enforced[name] = (entry["value"], entry["config_source"])
    declared = {name: cluster.properties[name]["min.insync.replicas"] for name in cluster.brokers}
    assert {name: value for name, (value, _) in enforced.items()} == declared, enforced


def test_admin_api_sees_every_broker(cluster: Cluster, admin: KafkaAdminClient) -> None:
    described = admin.describe_cluster()
    ids = {b["broker_id"] for b in described["brokers"]}
    assert ids == {cluster.node_id(b) for b in cluster.brokers}
    assert described["controller_id"] in ids if cluster.mode == "zookeeper" else described["controller_id"] is not None


@pytest.mark.zookeeper
def test_every_broker_id_is_registered_in_zookeeper(cluster: Cluster) -> None:
    client = node(cluster.brokers[0])
    connect = cluster.properties[cluster.brokers[0]]["zookeeper.connect"]
    result = client.run(f"zookeeper-shell {connect} ls /brokers/ids")
    assert result.rc == 0, result.stderr
    # The children are listed on a line of their own, "[1, 2, 3]"; the shell may print a watcher's event
    # ("WatchedEvent state:SyncConnected ...") after it, so that line is looked for, not taken as the last.
    listed = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("[")]
    assert listed, result.stdout
    registered = {int(i) for i in listed[-1].strip("[]").split(",") if i.strip()}
    assert registered == {cluster.node_id(b) for b in cluster.brokers}


def test_every_node_holds_the_same_cluster_id(cluster: Cluster, admin: KafkaAdminClient) -> None:
    on_disk = set()
    for name, props in cluster.properties.items():
        for log_dir in props["log.dirs"].split(","):
            on_disk.add(read_properties(node(name), f"{log_dir}/meta.properties")["cluster.id"])
    assert on_disk == {admin.describe_cluster()["cluster_id"]}


def test_acked_messages_are_all_consumed_once_in_partition_order(cluster: Cluster) -> None:
    topic = f"verify-e2e-{uuid.uuid4().hex[:8]}"
    rf = min(3, len(cluster.brokers))
    e2e.create_topic(cluster.bootstrap, topic, partitions=6, replication=rf)
    # Produce through the first broker only, consume through the last: both must find the whole cluster.
    first, last = cluster.brokers[0], cluster.brokers[-1]
    try:
        report = e2e.round_trip(
            cluster.broker_address(first), topic, 10_000, consumer_bootstrap=cluster.broker_address(last)
        )
    finally:
        # The suite may run against a long-lived lab: leave no test topics behind.
        e2e.delete_topic(cluster.bootstrap, topic)
    print(f"\n{topic}: {report.summary()}")
    assert report.acked == 10_000
    assert report.lost == []
    assert report.duplicated == []
    assert report.moved == []
    assert report.out_of_order_partitions == []
    assert report.consumed == 10_000
