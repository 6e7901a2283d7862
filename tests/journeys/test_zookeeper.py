"""A ZooKeeper-mode cluster's journey under an acks=all load, one step per test, in file order, after the cluster suite.

Molecule's zookeeper scenario: Kafka 3.9.2, three ZooKeeper servers (TLS) that are brokers too, three standby KRaft
controllers. A producer writes with acks=all and idempotence to an RF 3, min.insync.replicas 2 topic and a consumer
group commits throughout (python -m kafkalab.load); after each phase every acknowledged record is accounted for (lost,
duplicated, order per partition, the group's offsets, the longest gap between two acks, each restart's time back in
the ISR), and the step fails on any record acked and not there exactly once.

make test runs:
1. A ZooKeeper setting changes: every server restarts once, one at a time, the leader last. systemd's monotonic
   timestamps come from the one kernel every container shares, so the down windows compare directly.
2. A server whose data dir holds another myid than the inventory gives it, an inventory that would take the running
   TLS ensemble back to plaintext, and one whose CA dir lost the project CA are refused before any host changes.
make journey (KAFKALAB_JOURNEY=full; about 35 min in all) goes on to KRaft and Kafka 4.3.1:
3. playbooks/migrate_to_kraft.yml, its first run SIGKILLed once every broker has its migration-mode file; the next run
   reads where the cluster is and finishes (the brokers run KRaft, the controllers still write to ZooKeeper).
4. playbooks/rollback_to_zookeeper.yml takes it back, as Kafka's rollback steps say; a second rollback changes
   nothing; the cluster is migrated again from a clean slate.
5. Finalized (kafka_migration_finalize): a rollback is then refused, and finalizing again changes nothing.
6. playbooks/upgrade.yml moves the KRaft cluster 3.9.2 -> 4.3.1 with the inventory as it is once the migration is
   finalized (kafka_mode kraft, zookeeper_ensemble_group naming an empty group).
The suite compares the nodes with the inventory's kafka_mode (zookeeper), so this module runs after it (conftest.py:
the after_the_suite mark). On a KRaft cluster (the lab) the module is skipped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage
from inventory_hosts import ROOT, group, host_variables, kafka_address, node

from journeys.steps import (
    Load,
    account,
    ansible,
    assert_unchanged,
    interrupted,
    properties,
    recap,
    refused,
    restarted_one_at_a_time,
    started_at,
)

FULL = os.environ.get("KAFKALAB_JOURNEY") == "full"
full_only = pytest.mark.skipif(not FULL, reason="make journey only (KAFKALAB_JOURNEY=full)")
LIFECYCLE = ROOT / ".cache" / "lifecycle"
MYID = "/var/lib/zookeeper/myid"
# The first step's setting: the runs after it keep it (without it they would change it back).
SETTING = ["-e", json.dumps({"zookeeper_custom_config": {"maxClientCnxns": 100}})]
SEEN: dict[str, Any] = {}

pytestmark = [pytest.mark.changes_cluster, pytest.mark.after_the_suite]


@pytest.fixture(scope="module", autouse=True)
def zookeeper_cluster() -> None:
    if "zookeeper.connect" not in properties(group("kafka_broker")[0]):
        pytest.skip("a KRaft cluster: this journey starts in ZooKeeper mode")


def tls() -> bool:
    return bool(host_variables(group("zookeeper")[0]).get("zookeeper_tls", False))


def leads(name: str) -> bool:
    """Whether the server says it leads the ensemble (srvr, by the address its certificate names)."""
    found = host_variables(name)
    address = f"{found['firewall_address']}:{found.get('zookeeper_client_port', 2181)}"
    with_tls = "--tls /etc/zookeeper/tls " if tls() else ""
    return "Mode: leader" in node(name).check_output(f"/usr/local/bin/zk4lw {with_tls}srvr {address}")


def registered_in_zookeeper() -> list[int]:
    """The broker ids in ZooKeeper's /brokers/ids, read with ZooKeeper's own shell (Kafka's may be 4.x by now)."""
    name = group("zookeeper")[0]
    found = host_variables(name)
    command = (
        f"/opt/zookeeper/current/bin/zookeeper-shell.sh {found['firewall_address']}:"
        f"{found.get('zookeeper_client_port', 2181)} ls /brokers/ids"
    )
    if tls():
        command += " -zk-tls-config-file /etc/kafka/zookeeper-client.properties"
    listed = [line for line in node(name).check_output(command).splitlines() if re.fullmatch(r"\[[0-9, ]*\]", line)]
    return sorted(int(i) for i in (listed[-1] if listed else "[]").strip("[]").split(",") if i.strip())


def assert_phase(broker: str, controller: str, registered: list[int], release: str | None = None) -> None:
    """What every node runs after a step: the stage its server.properties gives it (zookeeper, migration, kraft) or
    `none` for a deprovisioned controller (Kafka stopped, its metadata gone); running nodes have no restart pending."""
    found = {}
    for name in group("kafka"):
        host = node(name)
        config = host.file("/etc/kafka/server.properties")
        found[name] = {
            "stage": kafka_stage(config.content_string if config.exists else None),
            "active": host.run("systemctl is-active kafka").stdout.strip() == "active",
            "pending": host.file("/var/lib/kafkalab/restart/kafka.pending").exists,
            "meta": host.file("/var/lib/kafka/data/meta.properties").exists,
            "release": host.check_output("readlink /opt/kafka/current || true"),
        }
    brokers = set(group("kafka_broker"))
    wanted = {name: broker if name in brokers else controller for name in found}
    expected = {
        name: {
            "stage": found[name]["stage"] if want == "none" else want,
            "active": want != "none",
            "pending": False if want != "none" else found[name]["pending"],
            "meta": found[name]["meta"] if want != "none" else False,
            "release": f"/opt/kafka/kafka_2.13-{release}" if release else found[name]["release"],
        }
        for name, want in wanted.items()
    }
    assert found == expected
    assert registered_in_zookeeper() == registered


def assert_changes_nothing(playbook: str, *args: str) -> None:
    assert_unchanged(recap(ansible(playbook, *args)), group("kafka"))


@pytest.fixture(scope="module")
def load() -> Iterator[Load]:
    ephemeral = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    # 100 msg/s: the load process alone took 43 % of a core at 200 msg/s (ps, 2026-11-25), beside three brokers
    # answering one request per record, on the 2 cores every host of the scenario shares. The brokers' own listener
    # on 9092 (PLAINTEXT in this scenario), as an application reaches them.
    running = Load(
        bootstrap=",".join(f"{kafka_address(name)}:9092" for name in group("kafka_broker")),
        client_config=None,
        state=Path(ephemeral) / "load" if ephemeral else LIFECYCLE / "journey-zookeeper-load",
        report=LIFECYCLE / f"molecule-zookeeper{'-journey' if FULL else ''}.json",
    )
    running.start()
    yield running
    running.close(stopped=bool(SEEN.get("load_stopped")))


# ---- 1. a ZooKeeper setting, every server restarted -------------------------------------------------------------


def test_a_zookeeper_setting_restarts_every_server_once_one_at_a_time_leader_last(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = group("zookeeper")
    started = {name: started_at(name, "zookeeper") for name in servers}
    leaders = [name for name in servers if leads(name)]
    assert len(leaders) == 1, f"leaders before: {leaders}"
    ansible("zookeeper.yml", *SETTING)
    order = restarted_one_at_a_time(started, "zookeeper")
    assert order[-1] == leaders[0], f"the leader {leaders[0]} did not go last: {order}"
    account(load, capsys, "zookeeper rolling restart")
    SEEN["started"] = {name: started_at(name, "zookeeper") for name in servers}


# ---- 2. refused runs -------------------------------------------------------------------------------------------


def test_a_server_with_another_myid_and_a_switch_off_tls_are_refused() -> None:
    name = group("zookeeper")[-1]
    first = group("zookeeper")[0]
    # As if its disk came from another server (the running server read its own at start and does not look again).
    node(name).run_expect([0], f"printf 9 > {MYID}")
    try:
        args = ["-e", json.dumps({"zookeeper_tls": False, "zookeeper_client_port": 2181})] if tls() else []
        said = refused("zookeeper.yml", *SETTING, *args)
    finally:
        myid = host_variables(name)["zookeeper_myid"]
        node(name).run_expect([0], f"printf {myid} > {MYID} && chown zookeeper:zookeeper {MYID} && chmod 0640 {MYID}")
    assert f"{name}: {MYID} holds 9 but the inventory gives this host zookeeper_myid {myid}" in said
    if tls():
        assert (
            f"{first}: zookeeper_tls is false but this server runs TLS (secureClientPort in /etc/zookeeper/zoo.cfg)"
            in said
        )
    assert {name: started_at(name, "zookeeper") for name in group("zookeeper")} == SEEN["started"]


def test_a_lost_project_ca_is_refused_before_the_ensemble_splits_trust() -> None:
    """A run would make a new CA and roll the servers onto it one by one: the ensemble would split trust."""
    if not tls():
        pytest.skip("the ensemble runs without TLS")
    said = refused("zookeeper.yml", *SETTING, "-e", "zookeeper_tls_ca_dir=/nonexistent/pki")
    assert f"{group('zookeeper')[0]}: trusts the CA whose certificate hashes to sha256" in said
    assert "but zookeeper_tls_ca_dir /nonexistent/pki holds no CA: the project CA was lost or moved." in said
    assert {name: started_at(name, "zookeeper") for name in group("zookeeper")} == SEEN["started"]


# ---- 3. the migration, killed once -------------------------------------------------------------------------------


@full_only
def test_a_migration_killed_once_every_broker_has_its_migration_file_is_finished_by_the_next_run(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = "docker exec {host} grep -qx zookeeper.metadata.migration.enable=true /etc/kafka/server.properties"
    said = interrupted(
        "migrate_to_kraft.yml", SETTING, group("kafka_broker"), probe, load.state / "interrupted-migration.log"
    )
    with capsys.disabled():
        print(f"\n{said}")
    ansible("migrate_to_kraft.yml", *SETTING)
    assert_phase(broker="kraft", controller="migration", registered=[])
    account(load, capsys, "migrate to KRaft (killed once, resumed)")


# ---- 4. rollback, and the migration again ----------------------------------------------------------------------


@full_only
def test_a_rollback_takes_the_brokers_back_to_zookeeper_and_a_second_changes_nothing(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    ansible("rollback_to_zookeeper.yml", *SETTING)
    brokers = [int(properties(name).get("broker.id") or properties(name)["node.id"]) for name in group("kafka_broker")]
    assert_phase(broker="zookeeper", controller="none", registered=sorted(brokers))
    assert_changes_nothing("rollback_to_zookeeper.yml", *SETTING)
    account(load, capsys, "rollback to ZooKeeper")


@full_only
def test_the_cluster_migrates_again_from_a_clean_slate(load: Load, capsys: pytest.CaptureFixture[str]) -> None:
    ansible("migrate_to_kraft.yml", *SETTING)
    assert_phase(broker="kraft", controller="migration", registered=[])
    account(load, capsys, "migrate to KRaft again")


# ---- 5. finalized ------------------------------------------------------------------------------------------------


@full_only
def test_finalized_the_migration_cannot_be_rolled_back_and_finalizing_again_changes_nothing(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    ansible("migrate_to_kraft.yml", *SETTING, "-e", "kafka_migration_finalize=true")
    assert_phase(broker="kraft", controller="kraft", registered=[])
    account(load, capsys, "finalize")
    controllers = ", ".join(group("kafka_controller"))
    said = refused("rollback_to_zookeeper.yml", *SETTING)
    assert f"the migration was finalized ({controllers} run without zookeeper.metadata.migration.enable)" in said
    assert_changes_nothing("migrate_to_kraft.yml", *SETTING, "-e", "kafka_migration_finalize=true")


# ---- 6. the KRaft cluster upgraded -------------------------------------------------------------------------------


@full_only
def test_the_finalized_cluster_upgrades_to_4_3_1() -> None:
    retired = {"kafka_mode": "kraft", "kafka_version": "4.3.1", "zookeeper_ensemble_group": "retired_zookeeper"}
    ansible("upgrade.yml", *SETTING, "-e", json.dumps(retired))
    assert_phase(broker="kraft", controller="kraft", registered=[], release="4.3.1")


def test_every_acknowledged_record_was_consumed_once_through_the_whole_journey(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    SEEN["load_stopped"] = True
    account(load, capsys, "upgrade 3.9.2 to 4.3.1" if FULL else "stop", stop=True)
