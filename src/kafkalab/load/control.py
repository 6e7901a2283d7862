"""The operator's side of the load harness: start, checkpoint, stop and status.

These talk to the cluster (the Admin API and a group-less consumer) and to the background process
(its pid and state files); the accounting itself is the pure functions in kafkalab.load.accounting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.admin import ConfigResource, KafkaAdminClient
from kafka.errors import KafkaError

from kafkalab import kafka_client
from kafkalab.e2e import compare, read_run
from kafkalab.load import accounting as acc
from kafkalab.load.files import (
    LoadError,
    StateDir,
    append_to_list,
    problem_lines,
    read_json,
    read_jsonl,
    tail,
    write_json,
)
from kafkalab.load.restarts import log_ends, restarts_in_logs

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 300.0


@contextlib.contextmanager
def cluster(bootstrap: str, doing: str) -> Iterator[None]:
    """Turn a client error into a LoadError that names the cluster and what was being done."""
    try:
        yield
    except KafkaError as exc:
        raise LoadError(
            f"{doing}: the cluster at {bootstrap} did not answer ({exc}); check the address and that the brokers are up"
        ) from exc


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(
        **kafka_client.settings(),
        bootstrap_servers=bootstrap,
        client_id="kafkalab-load-admin",
        request_timeout_ms=30_000,
    )


# -- start ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartOptions:
    bootstrap: str
    topic: str
    state: Path
    rate: float
    partitions: int
    replication: int
    min_insync: int
    group: str | None
    logs: tuple[Path, ...] = ()  # playbook logs whose restarts the phases report: read from their end now


def ensure_topic(opts: StartOptions) -> str:
    """Create the topic if missing; refuse one that exists with another replication factor."""
    with cluster(opts.bootstrap, f"creating topic {opts.topic}"):
        admin = _admin(opts.bootstrap)
        try:
            if opts.topic not in admin.list_topics():
                admin.create_topics(
                    {
                        opts.topic: {
                            "num_partitions": opts.partitions,
                            "replication_factor": opts.replication,
                            "configs": {"min.insync.replicas": str(opts.min_insync)},
                        }
                    }
                )
                admin.wait_for_topics([opts.topic], timeout_ms=60_000)
                return (
                    f"topic {opts.topic}: created ({opts.partitions} partitions, replication factor "
                    f"{opts.replication}, min.insync.replicas {opts.min_insync})"
                )
            partitions = admin.describe_topics([opts.topic])[0]["partitions"]
            rf = max(len(p["replica_nodes"]) for p in partitions)
            if rf != opts.replication:
                raise LoadError(
                    f"topic {opts.topic} exists with replication factor {rf}, not {opts.replication}: "
                    f"pass --replication {rf}, or another --topic to have one created"
                )
            configs = admin.describe_configs([ConfigResource("topic", opts.topic)])
            own = configs.get("topic", {}).get(opts.topic, {}).get("min.insync.replicas", {}).get("value")
        finally:
            admin.close()
    insync = f"min.insync.replicas {own}" if own else "the brokers' default min.insync.replicas"
    note = "" if own == str(opts.min_insync) else f" (not the {opts.min_insync} asked for: the topic is left as it is)"
    return f"topic {opts.topic}: exists ({len(partitions)} partitions, replication factor {rf}, {insync}){note}"


def start(opts: StartOptions) -> int:
    if opts.rate <= 0 or opts.partitions < 1 or not 1 <= opts.min_insync <= opts.replication:
        raise LoadError("need --rate > 0, --partitions >= 1 and 1 <= --min-insync <= --replication")
    state = StateDir(opts.state.resolve())
    if state.config.exists():
        raise LoadError(
            f"{state.path} already holds a load run: stop it (python -m kafkalab.load stop --state {state.path} "
            "--phase ...) and remove the directory, or pass another --state"
        )
    try:
        state.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LoadError(f"cannot create the state directory {state.path}: {exc.strerror}") from exc
    print(ensure_topic(opts), flush=True)
    run_id = uuid.uuid4().hex
    config = {
        "bootstrap": opts.bootstrap,
        # The client settings (kafka_client; --client-config / KAFKALAB_CLIENT_CONFIG) every later step reuses.
        "client_config": os.environ.get(kafka_client.ENV, ""),
        "topic": opts.topic,
        "group": opts.group or f"kafkalab-load-{run_id[:12]}",
        "run_id": run_id,
        "rate": opts.rate,
        "keys": 64,
        "started_at": time.time(),
        "log_read_to": log_ends(list(opts.logs)),
    }
    write_json(state.config, config)
    with state.log.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.load", "run", "--state", str(state.path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session: it outlives this command and the terminal or play
        )
    state.pid.write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not state.ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            why = f"exited with {proc.returncode}" if proc.returncode is not None else "sent no ack within 60 s"
            _terminate(proc)
            print(tail(state.log), file=sys.stderr)
            raise LoadError(f"the load process {why} (log above, in full in {state.log}); it is not running")
        time.sleep(0.2)
    print(
        f"load running: pid {proc.pid}, topic {opts.topic}, group {config['group']}, {opts.rate:g} msg/s, "
        f"state {state.path} (log: {state.log})"
    )
    return 0


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """Stop a load process that did not get going: nothing it sent is accounted, so no graceful flush."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# -- the background process -------------------------------------------------------------------------


