"""The load harness without a broker: its accounting, its state files, its command line, and the
background process's producer and group member driven by fake clients."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.errors import CommitFailedError, KafkaTimeoutError

from kafkalab.e2e import Record, compare, encode
from kafkalab.load import __main__ as cli
from kafkalab.load import accounting as acc
from kafkalab.load import control, runner
from kafkalab.load.files import JsonlWriter, LoadError, StateDir, append_to_list, parse_jsonl, read_jsonl

RUN_ID = "run-under-test"


def stream(n: int, partitions: int = 3) -> list[Record]:
    offsets = [0] * partitions
    out = []
    for seq in range(n):
        p = seq % partitions
        out.append(Record(p, offsets[p], f"key-{seq % 64}", seq))
        offsets[p] += 1
    return out


def report_for(acked: list[Record], consumed: list[Record], **kwargs: Any) -> acc.PhaseReport:
    times = [float(i) for i in range(len(acked))]
    return acc.PhaseReport(
        phase="upgrade",
        kind="checkpoint",
        at=100.0,
        delivery=compare(acked, consumed),
        acks=acc.phase_acks(times, 0, now=100.0),
        group_offsets=kwargs.pop("group_offsets", "kept"),
        **kwargs,
    )


# -- accounting -------------------------------------------------------------------------------------


def test_a_lost_record_is_reported_as_lost_naming_its_seq() -> None:
    acked = stream(10)
    report = report_for(acked, [r for r in acked if r.seq not in (3, 7)])
    assert report.delivery.lost == [3, 7]
    assert not report.ok
    assert report.problems() == ["2 acked records lost (first seq: 3, 7)"]
    assert "lost=2" in report.line() and report.line().endswith("FAILED")
    assert report.to_json()["lost_first"] == [3, 7]
    assert acc.first(list(range(100, 120))) == "100, 101, 102, 103, 104, ..."  # only the first few are named


def test_a_record_stored_twice_is_reported_as_duplicated() -> None:
    acked = stream(10)
    report = report_for(acked, [*acked, acked[4]])
    assert report.delivery.duplicated == [4]
    assert report.problems() == ["1 acked records stored more than once (first seq: 4)"]
    assert "duplicated=1" in report.line()


def test_a_clean_phase_prints_the_agreed_line_and_passes() -> None:
    acked = stream(6)
    report = report_for(acked, acked)
    assert report.ok and report.problems() == []
    assert report.line() == (
        "phase=upgrade acked=6 consumed=6 lost=0 duplicated=0 out_of_order=[] longest_ack_gap_s=1.0 "
        "group_offsets=kept phase_acks=6 moved=0 ok"
    )


def test_a_read_cut_short_fails_the_phase_instead_of_passing_for_lost_records() -> None:
    acked = stream(6)
    report = report_for(acked, acked, unread={2: 40, 0: -1})
    assert not report.ok
    assert "partitions 0 (? left), 2 (40 left)" in report.problems()[0]


@pytest.mark.parametrize(
    ("times", "gap"),
    [
        ([], 0.0),
        ([5.0], 0.0),
        ([1.0, 2.0, 5.5, 6.0], 3.5),
        ([6.0, 1.0, 5.5, 2.0], 3.5),  # acks of different partitions complete in any order
        ([10.0, 10.0, 10.25], 0.25),
    ],
    ids=["no-acks", "one-ack", "pause-in-the-middle", "unsorted", "same-instant"],
)
def test_longest_ack_gap_is_the_largest_step_between_ack_times(times: list[float], gap: float) -> None:
    assert acc.longest_gap(times) == pytest.approx(gap)


@pytest.mark.parametrize(
    ("times", "start", "now", "expected"),
    [
        # The 17 s pause (acks 2 -> 3) ended in the previous phase; this one counts from ack 3.
        ([1.0, 2.0, 3.0, 20.0, 21.0, 22.0], 4, 23.0, (2, 1.0, 1.0)),
        # A pause that straddles the previous checkpoint belongs to the phase it ends in.
        ([1.0, 2.0, 3.0, 20.0, 21.0], 3, 22.0, (2, 17.0, 1.0)),
        # An empty phase: no acks, no gap, and how long the acks have stopped.
        ([1.0, 2.0], 2, 32.0, (0, 0.0, 30.0)),
        ([], 0, 5.0, (0, 0.0, None)),
        ([1.0, 4.0, 5.0], 0, 5.0, (3, 3.0, 0.0)),  # the first phase starts with the run
    ],
    ids=["pause-in-previous-phase", "pause-straddles-checkpoint", "empty-phase", "no-acks-at-all", "first-phase"],
)
def test_a_phase_counts_the_acks_since_the_previous_checkpoint_and_its_longest_gap(
    times: list[float], start: int, now: float, expected: tuple[int, float, float | None]
) -> None:
    phase = acc.phase_acks(times, start, now=now)
    assert (phase.acks, phase.longest_gap_s, phase.last_ack_age_s) == expected
    assert (phase.start, phase.end) == (start, len(times))


def test_the_first_phase_starts_with_the_run() -> None:
    assert acc.previous_index([]) == 0
    assert acc.previous_index([{"phase": "a", "acked_index": 40}, {"phase": "b", "acked_index": 95}]) == 95


def test_last_commits_take_each_partitions_latest_row_up_to_the_checkpoint() -> None:
    rows = [
        {"t": 1.0, "offsets": {"0": 10, "1": 5}},
        {"t": 2.0, "offsets": {"0": 20}},
        {"t": 9.0, "offsets": {"1": 50, "2": 7}},  # after the checkpoint began: not yet owed
    ]
    assert acc.last_commits(rows, before=5.0) == {0: 20, 1: 5}
    assert acc.last_commits(rows) == {0: 20, 1: 50, 2: 7}


@pytest.mark.parametrize(
    ("current", "status", "problems"),
    [
        ({0: 20, 1: 5}, "kept", []),
        ({0: 25, 1: 9, 2: 3}, "kept", []),
        ({0: 19, 1: 5}, "went_back", ["partition 0: committed offset 19 < 20 the member committed"]),
        ({1: 5}, "vanished", ["partition 0: committed offset vanished (member committed 20)"]),
        ({}, "vanished", ["partition 0: committed offset vanished (member committed 20)", "partition 1: "]),
        ({0: 3}, "went_back+vanished", ["partition 0: committed offset 3 < 20", "partition 1: committed offset van"]),
    ],
    ids=["equal", "ahead", "went-back", "one-vanished", "group-gone", "both"],
)
def test_committed_offsets_must_not_go_back_or_vanish(
    current: dict[int, int], status: str, problems: list[str]
) -> None:
    recorded = {0: 20, 1: 5}
    found = acc.offset_regressions(recorded, current)
    assert acc.group_offsets_status(recorded, found) == status
    described = [p.describe() for p in found]
    assert len(described) == len(problems)
    assert all(d.startswith(want) for d, want in zip(described, problems, strict=True))
    report = report_for(stream(3), stream(3), group_offsets=status, offset_problems=found)
    assert report.ok == (not problems)


def test_no_commit_recorded_yet_is_nothing_to_check() -> None:
    assert acc.group_offsets_status({}, acc.offset_regressions({}, {})) == "none_recorded"


def test_the_group_must_consume_every_acked_record_and_its_redeliveries_are_counted() -> None:
    acked = stream(10)
    consumed = [r for r in acked if r.seq != 6] + [acked[1], acked[1], acked[2]]
    coverage = acc.group_coverage(acked, consumed)
    assert (coverage.missing, coverage.duplicates, coverage.consumed) == ([6], 3, 12)
    report = report_for(acked, acked, failed_sends=[], group=coverage)
    assert report.problems() == ["the group member never consumed 1 acked records (first seq: 6)"]
    assert "group_missing=1 group_duplicates=3" in report.line()


def test_failed_sends_fail_the_stop() -> None:
    report = report_for(stream(3), stream(3), failed_sends=[11, 12], group=acc.group_coverage(stream(3), stream(3)))
    assert report.problems() == ["2 sends failed (first seq: 11, 12)"]
    assert " failed=2 " in report.line()


def test_the_groups_final_commit_must_pass_every_acked_record() -> None:
    acked = stream(9)  # offsets 0..2 on partitions 0, 1, 2
    assert acc.committed_short_of_acked(acked, {0: 3, 1: 3, 2: 3}) == []
    assert acc.committed_short_of_acked(acked, {0: 3, 1: 2}) == [
        "partition 1: committed 2, acked records up to offset 2",
        "partition 2: committed nothing, acked records up to offset 2",
    ]


# -- state files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "seqs", "skipped"),
    [
        (b'{"seq":1,"t":1.0}\n{"seq":2,"t":2.0}\n{"seq":3,"t', [1, 2], 1),  # the writer was killed mid-line
        # Complete but unterminated: kept, so the row indexes phases use stay stable on the next read.
        (b'{"seq":1}\n{"seq":2}', [1, 2], 0),
        (b'{"seq":1}\n\x00\xff garbage\n[1, 2]\n\n{"seq":2}\n', [1, 2], 2),
    ],
    ids=["torn-last-line", "unterminated-complete-line", "garbled-middle-lines"],
)
def test_a_jsonl_file_left_by_a_killed_writer_is_read_without_failing(
    data: bytes, seqs: list[int], skipped: int
) -> None:
    parsed = parse_jsonl(data)
    assert ([r["seq"] for r in parsed.rows], parsed.skipped) == (seqs, skipped)


def test_a_file_not_written_yet_reads_as_empty(tmp_path: Path) -> None:
    assert read_jsonl(tmp_path / "acked.jsonl").rows == []


def test_the_writer_stamps_each_line_and_a_flush_makes_it_readable(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path / "acked.jsonl")
    before = time.time()
    writer.write({"seq": 1})
    writer.write({"seq": 2})
    writer.flush()
    rows = read_jsonl(tmp_path / "acked.jsonl").rows
    writer.close()
    assert [r["seq"] for r in rows] == [1, 2]
    assert before - 0.001 <= rows[0]["t"] <= rows[1]["t"] <= time.time() + 0.001
    assert writer.count == 2


def test_the_report_file_is_created_then_appended_to_as_one_json_list(tmp_path: Path) -> None:
    report = tmp_path / "reports" / "load.json"
    append_to_list(report, {"phase": "restart"})
    append_to_list(report, {"phase": "upgrade"})
    assert [p["phase"] for p in json.loads(report.read_text())] == ["restart", "upgrade"]


def test_a_report_file_that_holds_no_list_is_refused_with_a_message(tmp_path: Path) -> None:
    report = tmp_path / "load.json"
    report.write_text('{"phase": "x"}')
    with pytest.raises(LoadError, match="holds no JSON list"):
        append_to_list(report, {"phase": "y"})


# -- checkpoint and stop over a state directory (the cluster faked) --------------------------------


def make_state(tmp_path: Path, acked: list[Record], times: list[float] | None = None) -> StateDir:
    state = StateDir(tmp_path / "state")
    state.path.mkdir()
    config = {"bootstrap": "b:9092", "topic": "load", "group": "g", "run_id": RUN_ID, "rate": 200, "started_at": 0}
    state.config.write_text(json.dumps(config))
    append_rows(state.acked, acked, times or [float(i) for i in range(len(acked))])
    return state


def append_rows(path: Path, records: list[Record], times: list[float]) -> None:
    with path.open("a") as f:
        for r, t in zip(records, times, strict=True):
            f.write(json.dumps({"partition": r.partition, "offset": r.offset, "key": r.key, "seq": r.seq, "t": t}))
            f.write("\n")


def fake_cluster(
    monkeypatch: pytest.MonkeyPatch, consumed: list[Record], committed: dict[int, int] | None = None
) -> None:
    monkeypatch.setattr(control, "read_run", lambda *a, **k: (consumed, {}))
    monkeypatch.setattr(control, "committed_now", lambda *a: committed or {})
    monkeypatch.setattr(control, "alive", lambda pid: True)


def test_checkpoints_account_each_phase_since_the_previous_and_append_to_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    acked = stream(6)
    state = make_state(tmp_path, acked[:4], [0.0, 1.0, 2.0, 3.0])
    state.commits.write_text('{"t": 0.5, "offsets": {"0": 1}}\n')
    fake_cluster(monkeypatch, acked[:4], committed={0: 2})
    report = tmp_path / "report.json"
    assert control.checkpoint(state.path, "restart", report, 10) == 0
    # Two more acks, the second after an 8 s pause; the cluster lost the group's commit on partition 0.
    append_rows(state.acked, acked[4:], [4.0, 12.0])
    fake_cluster(monkeypatch, acked, committed={})
    assert control.checkpoint(state.path, "upgrade", report, 10) == 1
    out = capsys.readouterr()
    first, second = out.out.splitlines()
    assert first.startswith("phase=restart acked=4 consumed=4 lost=0") and "group_offsets=kept phase_acks=4" in first
    assert "longest_ack_gap_s=8.0 group_offsets=vanished phase_acks=2" in second
    assert "committed offset vanished" in out.err
    phases = json.loads(report.read_text())
    assert [(p["phase"], p["phase_ack_range"], p["ok"]) for p in phases] == [
        ("restart", [0, 4], True),
        ("upgrade", [4, 6], False),
    ]


ANSIBLE_LOG = """\
2026-11-24 07:40:01,123 p=811 u=root n=ansible | TASK [kafka : Say how long the node took to come back: kafka1] ***
2026-11-24 07:40:01,200 p=811 u=root n=ansible | ok: [kafka1] => {
    "msg": "restarted kafka1: ports open after 4.2 s, back in the cluster (registered, unfenced, ...) 11.5 s later"
}
2026-11-24 07:41:09,001 p=811 u=root n=ansible | ok: [kafka2] => {
    "msg": "restarted kafka2: ports open after 3.9 s, back in the
 cluster (registered, unfenced, replicas in the ISR) 9.0 s later"
}
"""


def test_a_phase_reports_each_restart_its_playbook_logged_and_its_wall_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    acked = stream(4)
    state = make_state(tmp_path, acked, [0.0, 1.0, 2.0, 3.0])
    fake_cluster(monkeypatch, acked)
    log = tmp_path / "roll.log"
    # What the log held when the load started (an earlier run's restart) is not this phase's.
    before = 'ok: [kafka9] => {"msg": "restarted kafka9: ports open after 1.0 s, back in the cluster 1.0 s later"}\n'
    log.write_text(before + ANSIBLE_LOG)
    config = json.loads(state.config.read_text())
    state.config.write_text(json.dumps({**config, "log_read_to": {str(log): len(before)}}))
    report = tmp_path / "report.json"
    assert control.checkpoint(state.path, "roll", report, 10, [log, tmp_path / "absent.log"]) == 0
    out = capsys.readouterr()
    assert " restarts=2 isr_recovery_max_s=11.5 ok" in out.out
    assert f"no playbook log at {tmp_path / 'absent.log'}" in out.err
    (phase,) = json.loads(report.read_text())
    assert phase["restarts"] == [
        {"host": "kafka1", "ports_open_s": 4.2, "isr_recovery_s": 11.5},
        {"host": "kafka2", "ports_open_s": 3.9, "isr_recovery_s": 9.0},
    ]
    assert phase["wall_s"] > 0  # since the load started (config started_at 0)
    # The next phase reads only what the log gained since.
    with log.open("a") as f:
        f.write(
            'ok: [kafka3] => {"msg": "restarted kafka3: ports open after 2.0 s, back in the cluster 7.5 s later"}\n'
        )
    assert control.checkpoint(state.path, "next", report, 10, [log]) == 0
    assert json.loads(report.read_text())[-1]["restarts"] == [
        {"host": "kafka3", "ports_open_s": 2.0, "isr_recovery_s": 7.5}
    ]


def test_a_checkpoint_fails_when_the_load_process_died(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    acked = stream(3)
    state = make_state(tmp_path, acked)
    fake_cluster(monkeypatch, acked)
    monkeypatch.setattr(control, "alive", lambda pid: False)
    assert control.checkpoint(state.path, "restart", None, 10) == 1


@pytest.mark.parametrize(("lose", "code"), [((), 0), ((5, 9), 1)], ids=["clean", "two-lost"])
def test_stop_accounts_the_whole_run_and_names_what_was_lost(
    lose: tuple[int, ...],
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    acked = stream(12)
    state = make_state(tmp_path, acked)
    append_rows(state.group, acked, [1.0] * len(acked))
    state.commits.write_text('{"t": 1, "offsets": {"0": 4, "1": 4, "2": 4}}\n')
    fake_cluster(monkeypatch, [r for r in acked if r.seq not in lose], committed={0: 4, 1: 4, 2: 4})
    monkeypatch.setattr(control, "_stop_process", lambda state, pid: [])
    assert control.stop(state.path, "final", None, 10) == code
    out = capsys.readouterr()
    assert f"lost={len(lose)}" in out.out and "failed=0 group_consumed=12 group_missing=0 group_duplicates=0" in out.out
    assert ("2 acked records lost (first seq: 5, 9)" in out.err) == bool(lose)


# -- the command line -------------------------------------------------------------------------------


def test_a_missing_state_directory_is_one_line_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["checkpoint", "--state", str(tmp_path / "nope"), "--phase", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "does not exist: start a load first" in err


def test_start_refuses_a_state_directory_that_already_holds_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = make_state(tmp_path, [])
    assert cli.main(["start", "--bootstrap", "b:9092", "--topic", "t", "--state", str(state.path)]) == 1
    assert "already holds a load run" in capsys.readouterr().err


class FakeAdmin:
    def __init__(self, rf: int | None = None, fail: bool = False) -> None:
        self.rf, self.fail = rf, fail
        self.created: dict[str, Any] = {}

    def list_topics(self) -> list[str]:
        if self.fail:
            raise KafkaTimeoutError("Unable to bootstrap from b:9092")
        return ["t"] if self.rf else []

    def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
        return [{"partitions": [{"replica_nodes": list(range(self.rf or 0))}] * 3}]

    def create_topics(self, topics: dict[str, Any]) -> None:
        self.created.update(topics)

    def wait_for_topics(self, topics: list[str], timeout_ms: int) -> None: ...

    def describe_configs(self, resources: list[Any]) -> dict[str, Any]:
        return {"topic": {"t": {"min.insync.replicas": {"value": "2"}}}}

    def close(self) -> None: ...


def start_opts(tmp_path: Path) -> control.StartOptions:
    return control.StartOptions("b:9092", "t", tmp_path / "s", 200.0, 3, 3, 2, None)


def test_a_topic_with_another_replication_factor_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "_admin", lambda bootstrap: FakeAdmin(rf=1))
    with pytest.raises(LoadError, match="exists with replication factor 1, not 3: pass --replication 1"):
        control.ensure_topic(start_opts(tmp_path))


def test_a_missing_topic_is_created_with_the_asked_replication_and_min_insync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = FakeAdmin()
    monkeypatch.setattr(control, "_admin", lambda bootstrap: admin)
    assert "created" in control.ensure_topic(start_opts(tmp_path))
    assert admin.created == {
        "t": {"num_partitions": 3, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}}
    }


def test_an_unreachable_cluster_is_a_message_naming_the_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(control, "_admin", lambda bootstrap: FakeAdmin(fail=True))
    assert cli.main(["start", "--bootstrap", "b:9092", "--topic", "t", "--state", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "the cluster at b:9092 did not answer" in err and "Traceback" not in err


# -- the background process's parts, on fake clients -----------------------------------------------


class FakeFuture:
    def __init__(self, outcome: str, md: Any = None) -> None:
        self.outcome, self.md = outcome, md

    def add_callback(self, fn: Callable[[Any], None]) -> FakeFuture:
        if self.outcome == "ack":
            fn(self.md)
        return self

    def add_errback(self, fn: Callable[[Exception], None]) -> FakeFuture:
        if self.outcome == "fail":
            fn(RuntimeError("NotEnoughReplicas"))
        return self


class FakeProducer:
    """Acks seq % 3 == 0, fails seq % 3 == 1, never answers seq % 3 == 2; the very first send raises."""

    def __init__(self, **config: Any) -> None:
        self.calls, self.offset = 0, 0

    def send(self, topic: str, key: bytes, value: bytes) -> FakeFuture:
        self.calls += 1
        if self.calls == 1:
            raise KafkaTimeoutError("Failed to update metadata after 60.0 secs.")
        seq = json.loads(value)["seq"]
        if seq % 3 == 0:
            self.offset += 1
            return FakeFuture("ack", SimpleNamespace(partition=0, offset=self.offset - 1))
        return FakeFuture("fail" if seq % 3 == 1 else "pending")

    def flush(self, timeout: float) -> None: ...

    def close(self, timeout: float) -> None: ...


def test_every_send_ends_acked_or_failed_and_one_that_never_answers_counts_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "KafkaProducer", FakeProducer)
    acked, failed = JsonlWriter(tmp_path / "acked.jsonl"), JsonlWriter(tmp_path / "failed.jsonl")
    producer = runner.StreamProducer({"topic": "t", "run_id": RUN_ID, "rate": 500, "bootstrap": "b"}, acked, failed)
    producer.start()
    deadline = time.monotonic() + 10
    while producer.sent < 12 and time.monotonic() < deadline:
        time.sleep(0.01)
    unresolved = producer.stop(timeout_s=0.2)
    acked.close()
    failed.close()
    acked_seqs = [r["seq"] for r in read_jsonl(tmp_path / "acked.jsonl").rows]
    failed_rows = read_jsonl(tmp_path / "failed.jsonl").rows
    assert producer.sent >= 12
    # The send that raised was never queued: the same seq went again, so the stream has no hole.
    assert sorted(acked_seqs + [r["seq"] for r in failed_rows]) == list(range(producer.sent))
    assert all(s % 3 == 0 for s in acked_seqs)
    assert unresolved == len([s for s in range(producer.sent) if s % 3 == 2])
    assert {r["seq"] % 3 for r in failed_rows if "neither acked nor failed" in r["error"]} == {2}


class FakeConsumer:
    """Two partitions of this run's records plus one of another run; the first commit fails (rebalance)."""

    def __init__(self, **config: Any) -> None:
        self.logs = {
            0: [encode(RUN_ID, 0), encode(RUN_ID, 2), encode("another-run", 4)],
            1: [encode(RUN_ID, 1), encode(RUN_ID, 3)],
        }
        self.position_of = {0: 0, 1: 0}
        self.commit_calls = 0
        self.polled = threading.Event()

    def subscribe(self, topics: list[str]) -> None:
        self.topic = topics[0]

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(self.topic, p) for p in self.logs}

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        out = {}
        for p, log in self.logs.items():
            batch = [
                SimpleNamespace(offset=o, value=v, key=b"k") for o, v in enumerate(log) if o >= self.position_of[p]
            ]
            if batch:
                out[TopicPartition(self.topic, p)] = batch
                self.position_of[p] = len(log)
        self.polled.set()
        if not out:
            time.sleep(0.01)
        return out

    def commit(self, offsets: dict[TopicPartition, Any], timeout_ms: int) -> None:
        self.commit_calls += 1
        if self.commit_calls == 1:
            raise CommitFailedError("the group rebalanced")

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(self.logs)

    def end_offsets(self, partitions: list[TopicPartition], timeout_ms: int) -> dict[TopicPartition, int]:
        return {tp: len(self.logs[tp.partition]) for tp in partitions}

    def position(self, tp: TopicPartition, timeout_ms: int) -> int:
        return self.position_of[tp.partition]

    def close(self, autocommit: bool) -> None: ...


