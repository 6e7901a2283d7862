"""The one-machine layout and the Spark job under an acks=all load, one step per test, in file order.

Molecule's spark scenario: one Kafka machine running four instances (the controller and three brokers, kafka@...),
two Spark hosts running the job. A producer writes with acks=all and idempotence to an RF 3, min.insync.replicas 2
topic and a consumer group commits (python -m kafkalab.load); the Spark job reads from the cluster all along, and
the cluster suite that follows checks its delivery. make test runs:
1. The whole of site.yml again, at -vvv into .cache/lifecycle/molecule-spark.vvv.log (tests/cluster/test_secrets.py
   looks there for every private key and secret): changed=0 on every host, no instance restarted. This is the
   scenario's idempotence check.
2. The operator's own certificates (group_vars/all/tls.yml): one that expired and one whose subjectAltName lacks the
   address the broker advertises are refused in the controller's preflight, every host unchanged, the message naming
   the host, the variable and the file (prepare.yml made both for the first broker).
make journey-spark (KAFKALAB_JOURNEY=full) goes on under the same load:
3. playbooks/rolling_restart.yml restarts the four instances one at a time through the gates.
4. A fourth broker instance joins with playbooks/scale_out.yml and kafka_rebalance (its share of replicas and
   leaders, no partition twice in a rack); dropping it from the inventory while it holds replicas is refused;
   playbooks/decommission.yml drains, stops and unregisters it; the firewall and Kafka converge without it, with no
   restart.
5. A replaced disk: broker 3's log dir emptied, with a partition whose only copy was on it; the next kafka.yml names
   the partition (stopping if Kafka keeps it offline, until the operator brings it back empty on purpose) and waits
   for the broker to refill.
After each phase every acknowledged record is accounted for, and the Spark job gets 20 events to close its windows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inventory_hosts import (
    ROOT,
    ca_dir,
    group,
    kafka_instance,
    machine_mates,
    node,
    run_playbook,
)

from journeys import steps
from journeys.steps import (
    Load,
    ansible,
    assert_unchanged,
    inter_broker_address,
    one_line,
    recap,
    restart_pending,
    started_at,
    vvv_run,
)

FULL = os.environ.get("KAFKALAB_JOURNEY") == "full"
full_only = pytest.mark.skipif(not FULL, reason="make journey-spark only (KAFKALAB_JOURNEY=full)")
LIFECYCLE = ROOT / ".cache" / "lifecycle"
SEEN: dict[str, Any] = {}

pytestmark = pytest.mark.changes_cluster


@pytest.fixture(scope="module", autouse=True)
def one_machine() -> None:
    nodes = group("kafka")
    if not all(kafka_instance(name) for name in nodes) or machine_mates(nodes[0], nodes) != nodes:
        pytest.skip("this journey is the one-machine layout's (every Kafka host an instance on one machine)")


def client_config() -> str:
    return f"{ca_dir()}/client.properties"


def bootstrap() -> str:
    return ",".join(inter_broker_address(name) for name in group("kafka_broker"))


def job_events() -> None:
    """20 events for the Spark job's windowed counts: a window closes once the watermark (the latest event time, less
    a minute) passes its end, so events after each change close windows before the suite's windowed-count test."""
    command = [sys.executable, "-m", "kafkalab.spark_demo", "--bootstrap", bootstrap(), "--topic", "events"]
    command += ["--count", "20", "--client-config", client_config()]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def started() -> dict[str, int]:
    return {name: started_at(name) for name in group("kafka")}


def account(load: Load, capsys: pytest.CaptureFixture[str], phase: str, *, stop: bool = False) -> None:
    """The load's accounting (journeys.steps.account), then the Spark job's next 20 events."""
    steps.account(load, capsys, phase, stop=stop)
    job_events()


@pytest.fixture(scope="module")
def load() -> Iterator[Load]:
    ephemeral = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    running = Load(
        bootstrap=bootstrap(),
        client_config=client_config(),
        state=Path(ephemeral) / "load" if ephemeral else LIFECYCLE / "journey-spark-load",
        report=LIFECYCLE / "molecule-spark.json",
    )
    running.start()
    job_events()
    yield running
    running.close(stopped=bool(SEEN.get("load_stopped")))


# ---- 1. site.yml again, changing nothing -----------------------------------------------------------------------


def test_site_yml_again_at_vvv_changes_and_restarts_nothing(load: Load) -> None:
    before = started()
    found = vvv_run("site.yml", [], LIFECYCLE / "molecule-spark.vvv.log")
    assert_unchanged(found, set(group("all")) - {"localhost"})
    assert started() == before, "an instance restarted"


# ---- 2. the operator's own certificates, refused -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("problem", "says"), [("expired", "expired on"), ("nameless", "does not name")], ids=["expired", "nameless"]
)
def test_a_bad_own_certificate_is_refused_before_any_host_changes(problem: str, says: str) -> None:
    name = group("kafka_broker")[0]
    certificate = Path(ca_dir()).parent / ".own-pki" / f"{name}-{problem}.crt"
    if not certificate.exists():
        pytest.skip(f"no {certificate} (molecule/spark/prepare.yml makes it)")
    # One line per result: the YAML format folds a long message across lines.
    run = run_playbook(
        "kafka.yml",
        ["-e", f"kafka_tls_own_certificate={certificate}"],
        timeout=1800,
        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"},
    )
    said = one_line(run.stdout)
    assert run.returncode == 2, run.stdout[-4000:]
    assert f"{name}: kafka_tls_own_certificate '{certificate}' {says}" in said
    assert "nothing was changed" in said
    assert_unchanged(recap(run.stdout), group("kafka"))


