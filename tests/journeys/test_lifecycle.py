"""The cluster's day-2 lifecycle under an acks=all load, one step per test, in file order.

A producer writes with acks=all and idempotence to an RF 3, min.insync.replicas 2 topic and a consumer group commits
from the first step to the last (python -m kafkalab.load); at the end of each phase every acknowledged record is
accounted for (lost, duplicated, order per partition, the group's committed offsets, the longest gap between two
acks), and the run fails on any record acked and not there exactly once.

Molecule's default scenario converges the previous release with a static controller quorum (converge.yml), so:
1. playbooks/upgrade.yml moves every node to the inventory's release (controllers first, one at a time, through the
   gates) and raises the feature levels; going back to the previous release is then refused. With
   KAFKALAB_JOURNEY=full (make journey-default) it first runs with --check --diff: the plan shown, nothing changed.
2. playbooks/quorum_to_dynamic.yml moves the static quorum to dynamic with a broker property changed in the same run,
   and the run is SIGKILLed once every node has the new file, before any restart: nothing restarted. The next run
   (kafka.yml) finishes it: every node restarts once, one at a time, none keeps controller.quorum.voters, the voters
   carry their directory ids; the same roll renews every node's certificate (served with a new serial). A third run,
   the whole of site.yml at -vvv (tests/cluster/test_secrets.py reads its log), changes and restarts nothing: the
   scenario's idempotence check.
3. The admin user's password changed in the inventory and back: nothing restarts, the cluster refuses the old
   password while the new one holds, the nodes' admin tools log in.
4. The project CA replaced (rotate_certificates.yml -e kafka_tls_rotate_ca=true) in two runs: the first stops after
   every node and the lag exporter trust both CAs (the nodes still show the old CA's certificates); the second signs
   every certificate with the new CA, then trusts it alone: every node shows a certificate the new CA verifies and
   the old one refuses, the old CA sits in retired/.
With KAFKALAB_JOURNEY=full, then: a dedicated controller added on the spare machine and removed again (3 -> 4 -> 3
voters; each inventory-only edit refused first), a run-time property applied with no restart, and a certificate
rotation whose restart the gate refuses (a partition would fall below min.insync.replicas) until the next run.

On the lab (make journeys) the steps whose starting point the cluster is past (it already runs the release, its
quorum is dynamic) are skipped and say so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_restarts import kafka_finalized_features
from inventory_hosts import (
    ROOT,
    ca_dir,
    group,
    host_variables,
    hosts_in,
    inventory_listing,
    kafka_properties_path,
    kafka_unit,
    listener_protocol,
    node,
)
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from journeys.steps import (
    Load,
    account,
    ansible,
    assert_unchanged,
    inter_broker_address,
    interrupted,
    journey_address,
    journey_client_config,
    journey_tool_args,
    one_line,
    properties,
    refused,
    restart_pending,
    restarted_one_at_a_time,
    served_certificate,
    started_at,
    vvv_run,
)
from kafkalab import kafka_client
from kafkalab.transactions import TxnWorkload

pytestmark = pytest.mark.changes_cluster

FULL = os.environ.get("KAFKALAB_JOURNEY") == "full"
full_only = pytest.mark.skipif(not FULL, reason="make journey-default only (KAFKALAB_JOURNEY=full)")
SCENARIO = os.environ.get("MOLECULE_SCENARIO_NAME", "")
LIFECYCLE = ROOT / ".cache" / "lifecycle"
# The property step 2 sets: later runs keep it (without it they would change it back and restart every node).
SET = {"log.retention.hours": 72}
SAME = ["-e", json.dumps({"kafka_custom_properties": SET})]
NOT_A_DIRECTORY_ID = {"", "AAAAAAAAAAAAAAAAAAAAAA"}
# What the steps learn and the later ones check against.
SEEN: dict[str, Any] = {}


def release_dir(name: str) -> str:
    return str(node(name).check_output("readlink /opt/kafka/current"))


def wanted_release(name: str) -> str:
    found = host_variables(name)
    return f"/opt/kafka/kafka_{found.get('kafka_scala_version', '2.13')}-{found['kafka_version']}"


def quorum(name: str) -> tuple[int, list[dict[str, Any]]]:
    """(kraft.version's finalized level, the current voters) as the first controller's admin tools read them."""
    address = inter_broker_address(name)
    features = node(name).check_output(f"kafka-features --bootstrap-server {address} describe")
    level = re.search(r"Feature: kraft\.version.*?FinalizedVersionLevel: (\d+)", features)
    assert level, features
    status = node(name).check_output(f"kafka-metadata-quorum --bootstrap-server {address} describe --status")
    voters = re.search(r"(?m)^CurrentVoters:\s*(.*)$", status)
    assert voters, status
    return int(level.group(1)), json.loads(voters.group(1))


def controller_ids() -> list[int]:
    return sorted(int(properties(name)["node.id"]) for name in group("kafka_controller"))


def not_after(line: str) -> datetime:
    return datetime.strptime(line.removeprefix("notAfter="), "%b %d %H:%M:%S %Y %Z")


def assert_nothing_restarted() -> None:
    assert {name: started_at(name) for name in group("kafka")} == SEEN["started"], "a node restarted"
    assert [name for name in group("kafka") if restart_pending(name)] == [], "a restart is pending"


def note_starts() -> None:
    SEEN["started"] = {name: started_at(name) for name in group("kafka")}


def kept() -> list[str]:
    """SAME once the cluster carries step 2's property, [] before (a lab whose quorum was dynamic already skips the
    step that sets it): the later runs keep what the nodes run, so that they restart nothing."""
    first = group("kafka")[0]
    return SAME if properties(first).get("log.retention.hours") == str(SET["log.retention.hours"]) else []


@pytest.fixture(scope="module")
def load() -> Iterator[Load]:
    brokers = group("kafka_broker")
    ephemeral = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    running = Load(
        bootstrap=",".join(journey_address(name) for name in brokers),
        client_config=journey_client_config(brokers[0]),
        state=Path(ephemeral) / "load" if ephemeral else LIFECYCLE / "journey-load",
        report=LIFECYCLE / (f"molecule-{SCENARIO}.json" if SCENARIO else "journey.json"),
    )
    running.start()
    yield running
    running.close(stopped=bool(SEEN.get("load_stopped")))


TXN_NAME = "lifecycle-txn"


@pytest.fixture(scope="module")
def transactions(load: Load) -> Iterator[dict[str, TxnWorkload]]:
    """The transactional read-process-write workload (kafkalab/transactions.py), started by the first step that needs
    it (the upgrade: its roll is the rolling restart it goes through) and checked by the transactions step."""
    held: dict[str, TxnWorkload] = {}
    yield held
    for workload in held.values():
        workload.close()


def transactional_workload(load: Load, held: dict[str, TxnWorkload]) -> TxnWorkload:
    """The workload, started now if no step started it: it reads the load's topic from its start and writes a topic of
    its own (RF 3, min.insync.replicas 2, made here; its group, transactional id and output named anew for each start,
    so that a second start on the same cluster checks its own records), with Kafka's Java clients of the inventory's
    release, as the journey's admin."""
    if "running" in held:
        return held["running"]
    first = group("kafka_broker")[0]
    name = f"{TXN_NAME}-{uuid.uuid4().hex[:6]}"
    output = f"{name}-out"
    admin = KafkaAdminClient(**kafka_client.settings(load.client_config), bootstrap_servers=load.bootstrap)
    try:
        admin.create_topics([NewTopic(output, 3, 3, topic_configs={"min.insync.replicas": "2"})], timeout_ms=60_000)
    finally:
        admin.close()
    running = TxnWorkload(
        host_variables(first)["kafka_version"],
        load.bootstrap,
        load.client_config,
        (load.topic, output),
        name,
        scala=host_variables(first).get("kafka_scala_version", "2.13"),
    )
    held["running"] = running
    running.start()
    running.wait_commits(10, 180)
    return running