def test_the_group_member_records_only_commits_the_broker_accepted_and_drains_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeConsumer()
    monkeypatch.setattr(runner, "KafkaConsumer", lambda **config: fake)
    consumed, commits = JsonlWriter(tmp_path / "group.jsonl"), JsonlWriter(tmp_path / "commits.jsonl")
    member = runner.GroupMember({"topic": "t", "run_id": RUN_ID, "bootstrap": "b", "group": "g"}, consumed, commits)
    member.start()
    assert fake.polled.wait(5)
    assert member.drain(timeout_s=10)
    consumed.close()
    commits.close()
    assert sorted(r["seq"] for r in read_jsonl(tmp_path / "group.jsonl").rows) == [0, 1, 2, 3]
    recorded = read_jsonl(tmp_path / "commits.jsonl").rows
    assert fake.commit_calls == 2
    assert [r["offsets"] for r in recorded] == [{"0": 3, "1": 2}]
    assert acc.last_commits(recorded) == {0: 3, 1: 2}


class AckingProducer(FakeProducer):
    def send(self, topic: str, key: bytes, value: bytes) -> FakeFuture:
        self.offset += 1
        return FakeFuture("ack", SimpleNamespace(partition=0, offset=self.offset - 1))


def run_until_sigterm(state: StateDir, after_s: float) -> tuple[int, dict[str, Any]]:
    """The background process's body, here, until a SIGTERM `after_s` seconds in; its exit code and done.json."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGTERM)).start()
    try:
        code = runner.run(state)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code, json.loads(state.done.read_text())


def test_the_background_process_reports_ready_and_on_sigterm_shuts_down_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = make_state(tmp_path, [])
    state.acked.unlink()
    monkeypatch.setattr(runner, "KafkaProducer", AckingProducer)
    monkeypatch.setattr(runner, "KafkaConsumer", FakeConsumer)
    code, done = run_until_sigterm(state, after_s=1.5)
    assert code == 0, done
    assert state.ready.exists()
    assert done["clean"] and done["drained"] and done["final_commit"] and done["unresolved"] == 0
    assert len(read_jsonl(state.acked).rows) == done["acked"] == done["sent"] > 0
    assert acc.last_commits(read_jsonl(state.commits).rows) == {0: 3, 1: 2}


def test_a_member_is_stalled_only_on_partitions_acked_long_after_its_last_read_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "STALL_S", 100.0)
    member = runner.GroupMember({"topic": "t", "run_id": RUN_ID, "bootstrap": "b", "group": "g"}, None, None)  # type: ignore[arg-type]
    start = member.started_at
    member.read_at = {0: start + 50, 1: start + 200}
    acked = {0: start + 151, 1: start + 250, 2: start + 99}
    # Partition 0: acked 101 s after its last read, unread for 101 s. Partition 1: read recently. Partition 2:
    # never read, but nothing acked there more than STALL_S after the member started.
    assert member.stalled(acked, now=start + 151) == [0]
    assert member.stalled(acked, now=start + 149) == []  # acked late, but not unread for STALL_S yet
    assert member.stalled({0: start + 140}, now=start + 400) == []  # nothing acked there since: the producer paused


class LiveTopicConsumer(FakeConsumer):
    """FakeConsumer whose partition 0 grows by another run's record at each poll, as a topic under load does."""

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        self.logs[0].append(encode("another-run", 0))
        time.sleep(0.01)
        return super().poll(timeout_ms, max_records)


