"""The job's start and stop around its queries: where each resumes, and a stop that waits for the running
batch to commit (the unit's ExecStop asks for it through the stop file)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kafkalab_spark import job
from kafkalab_spark.progress import StatusFile
from test_progress import write_batch


def test_a_query_resumes_after_its_last_commit_and_says_which_batch_runs_again(tmp_path: Path) -> None:
    assert job.resume_point("records", str(tmp_path / "none"), "earliest") == {
        "checkpoint": None,
        "starting_offsets": "earliest",
    }
    write_batch(tmp_path, 0, {"events": {"0": 10}}, committed=True)
    assert job.resume_point("records", str(tmp_path), "earliest")["checkpoint"]["rerun_batch"] is None
    write_batch(tmp_path, 1, {"events": {"0": 20}}, committed=False)
    point = job.resume_point("records", str(tmp_path), "earliest")["checkpoint"]
    assert (point["batch_id"], point["offsets"], point["rerun_batch"]) == (0, {"events": {"0": 10}}, 1)


class FakeQuery:
    """A streaming query whose running trigger ends after `busy_polls` looks at its status."""

    def __init__(self, busy_polls: int, last_batch: int = 7) -> None:
        self.name = "records"
        self.id = "id-1"
        self.isActive = True
        self.lastProgress: dict[str, Any] = {"batchId": last_batch}
        self._busy = busy_polls
        self.stopped_while_busy: bool | None = None

    @property
    def status(self) -> dict[str, Any]:
        busy = self._busy > 0
        self._busy -= 1
        return {"isTriggerActive": busy}

    def stop(self) -> None:
        self.stopped_while_busy = self._busy > 0
        self.isActive = False


@pytest.mark.parametrize(
    ("busy_polls", "wait_s", "between_batches"),
    [(3, 5.0, True), (10_000, 0.05, False)],
    ids=["a-stop-waits-for-the-running-batch-to-commit", "a-batch-that-outlasts-the-wait-is-cut-off-and-said-so"],
)
def test_a_stop_lets_the_running_batch_commit_within_the_wait(
    busy_polls: int, wait_s: float, between_batches: bool, tmp_path: Path
) -> None:
    status = StatusFile(tmp_path / "status.json", {})
    query = FakeQuery(busy_polls=busy_polls)
    job.stop_between_batches(query, status, deadline=time.monotonic() + wait_s, poll_s=0.01)  # type: ignore[arg-type]
    assert query.stopped_while_busy is not between_batches
    stopped = json.loads((tmp_path / "status.json").read_text())["queries"]["records"]["stopped"]
    assert (stopped["after_batch"], stopped["between_batches"]) == (7, between_batches)


class FakeStreams:
    def __init__(self, terminate_after: int | None) -> None:
        self.waits = 0
        self.terminate_after = terminate_after

    def awaitAnyTermination(self, timeout: int) -> bool:
        self.waits += 1
        return self.terminate_after is not None and self.waits >= self.terminate_after


class FakeSpark:
    def __init__(self, terminate_after: int | None) -> None:
        self.streams = FakeStreams(terminate_after)


def test_the_stop_file_stops_every_query_and_the_job_exits_0(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    stop.touch()
    queries = [FakeQuery(0), FakeQuery(0)]
    status = StatusFile(tmp_path / "status.json", {})
    assert job.run_until_stopped(FakeSpark(None), queries, status, stop, 1) == 0  # type: ignore[arg-type]
    assert all(not q.isActive for q in queries)


def test_a_query_ending_by_itself_ends_the_job_with_1_for_systemd_to_restart(tmp_path: Path) -> None:
    status = StatusFile(tmp_path / "status.json", {})
    queries = [FakeQuery(0)]
    assert job.run_until_stopped(FakeSpark(3), queries, status, tmp_path / "never", 1) == 1  # type: ignore[arg-type]
    assert queries[0].isActive