def finalized_features(name: str) -> dict[str, Any]:
    """The cluster's finalized feature levels as the node's admin tool reads them, parsed as the upgrade playbook
    parses them (kafka_finalized_features: metadata.version by name, the others as integers)."""
    return kafka_finalized_features(node(name).check_output(f"kafka-features {journey_tool_args(name)} describe"))


# ---- 1. the release --------------------------------------------------------------------------------------


@full_only
def test_upgrade_check_mode_shows_the_plan_and_changes_nothing(load: Load) -> None:
    name = group("kafka")[0]
    if release_dir(name) == wanted_release(name):
        pytest.skip("the cluster already runs the inventory's release")
    before = {name: (release_dir(name), started_at(name)) for name in group("kafka")}
    plan = ansible("upgrade.yml", "--check", "--diff")
    assert "Nodes, one at a time, in this order: kafka" in plan
    assert f"-> {os.path.basename(wanted_release(name))}" in plan
    assert "Then raise, when every node runs it: metadata.version=" in plan
    assert {name: (release_dir(name), started_at(name)) for name in group("kafka")} == before
    assert not node(name).file(wanted_release(name)).exists


def test_upgrade_moves_every_node_to_the_inventorys_release_under_load(
    load: Load, transactions: dict[str, TxnWorkload], capsys: pytest.CaptureFixture[str]
) -> None:
    first = group("kafka")[0]
    if release_dir(first) == wanted_release(first):
        pytest.skip("the cluster already runs the inventory's release")
    SEEN["previous_version"] = os.path.basename(release_dir(first)).rsplit("-", 1)[1]
    SEEN["features_before"] = finalized_features(first)
    running = transactional_workload(load, transactions)
    ansible("upgrade.yml")
    account(load, capsys, f"upgrade {SEEN['previous_version']} to {host_variables(first)['kafka_version']}")
    assert {name: release_dir(name) for name in group("kafka")} == {
        name: wanted_release(name) for name in group("kafka")
    }
    # Every feature level the release brings is finalized (kraft.version excepted: a static quorum keeps 0 until
    # quorum_to_dynamic.yml), as the release's own version-mapping gives them (written beside its archive).
    version = host_variables(first)["kafka_version"]
    scala = host_variables(first).get("kafka_scala_version", "2.13")
    release = json.loads((ROOT / ".cache" / "artifacts" / f"kafka_{scala}-{version}.features.json").read_text())
    wanted = {f: level for f, level in release.items() if f not in ("kraft.version", "metadata.version.name")}
    wanted["metadata.version"] = release["metadata.version.name"]
    after = finalized_features(first)
    with capsys.disabled():
        print(f"\nfeature levels {SEEN['features_before']} -> {after}")
    assert {f: after.get(f) for f in wanted} == wanted
    # The transactions went on through the roll (every node restarted once, controllers first).
    running.wait_commits(10, 180)