class HungConsumer(FakeConsumer):
    """Never returns from poll, as a client stuck after a rolling restart; it cannot commit or leave either."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.release = threading.Event()

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        self.release.wait()
        return {}


def test_a_stalled_group_member_is_replaced_by_a_new_one_of_the_group_and_the_restart_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    state = make_state(tmp_path, [])
    state.acked.unlink()
    monkeypatch.setattr(runner, "STALL_S", 0.4)
    monkeypatch.setattr(runner, "KafkaProducer", AckingProducer)
    made: list[FakeConsumer] = []

    def consumer(**config: Any) -> FakeConsumer:
        made.append((HungConsumer if not made else LiveTopicConsumer)(**config))
        return made[-1]

    monkeypatch.setattr(runner, "KafkaConsumer", consumer)
    try:
        code, done = run_until_sigterm(state, after_s=2.5)
    finally:
        for c in made:
            if isinstance(c, HungConsumer):
                c.release.set()
    assert code == 0, done
    assert [type(c) for c in made] == [HungConsumer, LiveTopicConsumer]
    assert done["group_member_restarts"] == 1 and done["drained"] and done["final_commit"]
    # The new member read the run's records and committed them; the hung one recorded nothing.
    assert sorted(r["seq"] for r in read_jsonl(state.group).rows) == [0, 1, 2, 3]
    assert acc.last_commits(read_jsonl(state.commits).rows)[1] == 2
    assert made[0].commit_calls == 0
    # The log says which partitions and shows where the stalled member's thread was stuck.
    stalled = [r.getMessage() for r in caplog.records if "group member stalled" in r.getMessage()]
    assert len(stalled) == 1 and "partitions [0]" in stalled[0]
    assert "in poll" in stalled[0] and "release.wait()" in stalled[0]


def test_stop_reports_the_group_member_restarts_and_a_failure_shows_the_load_logs_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    acked = stream(6)
    state = make_state(tmp_path, acked)
    fake_cluster(monkeypatch, acked[:5])
    monkeypatch.setattr(control, "alive", lambda pid: False)
    state.done.write_text(json.dumps({"drained": True, "final_commit": True, "group_member_restarts": 2}))
    refused = "ERROR kafka-io-kafkalab-load-group-member: Connection failed: KafkaConnectionError: 111 ECONNREFUSED"
    state.log.write_text(
        "2026-11-28 00:00:01,000 INFO load-producer: first acks arrived: producing\n"
        "2026-11-28 00:03:00,000 ERROR MainThread: group member stalled: nothing read of partitions [0, 1]\n"
        '  File "runner.py", line 1, in poll\n'
        + "".join(f"2026-11-28 00:03:00,{i:03d} {refused}\n" for i in range(30))
        + "2026-11-28 00:03:01,000 WARNING load-group-member-2: group commit failed (CommitFailedError())\n"
    )
    assert control.stop(state.path, "the end", None, timeout_s=5) == 1
    out, err = capsys.readouterr()
    assert "group_member_restarts=2" in out
    assert "FAILED: 1 acked records lost (first seq: 5)" in err
    # The load's own lines, and only the last few of its clients' refused connections, in the log's order.
    shown = [line.split()[3] for line in err.split("warnings and errors", 1)[1].splitlines()[1:]]
    assert shown == ["MainThread:"] + ["kafka-io-kafkalab-load-group-member:"] * 8 + ["load-group-member-2:"]


FAKE_RUNNER = """#!{python}
# Stands in for `python -m kafkalab.load run --state DIR`: ready at once, done.json on SIGTERM.
import json, pathlib, signal, sys, time
state = pathlib.Path(sys.argv[-1])
def term(*_):
    (state / "done.json").write_text(json.dumps({{"drained": True, "final_commit": True, "clean": True}}))
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
{ready}
time.sleep(60)
"""


def fake_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready: bool) -> None:
    script = tmp_path / "fake-runner"
    script.write_text(
        FAKE_RUNNER.format(
            python=sys.executable,
            ready='(state / "ready.json").write_text("{}")' if ready else 'print("cannot bootstrap"); sys.exit(3)',
        )
    )
    script.chmod(0o755)
    monkeypatch.setattr(control, "ensure_topic", lambda opts: "topic t: exists")
    monkeypatch.setattr(control.sys, "executable", str(script))


def test_start_detaches_the_load_then_stop_shuts_it_down_and_accounts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_runner(tmp_path, monkeypatch, ready=True)
    state = StateDir(tmp_path / "s")
    assert cli.main(["start", "--bootstrap", "b:9092", "--topic", "t", "--state", str(state.path)]) == 0
    pid = control.read_pid(state)
    try:
        assert control.alive(pid)
        assert "load running: pid" in capsys.readouterr().out
        monkeypatch.setattr(control, "read_run", lambda *a, **k: ([], {}))
        monkeypatch.setattr(control, "committed_now", lambda *a: {})
        assert cli.main(["stop", "--state", str(state.path), "--phase", "final"]) == 0
        assert not control.alive(pid)
        assert "phase=final acked=0" in capsys.readouterr().out
    finally:
        if pid is not None and control.alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_load_that_dies_at_start_fails_start_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_runner(tmp_path, monkeypatch, ready=False)
    assert cli.main(["start", "--bootstrap", "b:9092", "--topic", "t", "--state", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "cannot bootstrap" in err
    assert "the load process exited with 3" in err and "Traceback" not in err


def test_status_says_whether_the_load_runs_and_its_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = make_state(tmp_path, stream(5))
    state.failed.write_text('{"seq": 9, "error": "x", "t": 1}\n')
    state.done.write_text('{"clean": true, "drained": true, "t": 5}')
    assert cli.main(["status", "--state", str(state.path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("load not running: topic load, group g")
    assert "acked=5 failed=1 group_consumed=0 commits=0" in out
    assert "shut down: clean=True drained=True" in out


def test_a_run_starts_reading_each_log_where_it_ends_now(tmp_path: Path) -> None:
    from kafkalab.load.restarts import log_ends

    log = tmp_path / "run.log"
    log.write_text("restarted k1: ports open after 1.0 s, back in the cluster 1.0 s later\n")
    assert log_ends([log, tmp_path / "absent.log"]) == {str(log): log.stat().st_size}
