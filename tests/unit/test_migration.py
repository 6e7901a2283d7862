"""The ZooKeeper -> KRaft migration: what each node runs in each phase, who may reach whom, and how the
phase a cluster is in is read back from ZooKeeper and the nodes (library/kafka_migration_state.py)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import MIGRATION_PHASES, kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_outputs import (
    kafka_firewall_services,
    kafka_server_properties,
    to_properties,
)
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_stage import account_ready, kafka_meta_identities
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_tls import kafka_zookeeper_client_properties
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    MIGRATION_ORDER,
    migration_state,
    parse_zookeeper_json,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage
from test_kafka_cluster_model import SETTINGS as KRAFT_SETTINGS

BROKERS = ["k1", "k2", "k3"]
CONTROLLERS = ["c1", "c2", "c3"]
# The KRaft settings of the cluster-model tests, on the release line that migrates, with the ensemble's ports.
SETTINGS: dict[str, Any] = {
    **KRAFT_SETTINGS,
    "mode": "kraft",
    "version": "3.9.2",
    "zookeeper_client_port": 2181,
    "zookeeper_peer_port": 2888,
    "zookeeper_election_port": 3888,
    "zookeeper_chroot": "",
}


def hostvars() -> dict[str, dict[str, Any]]:
    hv = {b: {"kafka_node_id": i, "ansible_host": f"10.0.0.{10 + i}"} for i, b in enumerate(BROKERS, 1)}
    hv.update(
        {c: {"kafka_node_id": 3000 + i, "ansible_host": f"10.0.0.{20 + i}"} for i, c in enumerate(CONTROLLERS, 1)}
    )
    return hv


def model(phase: str, **changes: Any) -> dict[str, Any]:
    return kafka_cluster_model(
        hostvars(), CONTROLLERS, BROKERS, {**SETTINGS, "migration_phase": phase, **changes}, BROKERS
    )


def props(phase: str) -> dict[str, dict[str, str]]:
    m = model(phase)
    assert m["problems"] == []
    return {h: kafka_server_properties(m, h, SETTINGS) for h in m["nodes"]}


ZK_CONNECT = "10.0.0.11:2181,10.0.0.12:2181,10.0.0.13:2181"


def test_controllers_phase_starts_controllers_in_migration_mode_and_leaves_the_brokers_as_they_were() -> None:
    p = props("controllers")
    assert p["c1"]["process.roles"] == "controller" and p["c1"]["node.id"] == "3001"
    assert p["c1"]["zookeeper.metadata.migration.enable"] == "true"
    assert p["c1"]["zookeeper.connect"] == ZK_CONNECT
    # The controllers reach the ZooKeeper-mode brokers on the inter-broker listener.
    assert p["c1"]["inter.broker.listener.name"] == "INTERNAL"
    assert p["c1"]["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert p["c1"]["controller.quorum.voters"] == "3001@10.0.0.21:9093,3002@10.0.0.22:9093,3003@10.0.0.23:9093"
    zk_broker = kafka_server_properties(
        kafka_cluster_model(hostvars(), [], BROKERS, {**SETTINGS, "mode": "zookeeper"}, BROKERS), "k1", SETTINGS
    )
    assert p["k1"] == zk_broker, "a broker must not change (nor restart) while the controllers are provisioned"


def test_brokers_migration_phase_turns_the_migration_on_in_zookeeper_mode() -> None:
    p = props("brokers_migration")["k2"]
    assert p["broker.id"] == "2" and p["zookeeper.connect"] == ZK_CONNECT
    assert p["zookeeper.metadata.migration.enable"] == "true"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["controller.quorum.voters"].startswith("3001@10.0.0.21:9093")
    assert p["inter.broker.protocol.version"] == "3.9"
    assert p["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert "process.roles" not in p and "node.id" not in p


def test_brokers_kraft_phase_makes_plain_kraft_brokers_and_keeps_the_controllers_writing_to_zookeeper() -> None:
    p = props("brokers_kraft")
    assert p["k3"]["process.roles"] == "broker" and p["k3"]["node.id"] == "3"
    assert not [k for k in p["k3"] if k.startswith("zookeeper.") or k in ("broker.id", "inter.broker.protocol.version")]
    assert p["c2"]["zookeeper.metadata.migration.enable"] == "true"


def test_finalized_controllers_no_longer_know_zookeeper() -> None:
    p = props("finalized")
    assert not [k for k in p["c3"] if k.startswith("zookeeper.")]
    plain = kafka_cluster_model(hostvars(), CONTROLLERS, BROKERS, {**SETTINGS, "version": "4.3.1"})
    for host in ("k1", "c1"):
        assert to_properties(p[host]) == to_properties(kafka_server_properties(plain, host, SETTINGS))


def test_during_the_migration_the_controllers_reach_the_inter_broker_listener_and_zookeeper() -> None:
    services = kafka_firewall_services(model("brokers_migration"))
    inter = next(s for s in services if s["name"] == "kafka INTERNAL" and s["hosts"] == ["k1"])
    assert set(CONTROLLERS) <= set(inter["from_hosts"])
    assert model("brokers_migration")["zookeeper_clients"] == BROKERS + CONTROLLERS
    plain = kafka_cluster_model(hostvars(), CONTROLLERS, BROKERS, {**SETTINGS, "version": "4.3.1"})
    inter = next(s for s in kafka_firewall_services(plain) if s["name"] == "kafka INTERNAL" and s["hosts"] == ["k1"])
    assert not set(CONTROLLERS) & set(inter["from_hosts"])


@pytest.mark.parametrize(
    ("phase", "zookeeper_tls_nodes"),
    [
        ("controllers", BROKERS + CONTROLLERS),
        ("brokers_migration", BROKERS + CONTROLLERS),
        # The brokers run KRaft: only the controllers still write to ZooKeeper, until finalized.
        ("brokers_kraft", CONTROLLERS),
    ],
)
def test_with_a_tls_ensemble_every_node_that_has_zookeeper_connect_gets_the_tls_settings(
    phase: str, zookeeper_tls_nodes: list[str]
) -> None:
    m = model(phase, zookeeper_tls=True)
    assert m["problems"] == [] and m["zookeeper_tls"] is True
    for host in m["nodes"]:
        tls = kafka_zookeeper_client_properties(m, kafka_server_properties(m, host, SETTINGS), "/etc/kafka/tls")
        assert bool(tls) == (host in zookeeper_tls_nodes), host
        if tls:
            assert tls["zookeeper.ssl.keystore.location"] == "/etc/kafka/tls/zookeeper-client.pem"
    plain = model(phase)
    assert not any(
        kafka_zookeeper_client_properties(plain, kafka_server_properties(plain, h, SETTINGS), "/etc/kafka/tls")
        for h in plain["nodes"]
    )


def test_a_kraft_cluster_has_no_zookeeper_tls_to_give() -> None:
    m = kafka_cluster_model(hostvars(), CONTROLLERS, BROKERS, {**SETTINGS, "zookeeper_tls": True})
    assert m["zookeeper_tls"] is False
    m = kafka_cluster_model(hostvars(), CONTROLLERS, BROKERS, {**SETTINGS, "zookeeper_tls": "maybe"})
    assert any("kafka_zookeeper_tls (zookeeper_tls) must be true or false, not 'maybe'" in p for p in m["problems"])


@pytest.mark.parametrize(
    ("changes", "controllers", "expected"),
    [
        (
            {},
            BROKERS,
            "k1: is in both kafka_controller and kafka_broker, but Kafka 3.9 migrates to dedicated KRaft controllers",
        ),
        (
            {"version": "4.3.1"},
            CONTROLLERS,
            "the ZooKeeper -> KRaft migration runs on Kafka 3.9 but kafka_version is 4.3.1",
        ),
        ({"mode": "zookeeper"}, CONTROLLERS, ""),
        ({"migration_phase": "halfway"}, CONTROLLERS, "kafka_migration_phase 'halfway' is not one of: controllers"),
    ],
)
def test_migration_refusals(changes: dict[str, Any], controllers: list[str], expected: str) -> None:
    found = kafka_cluster_model(
        hostvars(), controllers, BROKERS, {**SETTINGS, "migration_phase": "controllers", **changes}, BROKERS
    )["problems"]
    if changes.get("mode") == "zookeeper":
        # ZooKeeper mode ignores the phase: the controllers are standby.
        assert found == []
    else:
        assert any(p.startswith(expected) for p in found), found


def test_a_controller_on_a_zookeeper_servers_port_is_refused() -> None:
    found = kafka_cluster_model(
        hostvars(),
        CONTROLLERS,
        BROKERS,
        {**SETTINGS, "migration_phase": "controllers", "controller_listener": {"name": "CONTROLLER", "port": 2888}},
        ["c1", "c2", "c3"],
    )["problems"]
    assert (
        "c1: runs a ZooKeeper server on peer port 2888 (zookeeper_peer_port), which listener CONTROLLER also uses. "
        "Give one of them another port." in found
    ), found


def test_every_phase_is_ordered() -> None:
    assert list(MIGRATION_ORDER[1:]) == list(MIGRATION_PHASES)


@pytest.mark.parametrize(
    ("text", "stage"),
    [
        (None, "none"),
        ("broker.id=1\nzookeeper.connect=z:2181\n", "zookeeper"),
        ("broker.id=1\nzookeeper.connect=z:2181\nzookeeper.metadata.migration.enable=true\n", "migration"),
        ("process.roles=controller\nnode.id=3001\nzookeeper.metadata.migration.enable=true\n", "migration"),
        ("# zookeeper.metadata.migration.enable=true\nprocess.roles=broker\nnode.id=1\n", "kraft"),
    ],
)
def test_kafka_stage(text: str | None, stage: str) -> None:
    assert kafka_stage(text) == stage


def test_znode_json_is_read_from_the_shells_output() -> None:
    out = (
        "Connecting to 10.0.0.11:2181\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"
        '{"version":2,"brokerid":3001,"timestamp":"1700000000000","kraftControllerEpoch":4}\n'
    )
    assert parse_zookeeper_json(out) == {
        "version": 2,
        "brokerid": 3001,
        "timestamp": "1700000000000",
        "kraftControllerEpoch": 4,
    }
    assert parse_zookeeper_json("Node does not exist: /migration") is None


def zk(brokers: list[int], offset: int | None, cluster_id: str | None = "abc") -> dict[str, Any]:
    migration = None if offset is None else {"kraft_metadata_offset": offset}
    return {"cluster_id": cluster_id, "brokers": brokers, "controller": None, "migration": migration}


def stages(brokers: str, controllers: str) -> dict[str, str]:
    return {**dict.fromkeys(BROKERS, brokers), **dict.fromkeys(CONTROLLERS, controllers)}


@pytest.mark.parametrize(
    ("state", "node_stages", "phase"),
    [
        (zk([1, 2, 3], None), stages("zookeeper", "none"), "zookeeper"),
        (zk([1, 2, 3], -1), stages("zookeeper", "migration"), "controllers"),
        # A run killed after rendering the brokers' files: what they are configured for counts.
        (zk([1, 2, 3], -1), {**stages("zookeeper", "migration"), "k2": "migration"}, "brokers_migration"),
        (zk([1, 2, 3], 120), stages("migration", "migration"), "brokers_migration"),
        (zk([2, 3], 120), {**stages("migration", "migration"), "k1": "kraft"}, "brokers_kraft"),
        (zk([], 120), stages("kraft", "migration"), "brokers_kraft"),
        (zk([], 120), {**stages("kraft", "migration"), "c1": "kraft"}, "finalized"),
        (zk([], 120), stages("kraft", "kraft"), "finalized"),
    ],
)
def test_the_phase_is_the_furthest_reached(state: dict[str, Any], node_stages: dict[str, str], phase: str) -> None:
    found = migration_state(state, node_stages, BROKERS, CONTROLLERS, ["abc"], "migrate", False)
    assert (found.phase, found.problems) == (phase, [])


def test_a_cluster_zookeeper_does_not_hold_is_already_kraft() -> None:
    for state in (zk([], None, cluster_id=None), zk([], None, cluster_id="other")):
        found = migration_state(state, stages("kraft", "kraft"), BROKERS, CONTROLLERS, ["abc"], "migrate", False)
        assert found.problems and found.problems[0].startswith(
            "this cluster is already KRaft: its brokers hold cluster id abc"
        )


def test_finalizing_before_every_broker_runs_kraft_is_refused_naming_them() -> None:
    found = migration_state(
        zk([3], 120),
        {**stages("kraft", "migration"), "k3": "migration"},
        BROKERS,
        CONTROLLERS,
        ["abc"],
        "migrate",
        True,
    )
    assert found.problems == [
        "kafka_migration_finalize is true but k3 still run in ZooKeeper mode: finalizing would cut them off, and "
        "cannot be undone. Run playbooks/migrate_to_kraft.yml without kafka_migration_finalize first (it moves "
        "every broker to KRaft), check the cluster, then finalize."
    ]
    ok = migration_state(zk([], 120), stages("kraft", "migration"), BROKERS, CONTROLLERS, ["abc"], "migrate", True)
    assert ok.problems == []


def test_a_finalized_migration_cannot_be_rolled_back() -> None:
    found = migration_state(zk([], 120), stages("kraft", "kraft"), BROKERS, CONTROLLERS, ["abc"], "rollback", False)
    assert found.problems == [
        "the migration was finalized (c1, c2, c3 run without zookeeper.metadata.migration.enable): Kafka cannot go "
        "back to ZooKeeper mode after that. Nothing was changed."
    ]


def test_the_log_dirs_identities_are_read_from_their_meta_properties() -> None:
    # As kafkalab.kafka.node_files reads them (None: no meta.properties, a log dir never formatted); a KRaft node's
    # (version 1: node.id and cluster.id) and a ZooKeeper-mode broker's (version 0: broker.id; ZooKeeper holds the
    # cluster id there).
    content = {
        "/data/b/meta.properties": "#\n#Sat Dec 05 10:00:00 UTC 2026\nnode.id=2\ndirectory.id=x\nversion=1\n"
        "cluster.id=AbCdEfGhIjKlMnOpQrStUw\n",
        "/data/a/meta.properties": "version=0\nbroker.id=7\n",
        "/data/c/meta.properties": None,
        "/etc/passwd": "root:x:0:0:root:/root:/bin/bash\n",  # read in the same call; not a log dir's
    }
    assert kafka_meta_identities(content, [*sorted(content)[:3], "/data/d/meta.properties"]) == [
        {"path": "/data/a/meta.properties", "cluster_id": "", "node_id": "7"},
        {"path": "/data/b/meta.properties", "cluster_id": "AbCdEfGhIjKlMnOpQrStUw", "node_id": "2"},
    ]


@pytest.mark.parametrize(
    ("passwd", "group", "ready"),
    [
        (
            "root:x:0:0:root:/root:/bin/bash\nkafka:x:999:998::/var/lib/kafka:/usr/sbin/nologin\n",
            "kafka:x:998:\n",
            True,
        ),
        # Another primary group, home or shell: the user module puts it right.
        ("kafka:x:999:100::/var/lib/kafka:/usr/sbin/nologin\n", "kafka:x:998:\nusers:x:100:\n", False),
        ("kafka:x:999:998::/home/kafka:/usr/sbin/nologin\n", "kafka:x:998:\n", False),
        ("kafka:x:999:998::/var/lib/kafka:/bin/sh\n", "kafka:x:998:\n", False),
        # No group, no user, or a file not read.
        ("kafka:x:999:998::/var/lib/kafka:/usr/sbin/nologin\n", "users:x:100:\n", False),
        ("root:x:0:0:root:/root:/bin/bash\n", "kafka:x:998:\n", False),
        (None, "kafka:x:998:\n", False),
        ("kafkas:x:999:998::/var/lib/kafka:/usr/sbin/nologin\n", "kafka:x:998:\n", False),
    ],
)
def test_the_service_account_is_ready_only_as_the_role_makes_it(passwd: str | None, group: str, ready: bool) -> None:
    assert account_ready(passwd, group, "kafka", "kafka", "/var/lib/kafka", "/usr/sbin/nologin") is ready
