"""The Spark pipeline while the cluster and the job change under it, with events arriving all along: a worker
host is lost (its executors start again on the other workers), the master restarts (the next run restarts the
drivers it forgot), a new build of the job is deployed (stopped between batches, resumed from its checkpoints),
a change the checkpoints cannot serve is refused before any host changes, and, when asked, deployed on new
checkpoints with the old ones kept aside. After each, every acknowledged event is in the Parquet archive exactly
once and reached the low-latency topic at least once (exactly once to a consumer that keys on the source
position).

These apply changes (marked changes_cluster: molecule and the lab only) and run after test_spark_pipeline.py
(file order). Under molecule the scenario is destroyed afterwards; anywhere else the module puts the job back
as the inventory describes it. Numbers (recovery, pauses, run times) go to .cache/spark-under-change.json.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inventory_hosts import ROOT, group, node, run_playbook, runner

from kafkalab.artifacts.spark import build_wheels, read_requirements, wheel_matches
from kafkalab.e2e import Record

from .conftest import REALTIME_SERVICE, SERVICE, SparkNode
from .pipeline import (
    PacedProducer,
    archive_report,
    committed,
    master_state,
    read_forwarded,
    realtime_start,
    wait_for,
    worker_executors,
)

pytestmark = pytest.mark.changes_cluster

RESULTS = ROOT / ".cache" / "spark-under-change.json"
N_EVENTS = 9_000  # per disturbance, in 9 chunks about 4 s apart: the disturbance happens while they arrive
CHUNKS = 9
# Only what the consumer role does: the job's build and settings (preflight always runs).
JOB_ONLY = ["--tags", "spark_consumer"]


def record(name: str, values: dict[str, Any]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results[name] = values
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(name, json.dumps(values, sort_keys=True))


class CommitWatch:
    """Samples the archive's status file once a second from a thread: the longest time between two committed
    batches (a pause of the archive) while the test disturbs it."""

    def __init__(self, spark_node: SparkNode) -> None:
        self.spark_node = spark_node
        self.commits: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                batch = self.spark_node.status()["queries"]["records"]["last_batch"]["batch_id"]
            except Exception:  # restarting, or the file is being replaced: sample again
                continue
            if not self.commits or self.commits[-1][1] != batch:
                self.commits.append((time.time(), batch))

    def stop(self) -> float:
        """The longest pause between two commits seen, in seconds."""
        self._stop.set()
        self._thread.join(timeout=10)
        times = [t for t, _ in self.commits]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def settle(spark_node: SparkNode, run_id: str, acked: list[Record], start: Any) -> dict[str, Any]:
    """Wait until the archive committed the run, then account for it in both outputs."""
    wait_for(f"the archive to commit all {len(acked)} events", lambda: committed(spark_node, "records", acked), 600, 5)
    delivery, report = archive_report(spark_node, run_id, acked)
    assert delivery.ok and not delivery.unacked_extra, delivery.summary()
    assert report["rows"] == report["distinct_positions"], "a position twice in the archive"
    wanted = {(r.partition, r.offset) for r in acked}
    found = read_forwarded(spark_node, start, wanted, timeout=300)
    assert sorted(wanted - set(found.good)) == [], "acknowledged events the low-latency path never forwarded"
    return {
        "acked": len(acked),
        "archived_once": delivery.consumed,
        "realtime_forwarded": len(found.good),
        "realtime_duplicates": sum(n - 1 for n in found.good.values()),
        "realtime_max_latency_ms": max(found.latencies_ms, default=None),
    }


def worker_address(name: str) -> str:
    """The address a worker registers with at the master (its unit's --host)."""
    unit = node(name).file("/etc/systemd/system/spark-worker.service").content_string
    match = re.search(r"--host (\S+)", unit)
    assert match, unit
    return match.group(1)


def executors_per_app(spark_node: SparkNode, workers: list[dict[str, Any]]) -> dict[str, int]:
    """How many executors of each running application (by name) the given workers run."""
    names = {a["id"]: a["name"] for a in master_state(spark_node)["activeapps"]}
    counts: dict[str, int] = {}
    for worker in workers:
        for executor in worker_executors(worker):
            if executor["appid"] in names:
                counts[names[executor["appid"]]] = counts.get(names[executor["appid"]], 0) + 1
    return counts


def test_losing_a_worker_host_starts_its_executors_on_the_others_and_loses_nothing(spark_node: SparkNode) -> None:
    """SIGKILL of a worker host's Spark processes (the worker and the executors it started), kept down: the
    master starts the lost executors again on the other workers (the job is sized to fit on them), the tasks
    run again there, and nothing acknowledged is lost or archived twice."""
    master_host = group("spark_master")[0]
    lost_name = next(h for h in group("spark_worker") if h != master_host)
    lost_address = worker_address(lost_name)
    alive = [w for w in master_state(spark_node)["workers"] if w["state"] == "ALIVE"]
    before = executors_per_app(spark_node, alive)
    assert before and all(before.values()), before
    start = realtime_start(spark_node)
    run_id = uuid.uuid4().hex
    watch = CommitWatch(spark_node)
    producer = PacedProducer(spark_node, run_id, 0, N_EVENTS, CHUNKS)
    time.sleep(8)
    node(lost_name).check_output("systemctl kill --signal=SIGKILL spark-worker; systemctl stop spark-worker")
    lost_at = time.time()
    try:

        def rescheduled() -> bool:
            state = master_state(spark_node)
            if any(w["host"] == lost_address and w["state"] == "ALIVE" for w in state["workers"]):
                return False
            survivors = [w for w in state["workers"] if w["state"] == "ALIVE" and w["host"] != lost_address]
            return executors_per_app(spark_node, survivors) == before

        wait_for("the lost executors to run again on the other workers", rescheduled, 240, 2)
        rescheduled_s = time.time() - lost_at
        acked = producer.join()
        accounted = settle(spark_node, run_id, acked, start)
    finally:
        node(lost_name).check_output("systemctl start spark-worker")
        wait_for(
            f"{lost_name}'s worker to rejoin",
            lambda: any(
                w["host"] == lost_address and w["state"] == "ALIVE" for w in master_state(spark_node)["workers"]
            ),
            180,
            3,
        )
    record(
        "worker_loss",
        {
            **accounted,
            "lost_worker": lost_name,
            "executors_per_app": before,
            "executors_running_again_after_s": round(rescheduled_s, 1),
            "longest_pause_between_archive_commits_s": round(watch.stop(), 1),
        },
    )


def test_after_a_master_restart_the_next_run_restarts_the_drivers_it_forgot_and_loses_nothing(
    spark_node: SparkNode,
) -> None:
    """A standalone master keeps no state across a restart: it comes back running no application, while each
    driver waits, with no executors, for its master to take it back. The next run of the consumer role asks the
    master which applications it runs and restarts the drivers of the others; every event acknowledged meanwhile
    is archived once and forwarded."""
    master_host = group("spark_master")[0]
    expected = sorted(a["name"] for a in master_state(spark_node)["activeapps"])
    start = realtime_start(spark_node)
    run_id = uuid.uuid4().hex
    producer = PacedProducer(spark_node, run_id, 0, N_EVENTS // 3, CHUNKS // 3, until_joined=True)
    time.sleep(4)
    node(master_host).check_output("systemctl restart spark-master")
    restarted_at = time.time()

    def answers() -> bool:
        try:
            return isinstance(master_state(spark_node)["activeapps"], list)
        except Exception:  # restarting
            return False

    wait_for("the restarted master to answer", answers, 120, 2)
    time.sleep(10)  # time for a driver to come back by itself, if it could
    forgotten = sorted(set(expected) - {a["name"] for a in master_state(spark_node)["activeapps"]})
    result = run_playbook("spark.yml", JOB_ONLY)
    assert result.returncode == 0, result.stdout[-3000:]
    flat = " ".join(result.stdout.split())
    for name in forgotten:
        assert f"does not run application {name}" in flat, result.stdout[-3000:]
    assert sorted(a["name"] for a in master_state(spark_node)["activeapps"]) == expected
    acked = producer.join()
    accounted = settle(spark_node, run_id, acked, start)
    record(
        "master_restart",
        {**accounted, "forgotten_apps": forgotten, "back_after_s": round(time.time() - restarted_at, 1)},
    )


def spark_version() -> str:
    return str(runner().get_variables(group("spark_master")[0])["spark_version"])


def build_variant(into: Path, version: str) -> Path:
    """A wheel directory like the controller's (the PySpark and py4j wheels, linked) with the job built at
    another version: what an operator deploys after changing the job."""
    source = into / "spark"
    shutil.copytree(
        ROOT / "spark", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests")
    )
    project = source / "pyproject.toml"
    project.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', project.read_text()))
    wheels = into / "wheels"
    wheels.mkdir()
    requirements = ROOT / "artifacts" / "locks" / f"pyspark-{spark_version()}.txt"
    pins = read_requirements(requirements)
    cached = ROOT / ".cache" / "artifacts" / "spark-wheels"
    for wheel in cached.iterdir():
        if any(wheel_matches(wheel.name, *pin) for pin in pins):
            os.link(wheel, wheels / wheel.name)
    build_wheels(requirements, [source], wheels, log=lambda line: None)
    return wheels


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory, spark_node: SparkNode) -> Iterator[dict[str, Any]]:
    installed = spark_node.status()["version"]
    version = f"{installed}+upgrade{uuid.uuid4().hex[:6]}"
    # Beside the controller's cache (same filesystem: the PySpark wheels are linked, not copied).
    into = Path(tmp_path_factory.mktemp("variant", numbered=True))
    if into.stat().st_dev != (ROOT / ".cache").stat().st_dev:
        into = ROOT / ".cache" / f"variant-{uuid.uuid4().hex[:6]}"
        into.mkdir(parents=True)
    yield {"version": version, "wheels": build_variant(into, version), "installed": installed}
    if not os.environ.get("MOLECULE_INVENTORY_FILE"):
        # Anywhere but molecule (destroyed next), the job goes back to the build and settings the inventory names.
        result = run_playbook("spark.yml", [*JOB_ONLY, "-e", json.dumps({"spark_consumer_new_checkpoint": True})])
        assert result.returncode == 0, result.stdout[-3000:]
    shutil.rmtree(into, ignore_errors=True)


def journal_since(spark_node: SparkNode, unit: str, since: float, pattern: str) -> int:
    out = spark_node.host.check_output(
        f"journalctl -u {unit} --since=@{int(since)} --no-pager -o cat | grep -c -F '{pattern}' || true"
    )
    return int(out or 0)


def test_a_new_build_is_deployed_between_batches_without_losing_or_repeating_an_event(
    spark_node: SparkNode, variant: dict[str, Any]
) -> None:
    start = realtime_start(spark_node)
    run_id = uuid.uuid4().hex
    watch = CommitWatch(spark_node)
    # Events arrive from before the run until after it: through the stop, the new build's start and its first
    # batches.
    producer = PacedProducer(spark_node, run_id, 0, N_EVENTS // 3, CHUNKS // 3, until_joined=True)
    time.sleep(4)
    since = time.time()
    result = run_playbook("spark.yml", [*JOB_ONLY, "-e", json.dumps({"spark_wheel_dir": str(variant["wheels"])})])
    took = time.time() - since
    acked = producer.join()
    assert result.returncode == 0, result.stdout[-3000:]
    status = spark_node.status()
    assert status["version"] == variant["version"]
    realtime = json.loads(spark_node.host.file(spark_node.config["realtime"]["status"]).content_string)
    assert realtime["version"] == variant["version"]
    # Stopped between batches: the new process resumed right after the last committed batch, none to run again.
    resumed = status["started_from"]["records"]["checkpoint"]
    assert resumed is not None and resumed["rerun_batch"] is None, status["started_from"]
    # The run spans the restart: the old build archived some of its events, the new one the rest.
    resumed_at = {int(p): o for p, o in resumed["offsets"][spark_node.topic].items()}
    after = sum(1 for r in acked if r.offset >= resumed_at.get(r.partition, 0))
    assert 0 < after < len(acked), f"{after} of {len(acked)} events came after the restart"
    assert journal_since(spark_node, SERVICE, since, "query records stopped between batches") == 1
    accounted = settle(spark_node, run_id, acked, start)
    record(
        "job_upgrade",
        {
            **accounted,
            "playbook_s": round(took, 1),
            "longest_pause_between_archive_commits_s": round(watch.stop(), 1),
            "from_version": variant["installed"],
            "to_version": variant["version"],
        },
    )


def test_a_change_the_checkpoints_cannot_serve_is_refused_before_any_host_changes(
    spark_node: SparkNode, variant: dict[str, Any]
) -> None:
    pids = {
        unit: spark_node.host.check_output(f"systemctl show {unit} -p MainPID --value")
        for unit in (SERVICE, REALTIME_SERVICE)
    }
    settings = spark_node.host.file("/etc/spark-consumer/job.toml").content_string
    result = run_playbook(
        "spark.yml",
        [
            *JOB_ONLY,
            "-e",
            json.dumps({"spark_wheel_dir": str(variant["wheels"]), "spark_consumer_window_duration": "2 minutes"}),
        ],
    )
    assert result.returncode != 0
    flat = " ".join(result.stdout.split())
    assert (
        f"{group('spark_master')[0]}: {SERVICE} cannot resume from its checkpoints" in flat
        and "spark_consumer_window_duration goes from '1 minute' to '2 minutes'" in flat
        and "Nothing was changed" in flat
        and "spark_consumer_new_checkpoint: true" in flat
    ), result.stdout[-3000:]
    assert spark_node.host.file("/etc/spark-consumer/job.toml").content_string == settings
    after = {unit: spark_node.host.check_output(f"systemctl show {unit} -p MainPID --value") for unit in pids}
    assert after == pids


def test_asked_for_new_checkpoints_the_old_ones_are_kept_aside_and_the_job_starts_afresh(
    spark_node: SparkNode, variant: dict[str, Any]
) -> None:
    data_dir = str(Path(spark_node.config["paths"]["checkpoint"]).parent)
    # Afresh from the latest offsets (the inventory's earliest would re-read the whole topic: slower, the same proof).
    extra = {
        "spark_wheel_dir": str(variant["wheels"]),
        "spark_consumer_window_duration": "2 minutes",
        "spark_consumer_new_checkpoint": True,
        "spark_consumer_starting_offsets": "latest",
    }
    result = run_playbook("spark.yml", [*JOB_ONLY, "-e", json.dumps(extra)])
    assert result.returncode == 0, result.stdout[-3000:]
    retired = spark_node.host.check_output(f"ls -d {data_dir}/retired/*-{SERVICE}").split()
    assert retired, "no retired checkpoints"
    kept = spark_node.host.check_output(f"ls {retired[-1]} {retired[-1]}/checkpoints").split()
    assert {"records", "quarantine", "metrics", "kafkalab-checkpoint.json"} <= set(kept), kept
    status = spark_node.status()
    assert status["started_from"]["records"] == {"checkpoint": None, "starting_offsets": "latest"}
    # The low-latency path's checkpoints serve the new window: it was not touched.
    assert not spark_node.host.run(f"ls -d {data_dir}/retired/*-{REALTIME_SERVICE}").succeeded
    # The new archive holds what arrived since, each record once, and nothing from before.
    run_id = uuid.uuid4().hex
    acked = PacedProducer(spark_node, run_id, 0, 900, 3).join()
    wait_for("the new archive to commit the new events", lambda: committed(spark_node, "records", acked), 600, 5)
    delivery, report = archive_report(spark_node, run_id, acked)
    assert delivery.ok and not delivery.unacked_extra, delivery.summary()
    assert report["rows"] == report["distinct_positions"] == len(acked), report
    record("new_checkpoint", {"rows_in_new_archive": report["rows"], "retired_to": retired[-1]})