def test_going_back_to_the_previous_release_is_refused() -> None:
    if "previous_version" not in SEEN:
        pytest.skip("the upgrade step did not run (the cluster already ran the release)")
    said = refused("upgrade.yml", "-e", f"kafka_version={SEEN['previous_version']}")
    assert "and Kafka cannot lower a finalized metadata.version" in said
    assert {name: release_dir(name) for name in group("kafka")} == {
        name: wanted_release(name) for name in group("kafka")
    }


def node_name(node_id: int) -> str:
    return next(name for name in group("kafka") if int(properties(name)["node.id"]) == node_id)


def move_partition_leader(admin: KafkaAdminClient, topic: str, partition: int, order: list[int]) -> None:
    """The partition's replicas put in `order` (the same replicas: no data moves), then a preferred leader election,
    so the first of `order` leads it; returns once it does."""
    tp = TopicPartition(topic, partition)
    refused = {k: v for k, v in admin.alter_partition_reassignments({tp: order}).items() if v is not None}
    assert not refused, refused
    deadline = time.monotonic() + 120
    while True:
        found = next(p for p in admin.describe_topics([topic])[0]["partitions"] if p["partition_index"] == partition)
        if list(found["replica_nodes"]) == order and found["leader_id"] == order[0]:
            return
        assert time.monotonic() < deadline, f"{topic}-{partition} did not move to {order}: {found}"
        if list(found["replica_nodes"]) == order:
            admin.elect_leaders(0, {topic: [partition]}, raise_errors=False)
        time.sleep(1)


def check_transactions(
    running: TxnWorkload, capsys: pytest.CaptureFixture[str], what: str, name: str, **noted: Any
) -> None:
    """Stop the workload and make Jepsen's checks on what it wrote: no committed write lost, no aborted record
    read, no transaction seen in part, no duplicate (kafkalab/transactions.py); saved as JSON and shown."""
    running.stop()
    verdict = running.verify()
    report = LIFECYCLE / (f"molecule-{SCENARIO}-{name}.json" if SCENARIO else f"journey-{name}.json")
    report.write_text(json.dumps({**verdict.__dict__, **noted}, indent=1))
    with capsys.disabled():
        print(f"\n{verdict.line()}; {what}")
        for why in sorted(set(verdict.failures))[:5]:
            print(f"  aborted by a fault: {why[:200]}")
    assert verdict.anomalies() == {}, verdict.line()
    assert verdict.committed_transactions > 0 and verdict.aborted_on_purpose > 0
    # The aborted transactions' records are in the log: the aborted-read check had something to find.
    assert verdict.aborted_in_log > 0, verdict.line()