def read_pid(state: StateDir) -> int | None:
    try:
        return int(state.pid.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def alive(pid: int | None) -> bool:
    """Whether the load process runs: not a zombie, and (where /proc tells) really our `run` command.

    The process was started by an earlier command and belongs to whoever reaps orphans; in a container
    without an init that may be nobody, so a zombie counts as gone. A pid reused by another program
    after a reboot does not count either.
    """
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return state != "Z" and b"kafkalab.load" in cmdline


def _stop_process(state: StateDir, pid: int | None) -> list[str]:
    """SIGTERM the load process and wait for it; SIGKILL after STOP_TIMEOUT_S. Returns what went wrong."""
    if not alive(pid):
        done = read_json(state.done)
        if done is None:
            return [f"the load process was not running and had not shut down cleanly (see {state.log})"]
        return _done_problems(done, state)
    assert pid is not None
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if alive(pid):
        _signal(pid, signal.SIGKILL)
        return [
            f"the load process did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM and was killed (see {state.log})"
        ]
    done = read_json(state.done)
    if done is None:
        return [f"the load process exited without writing {state.done.name} (see {state.log})"]
    return _done_problems(done, state)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:  # it exited on its own in between
        pass
    except PermissionError as exc:
        raise LoadError(f"not allowed to signal the load process {pid}: run stop as the user that started it") from exc


def _done_problems(done: dict[str, Any], state: StateDir) -> list[str]:
    out = []
    if not done.get("drained"):
        out.append(f"the group member did not read up to the end offsets before exiting (see {state.log})")
    if not done.get("final_commit"):
        out.append(f"the group member's final commit failed (see {state.log})")
    return out


# -- checkpoint and stop ----------------------------------------------------------------------------


def committed_now(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets on the topic, as the cluster holds them now."""
    admin = _admin(bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
    finally:
        admin.close()
    return {tp.partition: int(m.offset) for tp, m in offsets.items() if tp.topic == topic and m.offset >= 0}


def account(
    state: StateDir, phase: str, kind: str, timeout_s: float, problems: list[str], logs: list[Path] | None = None
) -> acc.PhaseReport:
    """Account for everything acked so far; the phase is what was acked since the previous checkpoint.

    The state files are read before the cluster is asked: every ack read is then below the end offsets
    the reader goes to, and every commit read is one the cluster must still hold.
    """
    config = read_json(state.config)
    kafka_client.use(config.get("client_config"))
    at = time.time()
    commits = read_jsonl(state.commits).rows
    acked, times = acc.acked_from_rows(read_jsonl(state.acked).rows)
    phases = read_json(state.phases) or []
    final = kind == "stop"
    bootstrap, topic, group = config["bootstrap"], config["topic"], config["group"]
    recorded = acc.last_commits(commits, before=None if final else at)
    offset_problems: list[acc.OffsetProblem] = []
    try:
        current = committed_now(bootstrap, group, topic)
        offset_problems = acc.offset_regressions(recorded, current)
        group_offsets = acc.group_offsets_status(recorded, offset_problems)
    except KafkaError as exc:
        current = {}
        group_offsets = "unreadable"
        problems = [*problems, f"could not read group {group}'s committed offsets: {exc}"]
    with cluster(bootstrap, f"reading topic {topic}"):
        consumed, unread = read_run(bootstrap, topic, config["run_id"], timeout_s=timeout_s)
    report = acc.PhaseReport(
        phase=phase,
        kind=kind,
        at=at,
        delivery=compare(acked, consumed),
        acks=acc.phase_acks(times, acc.previous_index(phases), now=at),
        group_offsets=group_offsets,
        offset_problems=offset_problems,
        unread=unread,
        process_problems=problems,
        wall_s=at - float(phases[-1]["at"] if phases else config["started_at"]),
    )
    read_to = (phases[-1] if phases else config).get("log_read_to", {})
    report.restarts, unlogged, read_to = restarts_in_logs(logs or [], read_to)
    for path in unlogged:
        print(f"  note: no playbook log at {path}: its restarts are not reported", file=sys.stderr)
    if final:
        report.failed_sends = acc.seqs_from_rows(read_jsonl(state.failed).rows)
        report.group = acc.group_coverage(acked, acc.group_from_rows(read_jsonl(state.group).rows))
        if group_offsets != "unreadable":
            report.committed_short = acc.committed_short_of_acked(acked, current)
    mark = {"phase": phase, "kind": kind, "at": at, "acked_index": report.acks.end, "log_read_to": read_to}
    write_json(state.phases, [*phases, mark])
    return report


def _publish(report: acc.PhaseReport, report_file: Path | None, state: StateDir | None = None) -> int:
    print(report.line(), flush=True)
    for problem in report.problems():
        print(f"  FAILED: {problem}", file=sys.stderr)
    if state is not None and not report.ok:
        # The load process's own warnings and errors say what its clients met; the log may be gone by the time
        # someone reads this (a scenario's temporary directory).
        lines = problem_lines(state.log)
        if lines:
            print(f"  the load process's last warnings and errors ({state.log}):", file=sys.stderr)
            for line in lines:
                print(f"    {line[:400]}", file=sys.stderr)
    if report_file is not None:
        append_to_list(report_file, report.to_json())
    return 0 if report.ok else 1


def checkpoint(
    state_dir: Path, phase: str, report_file: Path | None, timeout_s: float, logs: list[Path] | None = None
) -> int:
    state = StateDir(state_dir).require()
    problems = [] if alive(read_pid(state)) else [f"the load process is not running (see {state.log})"]
    return _publish(account(state, phase, "checkpoint", timeout_s, problems, logs), report_file, state)


def stop(
    state_dir: Path, phase: str, report_file: Path | None, timeout_s: float, logs: list[Path] | None = None
) -> int:
    state = StateDir(state_dir).require()
    problems = _stop_process(state, read_pid(state))
    report = account(state, phase, "stop", timeout_s, problems, logs)
    report.group_member_restarts = int((read_json(state.done) or {}).get("group_member_restarts", 0))
    return _publish(report, report_file, state)


# -- status -----------------------------------------------------------------------------------------


def status(state_dir: Path) -> int:
    state = StateDir(state_dir).require()
    config = read_json(state.config)
    pid = read_pid(state)
    acked = read_jsonl(state.acked)
    commits = read_jsonl(state.commits).rows
    now = time.time()
    last_ack = f"{now - float(acked.rows[-1]['t']):.1f} s ago" if acked.rows else "none yet"
    last_commit = f"{now - float(commits[-1]['t']):.1f} s ago" if commits else "none yet"
    running = alive(pid)
    done = read_json(state.done)
    print(
        f"load {'running (pid ' + str(pid) + ')' if running else 'not running'}: topic {config['topic']}, "
        f"group {config['group']}, {config['rate']:g} msg/s, up {now - float(config['started_at']):.0f} s"
    )
    print(
        f"acked={len(acked.rows)} failed={len(read_jsonl(state.failed).rows)} "
        f"group_consumed={len(read_jsonl(state.group).rows)} commits={len(commits)} "
        f"last_ack={last_ack} last_commit={last_commit} checkpoints={len(read_json(state.phases) or [])}"
    )
    if not running:
        if done is None:
            print(f"stopped without shutting down cleanly: see {state.log}")
        else:
            print("shut down: " + " ".join(f"{k}={v}" for k, v in sorted(done.items()) if k != "t"))
    return 0