def test_every_acknowledged_record_is_there_after_the_no_op_run(load: Load, capsys: pytest.CaptureFixture[str]) -> None:
    # make test stops the load here; make journey-spark goes on under it.
    SEEN["load_stopped"] = not FULL
    account(load, capsys, "site.yml again at -vvv, changing nothing", stop=not FULL)


# ---- 3. the instances restarted ----------------------------------------------------------------------------------


@full_only
def test_a_rolling_restart_restarts_every_instance(load: Load, capsys: pytest.CaptureFixture[str]) -> None:
    before = started()
    ansible("rolling_restart.yml")
    SEEN["started"] = started()
    assert [name for name in group("kafka") if SEEN["started"][name] <= before[name]] == [], "not restarted"
    assert [name for name in group("kafka") if restart_pending(name)] == []
    account(load, capsys, "rolling restart of the instances")


# ---- 4. a broker added, refused removal, drained and removed ---------------------------------------------------


@full_only
def test_a_broker_added_rebalanced_then_drained_and_removed(
    load: Load, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The brokers are in racks a, b, c; the new one joins a: the rebalance keeps each partition on as many racks.
    grown = tmp_path / "brokers.yml"
    grown.write_text(
        "all:\n  children:\n    kafka:\n      children:\n        kafka_broker:\n          hosts:\n"
        "            skafka5:\n              kafka_instance: 4\n              kafka_node_id: 4\n"
        "              kafka_listener_overrides: {INTERNAL: {port: 9095}}\n"
        "              kafka_host_custom_properties: {broker.rack: a}\n"
    )
    scaled = one_line(ansible("scale_out.yml", "-e", "kafka_rebalance=true", inventories=[str(grown)]))
    assert re.search(r"Rebalanced: [0-9]+ partition\(s\) moved", scaled), scaled[-4000:]
    # The layout line is "node: replicas/leaders, ...": the new broker holds replicas and leads partitions.
    assert re.search(r'(^|[ "])4: [1-9][0-9]*/[1-9][0-9]*', scaled), scaled[-4000:]
    assert "joined skafka5 (node 4," in scaled
    first = group("kafka_broker")[0]
    described = node(first).check_output(f"kafka-topics --bootstrap-server {bootstrap()} --describe")
    replicas = [set(found.split(",")) for found in re.findall(r"Replicas: ([0-9,]+)", described)]
    assert replicas, described
    assert [r for r in replicas if {"1", "4"} <= r] == [], "a partition has two replicas in rack a"

    said = one_line(run_playbook("kafka.yml", timeout=1800).stdout)
    assert re.search(r"node 4 holds replicas of [0-9]+ partition\(s\)", said), said[-4000:]
    assert "run playbooks/decommission.yml" in said

    drained = one_line(ansible("decommission.yml", "-e", "kafka_decommission=skafka5", inventories=[str(grown)]))
    assert "Decommissioned node 4 (skafka5): it holds no replicas (0 partition(s) left on its disk)" in drained
    assert "registered brokers now 1, 2, 3." in drained
    assert node(first).run("systemctl is-enabled kafka@4").stdout.strip() == "disabled"

    # With the broker out of the inventory again, the others forget it: its ports close, nothing restarts.
    ansible("firewall.yml")
    ansible("kafka.yml")
    assert started() == SEEN["started"], "an instance restarted for the shape changes"
    assert [name for name in group("kafka") if restart_pending(name)] == []
    account(load, capsys, "broker added, rebalanced, drained and removed")


# ---- 5. a replaced disk ------------------------------------------------------------------------------------------


@full_only
def test_a_replaced_disk_is_named_and_refilled(load: Load, capsys: pytest.CaptureFixture[str]) -> None:
    """Broker 3's log dir emptied as a new disk would be, with a probe topic whose only replica was on it. Kafka 4.3
    (min.insync.replicas 2) has been seen both to keep the partition offline and to make the empty replica its
    leader: the run must name it either way."""
    name = group("kafka_broker")[2]
    host = node(name)
    address = inter_broker_address(group("kafka_broker")[0])
    host.run_expect(
        [0],
        f"kafka-topics --bootstrap-server {address} --create --topic refill-probe --replica-assignment 3"
        " --config min.insync.replicas=2",
    )
    host.run_expect([0], f"seq 1 20 | kafka-console-producer --bootstrap-server {address} --topic refill-probe")
    host.run_expect([0], "systemctl stop kafka@3 && find /var/lib/kafka/data/3 -mindepth 1 -delete")
    first = run_playbook("kafka.yml", timeout=3600)
    said = one_line(first.stdout)
    if first.returncode != 0:
        assert re.search(
            r"node 3 came back with an empty log dir, and [0-9]+ partition\(s\) had their only replica on it: "
            r"[^.]*refill-probe-0",
            said,
        ), said[-4000:]
        assert "--election-type UNCLEAN" in said
        # Brought back empty, on purpose.
        elected = host.check_output(
            f"kafka-leader-election --bootstrap-server {address} --election-type UNCLEAN --all-topic-partitions"
        )
        assert "refill-probe-0" in elected
        said = one_line(ansible("kafka.yml"))
        assert f"refilled {name} (node 3," in said
    else:
        assert re.search(
            rf"refilled {name} \(node 3, .* had no other copy, so their data went with the old disk [^:]*: [^\"]*"
            r"refill-probe-0",
            said,
        ), said[-4000:]
    host.run_expect([0], f"kafka-topics --bootstrap-server {address} --delete --topic refill-probe")
    SEEN["load_stopped"] = True
    account(load, capsys, "broker disk replaced and refilled", stop=True)