def test_transactions_through_the_upgrades_roll_lost_nothing(
    transactions: dict[str, TxnWorkload], capsys: pytest.CaptureFixture[str]
) -> None:
    """The transactional read-process-write workload the upgrade step started (Kafka's Java clients of the new
    release, through every node's restart and the feature levels raised), stopped and checked."""
    if "running" not in transactions:
        pytest.skip("the upgrade step did not run (the cluster already ran the release)")
    check_transactions(transactions.pop("running"), capsys, "through the upgrade's roll", "transactions-upgrade")


@full_only
def test_transactions_hold_through_a_coordinator_sigkill_and_a_leader_move(
    load: Load, transactions: dict[str, TxnWorkload], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same checks through a SIGKILL of the transaction coordinator and its __transaction_state partition's
    leadership moved to another replica and back. make journey-default only: its first CI run (2026-12-07) saw the
    workload stall after the coordinator's SIGKILL (each sendOffsetsToTransaction blocking for minutes), which is
    being looked into (docs/operations/upgrade.md)."""
    running = transactional_workload(load, transactions)
    admin = KafkaAdminClient(**kafka_client.settings(load.client_config), bootstrap_servers=load.bootstrap)
    try:
        # 1. SIGKILL the coordinator; systemd starts it again.
        victim = node_name(running.coordinator())
        node(victim).run_expect([0], f"systemctl kill --signal=SIGKILL {kafka_unit(victim)}")
        deadline = time.monotonic() + 120
        while node(victim).run(f"systemctl is-active --quiet {kafka_unit(victim)}").rc != 0:
            assert time.monotonic() < deadline, f"systemd did not restart {kafka_unit(victim)} on {victim}"
            time.sleep(1)
        running.wait_commits(20, 240)
        # 2. Move the coordinator's leadership to another replica, then back.
        state = admin.describe_topics(["__transaction_state"])[0]["partitions"]
        partition = running.coordinator_partition(len(state))
        replicas = list(next(p["replica_nodes"] for p in state if p["partition_index"] == partition))
        assert len(replicas) > 1, f"__transaction_state-{partition} has one replica: its leader cannot move"
        leader = running.coordinator()
        moved = [r for r in replicas if r != leader] + [leader]
        move_partition_leader(admin, "__transaction_state", partition, moved)
        assert running.coordinator() == moved[0]
        running.wait_commits(20, 240)
        move_partition_leader(admin, "__transaction_state", partition, replicas)
        running.wait_commits(20, 240)
    except BaseException:
        running.close()  # a workload left running would load the steps after this one
        raise
    finally:
        admin.close()
    transactions.pop("running", None)
    check_transactions(
        running,
        capsys,
        f"SIGKILLed {victim}, __transaction_state-{partition} led by {moved[0]} and back",
        "transactions-faults",
        sigkilled=victim,
        moved=moved,
    )
    account(load, capsys, "transactions: coordinator SIGKILL, leader moved and back")


# ---- 2. static -> dynamic quorum, a killed run, the next run, a third run ------------------------------------


def test_the_quorum_is_static_before_the_move() -> None:
    note_starts()
    SEEN["served"] = {name: served_certificate(name) for name in group("kafka")}
    assert all(rc == 0 for rc, _ in SEEN["served"].values()), SEEN["served"]
    level, voters = quorum(group("kafka_controller")[0])
    if level != 0:
        pytest.skip(f"the quorum is dynamic already (kraft.version {level})")
    assert [voter for voter in voters if voter.get("directoryId", "") not in NOT_A_DIRECTORY_ID] == []
    SEEN["static"] = True


def test_a_quorum_move_killed_before_any_restart_restarted_nothing(load: Load) -> None:
    if not SEEN.get("static"):
        pytest.skip("the quorum is dynamic already")
    nodes = group("kafka")
    if any(
        "docker" not in str(host_variables(name).get("ansible_connection", "")) for name in nodes
    ):  # the probe looks into the containers
        pytest.skip("the killed run watches the nodes through docker exec")
    path = kafka_properties_path(nodes[0])
    probe = (
        f"docker exec {{host}} sh -c 'grep -qx log.retention.hours=72 {path} "
        f"&& ! grep -q ^controller.quorum.voters= {path}'"
    )
    interrupted("quorum_to_dynamic.yml", SAME, nodes, probe, load.state / "interrupted-run.log")
    assert {name: started_at(name) for name in nodes} == SEEN["started"], "the killed run restarted a node"
    for name in nodes:
        assert "log.retention.hours=72" in node(name).file(path).content_string.splitlines()


def test_the_next_run_finishes_the_move_restarting_each_node_once_one_at_a_time() -> None:
    if not SEEN.get("static"):
        pytest.skip("the quorum is dynamic already")
    # Every certificate is due (kafka_tls_renew_days past its life): the roll that finishes the move renews them too.
    finished = one_line(ansible("kafka.yml", *SAME, "-e", "kafka_tls_renew_days=36500"))
    voters = ", ".join(str(i) for i in controller_ids())
    assert f"Controller quorum: dynamic (voters {voters} per the running quorum)" in finished
    restarted_one_at_a_time(SEEN["started"])
    assert [name for name in group("kafka") if restart_pending(name)] == []
    for name in group("kafka"):
        rc, served = served_certificate(name)
        before = SEEN["served"][name][1]
        assert rc == 0 and served[0] != before[0], f"{name} serves {served}, before {before}"
        assert not_after(served[1]) >= not_after(before[1])
    note_starts()


def test_the_quorum_is_dynamic_with_every_voters_directory_id() -> None:
    if not SEEN.get("static"):
        pytest.skip("the quorum was dynamic already")
    for name in group("kafka"):
        lines = node(name).file(kafka_properties_path(name)).content_string.splitlines()
        assert not any(line.startswith("controller.quorum.voters=") for line in lines), name
        assert any(line.startswith("controller.quorum.bootstrap.servers=") for line in lines), name
    level, voters = quorum(group("kafka_controller")[0])
    assert level == 1
    assert sorted(int(voter["id"]) for voter in voters) == controller_ids()
    assert [voter for voter in voters if voter.get("directoryId", "") in NOT_A_DIRECTORY_ID] == []


def test_a_third_run_of_site_yml_changes_and_restarts_nothing(load: Load, capsys: pytest.CaptureFixture[str]) -> None:
    if "started" not in SEEN:
        note_starts()
    vvv = LIFECYCLE / (f"molecule-{SCENARIO}.vvv.log" if SCENARIO else "journey.vvv.log")
    recap = vvv_run("site.yml", kept(), vvv)
    assert_unchanged(recap, group("kafka") + hosts_in("monitoring"))
    # site.yml imports playbooks/preflight.yml once per layer; its checks run in the first import only.
    said = vvv.read_text()
    for task in ("Check on the controller, once", "Remember that the host checks passed in this run"):
        assert said.count(f"TASK [{task}]") == 1, f"{task}: {said.count(f'TASK [{task}]')} times in {vvv}"
    assert_nothing_restarted()
    account(load, capsys, "quorum to dynamic and a config roll, killed and finished; a no-op site.yml")


# ---- 3. the admin's password ----------------------------------------------------------------------------


def logs_in(load: Load, password: str) -> bool:
    assert load.client_config, "the load's listener runs PLAINTEXT"
    settings = kafka_client.settings(load.client_config) | {"sasl_plain_password": password}
    try:
        KafkaAdminClient(
            **settings, bootstrap_servers=load.bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000
        ).close()
    except Exception:  # any refusal: authentication, or no connection at all
        return False
    return True


def test_the_admin_password_changed_and_back_restarts_nothing(load: Load, tmp_path: Path) -> None:
    # The admin's login as the kafka role wrote it for the load's listener: the inventory may hold a lookup (the lab's
    # password file) that only a playbook run renders.
    login = kafka_client.settings(load.client_config) if load.client_config else {}
    if "sasl_mechanism" not in login:
        pytest.skip("no listener the journeys reach logs its clients in")
    admin, old = login["sasl_plain_username"], login["sasl_plain_password"]
    users = list(host_variables(group("kafka")[0]).get("kafka_users") or [])
    assert admin in [user["name"] for user in users], f"{admin} logs in on the load's listener but is no kafka_users"
    new = "Adm1n-changed-by-the-journey"
    changed = tmp_path / "admin-password.json"
    changed.touch(mode=0o600)
    changed.write_text(
        json.dumps({"kafka_users": [u for u in users if u["name"] != admin] + [{"name": admin, "password": new}]})
    )
    for extra in (["-e", f"@{changed}"], []):
        said = one_line(ansible("kafka.yml", *kept(), *extra))
        assert f"{admin}'s password changed in the cluster (SCRAM-SHA-512)." in said
    assert logs_in(load, old), "the inventory's password does not log in"
    assert not logs_in(load, new), "the changed password still logs in"
    assert_nothing_restarted()
    for name in group("kafka"):
        node(name).run_expect([0], f"kafka-topics {journey_tool_args(name)} --list")


# ---- 4. the project CA replaced ------------------------------------------------------------------------------


def trust_files() -> dict[str, str]:
    """Every node's CA file, and the lag exporter's copy on the monitoring hosts when it reaches the brokers over TLS
    (their inter-broker listener: roles/prometheus tasks/lag_exporter_client.yml)."""
    props = properties(group("kafka")[0])
    tls = listener_protocol(props, props["inter.broker.listener.name"]) in {"SSL", "SASL_SSL"}
    return {name: "/etc/kafka/tls/ca.pem" for name in group("kafka")} | {
        name: "/opt/kafka-lag-exporter/ca.pem" for name in (hosts_in("monitoring") if tls else [])
    }


def pki(name: str) -> Path:
    return Path(ca_dir()) / name


def test_a_ca_rotation_stopped_after_trust_leaves_every_node_trusting_both() -> None:
    if not pki("ca.pem").exists():
        pytest.skip("no project CA on this cluster")
    SEEN["ca_before"] = before = pki("ca.pem").read_text().rstrip()
    ansible(
        "rotate_certificates.yml", "-e", "kafka_tls_rotate_ca=true", "-e", "kafka_tls_rotate_ca_stop_after_trust=true"
    )
    assert pki("ca.pem").read_text().rstrip() == before
    assert pki("trust.pem").read_text().rstrip() == before + "\n" + pki("ca-next.pem").read_text().rstrip()
    for name, path in trust_files().items():
        assert node(name).file(path).content_string.count("BEGIN CERTIFICATE") == 2, name
    for name in group("kafka"):
        assert served_certificate(name, before)[0] == 0, f"{name} no longer shows a certificate of the old CA"


def test_the_ca_rotation_finished_leaves_the_new_ca_alone_trusted(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    if "ca_before" not in SEEN:
        pytest.skip("no project CA on this cluster")
    before = SEEN["ca_before"]
    ansible("rotate_certificates.yml", "-e", "kafka_tls_rotate_ca=true")
    now = pki("ca.pem").read_text().rstrip()
    assert now != before
    assert pki("trust.pem").read_text().rstrip() == now
    assert not pki("ca-next.pem").exists() and not pki("ca-previous.pem").exists()
    # Kept as retired/<the start of its sha256>.pem (module_utils/pki.py fingerprint).
    retired = pki("retired") / f"{hashlib.sha256(before.strip().encode()).hexdigest()[:16]}.pem"
    assert retired.read_text().rstrip() == before
    for name, path in trust_files().items():
        assert node(name).file(path).content_string.strip() == now.strip(), name
    for name in group("kafka"):
        assert served_certificate(name, now)[0] == 0, f"{name} shows no certificate of the new CA"
        assert served_certificate(name, before)[0] != 0, f"{name}'s certificate still verifies with the old CA"
        assert not restart_pending(name)
    note_starts()
    account(load, capsys, "the admin password, and the CA replaced in three rolls")


# ---- make journey-default: voters, a run-time property, a restart the gate refuses ---------------------------


SPARE = "kafka4"


@full_only
def test_voter_changes_refused_from_the_inventory_alone_then_made_by_their_playbooks(tmp_path: Path) -> None:
    if SPARE not in inventory_listing().get("_meta", {}).get("hostvars", {}):
        pytest.skip(f"no spare machine {SPARE} in the inventory")
    grown = tmp_path / "controllers.yml"
    grown.write_text(
        "all:\n  children:\n    kafka:\n      children:\n"
        f"        kafka_controller:\n          hosts:\n            {SPARE}:\n"
    )
    ids = controller_ids()
    names = ", ".join([*group("kafka_controller"), SPARE])
    said = refused("kafka.yml", *kept(), inventories=[str(grown)])
    assert f"the KRaft controller quorum has {len(ids) + 1} hosts ({names}): it must be odd" in said
    assert "An even count is allowed only while the quorum changes: run playbooks/add_controller.yml" in said
    spare_id = int(host_variables(SPARE)["kafka_node_id"])
    added = one_line(
        ansible("add_controller.yml", "-e", f"kafka_add_controller={SPARE}", *kept(), inventories=[str(grown)])
    )
    grown_ids = ", ".join(str(i) for i in sorted([*ids, spare_id]))
    assert f"Added node {spare_id} ({SPARE}): the voters are now {grown_ids}" in added
    said = refused("kafka.yml", *kept())
    assert (
        f"node {spare_id} is a voter of the running quorum [{grown_ids}] but no host of the kafka_controller group"
        in said
    )
    removed = one_line(
        ansible("remove_controller.yml", "-e", f"kafka_remove_controller={SPARE}", *kept(), inventories=[str(grown)])
    )
    assert f"Removed node {spare_id} ({SPARE}): the voters are now {', '.join(map(str, ids))}" in removed
    spare = node(SPARE)
    assert spare.run("systemctl is-enabled kafka").stdout.strip() == "disabled"
    assert spare.run("systemctl is-active kafka").stdout.strip() == "inactive"
    assert sorted(int(voter["id"]) for voter in quorum(group("kafka_controller")[0])[1]) == ids
    assert_nothing_restarted()


@full_only
def test_a_run_time_property_is_applied_to_every_broker_without_a_restart() -> None:
    props = {"kafka_custom_properties": {**(SET if kept() else {}), "message.max.bytes": 2097152}}
    ansible("kafka.yml", "-e", json.dumps(props))
    for name in group("kafka_broker"):
        effective = node(name).check_output(
            f"kafka-configs --bootstrap-server {inter_broker_address(name)} --entity-type brokers "
            f"--entity-name {properties(name)['node.id']} --describe --all"
        )
        assert re.search(r"(?m)^\s+message\.max\.bytes=2097152 ", effective), name
    assert_nothing_restarted()


@full_only
def test_a_restart_that_would_take_a_partition_below_min_isr_is_refused_until_it_would_not(load: Load) -> None:
    brokers = group("kafka_broker")
    first, second = brokers[0], brokers[1]
    first_id, second_id = properties(first)["node.id"], properties(second)["node.id"]
    ca = pki("ca.pem").read_text()
    topics = f"kafka-topics {journey_tool_args(first)}"
    node(first).run_expect(
        [0],
        f"{topics} --create --topic gate-probe --replica-assignment {first_id}:{second_id}"
        " --config min.insync.replicas=2",
    )
    try:
        served_before = {name: served_certificate(name, ca)[1] for name in brokers}
        said = refused(
            "rotate_certificates.yml",
            "--limit",
            first,
            "-e",
            "kafka_tls_rotate_all=true",
            "-e",
            "kafka_restart_gate_timeout=15",
        )
        assert f"stopping node {first_id} would take partition gate-probe-0" in said
        assert started_at(first) == SEEN["started"][first], f"{first} restarted"
        on_disk = (
            node(first).check_output("openssl x509 -in /etc/kafka/tls/cert.pem -noout -serial -enddate").splitlines()
        )
        assert on_disk != served_before[first], "the rotation did not sign a new certificate"
    finally:
        node(first).run_expect([0], f"{topics} --delete --topic gate-probe")
    ansible("rotate_certificates.yml", "--limit", first)
    served_after = {name: served_certificate(name, ca)[1] for name in brokers}
    assert served_after[first] == on_disk
    assert not_after(served_after[first][1]) >= not_after(served_before[first][1])
    assert {name: served_after[name] for name in brokers[1:]} == {name: served_before[name] for name in brokers[1:]}
    note_starts()


# ---- the whole run -------------------------------------------------------------------------------------------


def test_every_acknowledged_record_was_consumed_once_through_the_whole_journey(
    load: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    phase = (
        "controllers 3 -> 4 -> 3, a run-time config change, a refused stop, a certificate rotated"
        if FULL
        else "the end of the lifecycle journey"
    )
    SEEN["load_stopped"] = True
    account(load, capsys, phase, stop=True)
