"""`make bench`: measured numbers for provisioning, the Kafka cluster and the Spark job, with plots.

    python -m kafkalab.bench --inventory inventories/lab --cold        # the lab: hosts destroyed and recreated
    python -m kafkalab.bench --inventory inventories/prod --no-cold    # any inventory: no cold converge

Writes .cache/bench/bench.json and PNG plots beside it, and prints a short table. Sections:

  provisioning  wall time of a cold converge of playbooks/site.yml (--cold: the lab's hosts are destroyed and
                recreated first, which only a lab inventory can do), of a no-op re-run and its changed tasks,
                and the ten slowest tasks (from Ansible's JSON callback)
  physical      sequential write throughput of a broker's log dir (dd, fdatasync) and loopback TCP (iperf3
                on the controller): the limits every Kafka figure is shown as a fraction of
  kafka         Kafka's own producer and consumer perf tools (the installed distribution, on a broker host)
                and kafka-python (on the controller): 100 B and 1 KiB records, acks=1 and acks=all, RF 3
  spark         the deployed Spark job's code and settings run on a bench topic (the service is paused
                meanwhile): processed rows/s draining a backlog, produce-to-Parquet latency at a steady
                rate, next to a plain kafka-python consumer reading the same topic

Every figure records its settings; the document records the machine (cores, memory from /proc) and the
load average at start and end. Nothing is asserted: the run fails only when a measurement could not be
taken. Bench topics (kafkalab-bench-*) are created and deleted here; declared topics are never touched.
Parsing, statistics, fractions, the table and the plots are pure functions of the collected data.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shlex
import string
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

BENCH_PREFIX = "kafkalab-bench-"
SECTIONS = ("provisioning", "physical", "kafka", "spark")
# Record sizes (bytes) and how many records each producer run sends: about 20 MB and 50 MB, a few seconds
# to twenty at the rates a 2-core lab reaches, long enough that the JVM's start-up is not the figure.
RECORD_COUNTS = {100: 200_000, 1024: 50_000}
ACKS = ("1", "all")
CLIENTS = ("kafka-java", "kafka-python")
REPLICATION = 3
PARTITIONS = 3
MIN_INSYNC = 2
# Producer settings both clients get, so their figures compare (Kafka 4's defaults for linger and batch).
LINGER_MS = 5
BATCH_SIZE = 16_384
DD_MIB = 512
IPERF_SECONDS = 5
# Where the roles put things (the defaults; tests/cluster and tests/spark_cluster read the same paths).
SERVER_PROPERTIES = "/etc/kafka/server.properties"
SPARK_JOB_CONFIG = "/etc/spark-consumer/job.toml"
SPARK_SUBMIT_CONF = "/etc/spark-consumer/spark-submit.conf"
SPARK_SERVICE = "spark-consumer"
SPARK_BENCH_DIR = "/var/lib/kafkalab-bench"
MIB = 1024 * 1024


class MeasurementError(Exception):
    """A measurement could not be taken; the message says which and why."""


# --------------------------------------------------------------------------- parsing tool output

_PRODUCER_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mibps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th"
)


def parse_producer_perf(output: str) -> dict[str, Any]:
    """The final summary of kafka-producer-perf-test (the line with percentiles; progress lines have none).

    The tool's "MB/sec" is bytes / 2^20 per second: MiB/s, as everywhere in this module.
    """
    matches = list(_PRODUCER_SUMMARY.finditer(output))
    if not matches:
        raise MeasurementError(f"kafka-producer-perf-test printed no summary line: {output.strip()[-300:]!r}")
    m = matches[-1]
    return {
        "records": int(m["records"]),
        "records_per_s": float(m["rps"]),
        "mib_per_s": float(m["mibps"]),
        "latency_ms": {
            "avg": float(m["avg"]),
            "max": float(m["max"]),
            "p50": float(m["p50"]),
            "p95": float(m["p95"]),
            "p99": float(m["p99"]),
            "p99.9": float(m["p999"]),
        },
    }


def parse_consumer_perf(output: str) -> dict[str, Any]:
    """kafka-consumer-perf-test's header line and the values line under it, as a dict of numbers.

    MB.sec/nMsg.sec include joining the consumer group; fetch.MB.sec/fetch.nMsg.sec do not (they are the
    rates a consumer without a group, like the kafka-python one here, is compared with).
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("start.time,"):
            names = [n.strip() for n in line.split(",")]
            values = [v.strip() for v in lines[i + 1].split(",")]
            if len(values) != len(names):
                break
            row = dict(zip(names, values, strict=True))
            try:
                return {
                    "records": int(row["data.consumed.in.nMsg"]),
                    "mib": float(row["data.consumed.in.MB"]),
                    "records_per_s": float(row["fetch.nMsg.sec"]),
                    "mib_per_s": float(row["fetch.MB.sec"]),
                    "records_per_s_with_group_join": float(row["nMsg.sec"]),
                    "mib_per_s_with_group_join": float(row["MB.sec"]),
                    "group_join_ms": float(row["rebalance.time.ms"]),
                    "fetch_ms": float(row["fetch.time.ms"]),
                }
            except (KeyError, ValueError):
                break
    raise MeasurementError(f"kafka-consumer-perf-test printed no stats line: {output.strip()[-300:]!r}")


_DD_SUMMARY = re.compile(r"^(?P<bytes>\d+) bytes .*copied, (?P<seconds>[\d.]+) s,", re.MULTILINE)


def parse_dd(stderr: str) -> dict[str, float]:
    """GNU dd's summary (LC_ALL=C): bytes, seconds and MiB/s."""
    m = _DD_SUMMARY.search(stderr)
    if not m or float(m["seconds"]) <= 0:
        raise MeasurementError(f"dd printed no summary: {stderr.strip()[-300:]!r}")
    size, seconds = int(m["bytes"]), float(m["seconds"])
    return {"bytes": size, "seconds": seconds, "mib_per_s": size / seconds / MIB}


def parse_iperf3(report: Mapping[str, Any]) -> dict[str, float]:
    """iperf3 -J: what the receiver got (bytes, seconds, MiB/s)."""
    if report.get("error"):
        raise MeasurementError(f"iperf3: {report['error']}")
    try:
        received = report["end"]["sum_received"]
        size, seconds = int(received["bytes"]), float(received["seconds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasurementError(f"iperf3 reported no received sum: {exc}") from None
    if seconds <= 0:
        raise MeasurementError("iperf3 reported a zero-length test")
    return {"bytes": size, "seconds": seconds, "mib_per_s": size / seconds / MIB}


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def broker_address(props: Mapping[str, str]) -> str:
    """The address a broker advertises on its inter-broker listener (the one the verification suite uses)."""
    listener = props.get("inter.broker.listener.name", "PLAINTEXT")
    for item in props.get("advertised.listeners", "").split(","):
        name, _, address = item.strip().partition("://")
        if name == listener and address:
            return address
    raise MeasurementError(f"no advertised {listener} listener in {props.get('advertised.listeners')!r}")


def parse_spark_properties(text: str) -> dict[str, str]:
    """spark-submit's --properties-file: `key value` lines, # comments."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            props[key] = value.strip()
    return props


def parse_systemctl_show(text: str) -> dict[str, str]:
    """`systemctl show -p A -p B` output: KEY=VALUE lines."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    return props


def execstart_argv(value: str) -> list[str]:
    """The command of `systemctl show -p ExecStart`: `{ path=... ; argv[]=CMD ARGS ; ignore_errors=no ; ... }`."""
    m = re.search(r"argv\[\]=(.*?) ; ", value)
    if not m:
        raise MeasurementError(f"cannot read the command from ExecStart={value!r}")
    return shlex.split(m[1])


def with_config(argv: Sequence[str], config: str) -> list[str]:
    """The same command with `--config X` pointing at another settings file."""
    out = list(argv)
    if "--config" not in out[:-1]:
        raise MeasurementError(f"the job's command has no --config: {shlex.join(argv)}")
    out[out.index("--config") + 1] = config
    return out


def meminfo_total_bytes(meminfo: str) -> int:
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.MULTILINE)
    if not m:
        raise MeasurementError("no MemTotal in /proc/meminfo")
    return int(m[1]) * 1024


def cpu_model(cpuinfo: str) -> str:
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    return m[1].strip() if m else "unknown"


def parse_loadavg(text: str) -> list[float]:
    return [float(v) for v in text.split()[:3]]


# --------------------------------------------------------------------------- statistics and fractions


def percentile(values: Sequence[float], p: float) -> float:
    """Kafka's own definition (ProducerPerformance): the sorted values' element at index int(n * p)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def latency_summary(values_ms: Sequence[float]) -> dict[str, float]:
    return {
        "avg": sum(values_ms) / len(values_ms),
        "max": max(values_ms),
        "p50": percentile(values_ms, 0.50),
        "p95": percentile(values_ms, 0.95),
        "p99": percentile(values_ms, 0.99),
        "p99.9": percentile(values_ms, 0.999),
    }


def copies_per_limit(replication: int, brokers: int, shared_machine: bool) -> float:
    """How many times each produced byte loads one measured limit.

    Every produced byte is written to `replication` log dirs and crosses the network `replication` times
    (client to leader, leader to each follower). When all brokers share the machine the limits were
    measured on (the lab), all of that lands on one disk and one kernel; on separate machines it spreads
    over the brokers, so one machine sees replication / brokers of it.
    """
    return float(replication) if shared_machine else replication / max(brokers, 1)


def fraction_of_limit(mib_per_s: float, limit_mib_per_s: float | None, copies: float = 1.0) -> float | None:
    """The share of a measured limit a Kafka figure uses (None when the limit could not be measured)."""
    if not limit_mib_per_s or limit_mib_per_s <= 0:
        return None
    return mib_per_s * copies / limit_mib_per_s


# --------------------------------------------------------------------------- provisioning


@dataclass(frozen=True)
class TaskTime:
    play: str
    name: str
    seconds: float


def _iso_seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def playbook_summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What ansible.posix.json's document says about a run: changes and failures per host, task times."""
    stats: Mapping[str, Mapping[str, int]] = doc.get("stats") or {}
    tasks: list[TaskTime] = []
    failures: list[str] = []
    for play in doc.get("plays") or []:
        play_name = str(play.get("play", {}).get("name", ""))
        for task in play.get("tasks") or []:
            info = task.get("task") or {}
            duration = info.get("duration") or {}
            if "start" in duration and "end" in duration:
                seconds = _iso_seconds(duration["end"]) - _iso_seconds(duration["start"])
                tasks.append(TaskTime(play_name, str(info.get("name", "")), max(seconds, 0.0)))
            for host, result in (task.get("hosts") or {}).items():
                if (result.get("failed") and not result.get("ignore_errors")) or result.get("unreachable"):
                    failures.append(f"{host}: {info.get('name')}: {str(result.get('msg', ''))[:300]}")
    return {
        "changed": {host: int(s.get("changed", 0)) for host, s in sorted(stats.items())},
        "changed_total": sum(int(s.get("changed", 0)) for s in stats.values()),
        "failed_hosts": sorted(h for h, s in stats.items() if s.get("failures") or s.get("unreachable")),
        "failures": failures,
        "tasks": tasks,
    }


def slowest_tasks(tasks: Iterable[TaskTime], n: int = 10) -> list[dict[str, Any]]:
    ranked = sorted(tasks, key=lambda t: t.seconds, reverse=True)[:n]
    return [{"task": t.name, "play": t.play, "seconds": round(t.seconds, 2)} for t in ranked]


# --------------------------------------------------------------------------- the Spark job


@dataclass(frozen=True)
class Batch:
    """One micro-batch of the job's `records` query, from its progress log line."""

    batch_id: int
    started: float  # epoch seconds: the trigger's start
    duration_s: float  # triggerExecution: planning, reading, writing Parquet and the commit
    rows: int
    start_offset: dict[int, int]
    end_offset: dict[int, int]

    @property
    def committed(self) -> float:
        return self.started + self.duration_s


def parse_progress(log: str, topic: str, query: str = "records") -> list[Batch]:
    """The job's `progress query=<name> ... progress_json={...}` log lines (kafkalab_spark.progress)."""
    batches: dict[int, Batch] = {}
    marker = f"progress query={query} "
    for line in log.splitlines():
        if marker not in line or "progress_json=" not in line:
            continue
        summary = json.loads(line.split("progress_json=", 1)[1])
        if summary.get("batch_id") is None or not summary.get("timestamp"):
            continue
        batch = Batch(
            batch_id=int(summary["batch_id"]),
            started=_iso_seconds(str(summary["timestamp"])),
            duration_s=int(summary.get("trigger_execution_ms") or 0) / 1000,
            rows=int(summary.get("num_input_rows") or 0),
            start_offset={int(p): int(o) for p, o in (summary.get("start_offset") or {}).get(topic, {}).items()},
            end_offset={int(p): int(o) for p, o in (summary.get("end_offset") or {}).get(topic, {}).items()},
        )
        batches[batch.batch_id] = batch  # a batch re-run after a restart reports again: keep the last
    return [batches[b] for b in sorted(batches)]


def commit_times(sent: Iterable[tuple[int, int, float]], batches: Sequence[Batch]) -> list[tuple[float, float | None]]:
    """For each (partition, offset, sent_at): (sent_at, when the batch holding that offset committed)."""
    ranges = sorted(
        ((p, b.start_offset.get(p, 0), end, b.committed) for b in batches if b.rows for p, end in b.end_offset.items()),
    )
    out: list[tuple[float, float | None]] = []
    for partition, offset, sent_at in sent:
        committed = next((c for p, lo, hi, c in ranges if p == partition and lo <= offset < hi), None)
        out.append((sent_at, committed))
    return out


def e2e_latencies_ms(sent: Iterable[tuple[int, int, float]], batches: Sequence[Batch]) -> tuple[list[float], int]:
    """Produce-to-Parquet latency of each record (ms), and how many records no committed batch holds."""
    pairs = commit_times(sent, batches)
    latencies = [(c - s) * 1000 for s, c in pairs if c is not None]
    return latencies, sum(1 for _, c in pairs if c is None)


def processed_rate(batches: Iterable[Batch]) -> dict[str, float]:
    """Rows per second of busy time over batches that read something (Spark's processedRowsPerSecond)."""
    busy = [b for b in batches if b.rows]
    rows = sum(b.rows for b in busy)
    seconds = sum(b.duration_s for b in busy)
    return {
        "rows": rows,
        "batches": len(busy),
        "busy_s": round(seconds, 3),
        "rows_per_s": rows / seconds if seconds else 0.0,
    }


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)  # "fetch.max.bytes" needs quotes


def to_toml(doc: Mapping[str, Any], prefix: str = "") -> str:
    """A TOML document of scalars, lists and tables (what the job's settings file holds)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    for key, value in doc.items():
        if isinstance(value, Mapping):
            name = f"{prefix}{_toml_key(key)}"
            lines += ["", f"[{name}]", to_toml(value, f"{name}.").rstrip("\n")]
    return "\n".join(lines).strip("\n") + "\n"


def bench_job_config(original: Mapping[str, Any], topic: str, data_dir: str, app_name: str) -> dict[str, Any]:
    """The deployed job's settings, reading the bench topic and writing under data_dir."""
    doc = json.loads(json.dumps(original))  # a deep copy of plain data
    doc["app_name"] = app_name
    doc["kafka"]["topics"] = [topic]
    doc["kafka"]["starting_offsets"] = "earliest"
    doc["paths"] = {
        "output": f"{data_dir}/records",
        "quarantine": f"{data_dir}/quarantine",
        "metrics": f"{data_dir}/metrics",
        "checkpoint": f"{data_dir}/checkpoints",
        "status": f"{data_dir}/status.json",
    }
    return dict(doc)


# The host-side wait for the bench job to commit given end offsets (reads its status file once a second),
# so the controller does not poll (and load the machine) while the job works. Gives up when the job's unit
# is no longer running (it failed) or after the time limit.
_WAIT_SCRIPT = """
import json, subprocess, sys, time
path, topic, want, limit, unit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
deadline, last = time.time() + limit, None
while time.time() < deadline:
    try:
        with open(path) as handle:
            last = json.load(handle)["queries"]["records"]["last_batch"]["end_offset"].get(topic, {})
        if all(int(last.get(p, 0)) >= int(o) for p, o in want.items()):
            print(json.dumps(last))
            sys.exit(0)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if subprocess.run(["systemctl", "is-active", "--quiet", unit]).returncode != 0:
        print(json.dumps({"job_stopped": unit, "last_end_offsets": last}))
        sys.exit(4)
    time.sleep(1)
print(json.dumps({"timed_out_after_s": limit, "last_end_offsets": last}))
sys.exit(3)
"""


def end_offsets_wanted(records: Iterable[tuple[int, int]]) -> dict[str, int]:
    """Per partition, the end offset a batch must reach to hold every (partition, offset) given."""
    wanted: dict[str, int] = {}
    for partition, offset in records:
        wanted[str(partition)] = max(wanted.get(str(partition), 0), offset + 1)
    return wanted


# --------------------------------------------------------------------------- the report


def errors_in(doc: Any, path: str = "") -> list[str]:
    """Every measurement that could not be taken: `error` entries anywhere in the document."""
    found: list[str] = []
    if isinstance(doc, Mapping):
        if isinstance(doc.get("error"), str):
            found.append(f"{path or 'bench'}: {doc['error']}")
        for key, value in doc.items():
            if key != "error":
                found += errors_in(value, f"{path}.{key}" if path else str(key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += errors_in(value, f"{path}[{i}]")
    return found


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def machine_line(doc: Mapping[str, Any]) -> str:
    m = doc.get("machine") or {}
    c = m.get("controller") or {}
    load = doc.get("load_average") or {}
    start = "/".join(f"{v:.2f}" for v in load.get("start") or [])
    end = "/".join(f"{v:.2f}" for v in load.get("end") or [])
    shared = "all hosts share it (one kernel)" if m.get("hosts_share_controller") else "hosts are separate machines"
    return (
        f"machine: {c.get('cores', '?')} cores, {c.get('memory_bytes', 0) / 2**30:.1f} GiB ({c.get('cpu', '?')}); "
        f"{shared}; load average start {start or '-'}, end {end or '-'}"
    )


def render_table(doc: Mapping[str, Any]) -> str:
    """The short table `make bench` prints, from the bench document."""
    out = [
        f"kafkalab bench {doc.get('started_at', '')}  inventory {doc.get('inventory', '')}  "
        f"took {fmt_duration(doc.get('duration_s'))}",
        machine_line(doc),
    ]
    prov = doc.get("provisioning") or {}
    if prov:
        out += ["", f"provisioning: ansible-playbook playbooks/site.yml, {prov.get('hosts', '?')} hosts"]
        cold = prov.get("cold") or {}
        if cold.get("error"):
            out.append(f"  cold converge        NOT MEASURED: {cold['error']}")
        elif cold.get("skipped"):
            out.append(f"  cold converge        not measured: {cold['skipped']}")
        elif cold:
            out.append(
                f"  cold converge        {fmt_duration(cold.get('wall_s')):>12}   "
                f"({cold.get('changed_total')} changed; lab hosts recreated in {fmt_duration(cold.get('lab_up_s'))})"
            )
        noop = prov.get("noop") or {}
        if noop.get("error"):
            out.append(f"  no-op re-run         NOT MEASURED: {noop['error']}")
        elif noop:
            out.append(
                f"  no-op re-run         {fmt_duration(noop.get('wall_s')):>12}   "
                f"changed tasks: {noop.get('changed_total')}"
            )
        slow = (cold.get("slowest_tasks") if cold.get("wall_s") else None) or noop.get("slowest_tasks") or []
        if slow:
            which = "cold converge" if cold.get("wall_s") else "no-op re-run"
            out.append(f"  ten slowest tasks ({which}):")
            out += [f"    {t['seconds']:7.1f} s  {t['task']}  [{t['play']}]" for t in slow]
    phys = doc.get("physical") or {}
    if phys:
        disk, net = phys.get("disk") or {}, phys.get("loopback") or {}
        out += ["", "physical limits"]
        out.append(
            f"  disk sequential write  {_num(disk.get('mib_per_s'), 1):>9} MiB/s   "
            + (disk.get("error") or f"dd {DD_MIB} MiB, fdatasync, {disk.get('host')}:{disk.get('log_dir')}")
        )
        out.append(
            f"  loopback TCP           {_num(net.get('mib_per_s'), 1):>9} MiB/s   "
            + (net.get("error") or f"iperf3, 1 stream, {IPERF_SECONDS} s, on the controller")
        )
    kafka = doc.get("kafka") or {}
    if kafka:
        s = kafka.get("settings") or {}
        out += [
            "",
            f"Kafka producers: RF {s.get('replication_factor')}, {s.get('partitions')} partitions, "
            f"min.insync.replicas {s.get('min_insync_replicas')}, linger.ms {s.get('linger_ms')}, "
            f"batch.size {s.get('batch_size')}, unthrottled",
            f"  {'client':<13} {'size':>5} {'acks':>4} {'records':>8} {'rec/s':>8} {'MiB/s':>7} "
            f"{'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8} {'of disk':>7} {'of net':>7}",
        ]
        for r in kafka.get("producers") or []:
            head = f"  {r['client']:<13} {r['record_size']:>5} {r['acks']:>4} {r['records']:>8} "
            if r.get("error"):
                out.append(head + f"NOT MEASURED: {r['error']}")
                continue
            lat = r.get("latency_ms") or {}
            out.append(
                head + f"{_num(r['records_per_s']):>8} {_num(r['mib_per_s'], 2):>7} {_num(lat.get('p50')):>7} "
                f"{_num(lat.get('p99')):>7} {_num(lat.get('p99.9')):>8} "
                f"{_pct(r.get('of_disk')):>7} {_pct(r.get('of_loopback')):>7}"
            )
        out += [
            "  Kafka consumers: the acks=all topic of the same client and size, from the beginning",
            f"  {'client':<13} {'size':>5} {'':>4} {'records':>8} {'rec/s':>8} {'MiB/s':>7} "
            f"{'':>7} {'':>7} {'':>8} {'':>7} {'of net':>7}",
        ]
        for r in kafka.get("consumers") or []:
            head = f"  {r['client']:<13} {r['record_size']:>5} {'':>4} {r['records']:>8} "
            if r.get("error"):
                out.append(head + f"NOT MEASURED: {r['error']}")
                continue
            out.append(
                head + f"{_num(r['records_per_s']):>8} {_num(r['mib_per_s'], 2):>7} {'':>7} {'':>7} {'':>8} "
                f"{'':>7} {_pct(r.get('of_loopback')):>7}"
            )
        if kafka.get("fraction_note"):
            out.append(f"  disk/net: {kafka['fraction_note']}")
    spark = doc.get("spark") or {}
    if spark:
        out += ["", "Spark job (the deployed job's code and settings on a bench topic)"]
        if spark.get("error"):
            out.append(f"  NOT MEASURED: {spark['error']}")
        else:
            s = spark.get("settings") or {}
            backlog, steady, raw = (
                spark.get("backlog") or {},
                spark.get("steady") or {},
                spark.get("raw_consumer") or {},
            )
            lat = steady.get("latency_ms") or {}
            out += [
                f"  settings: trigger {s.get('trigger_interval')}, max {s.get('max_offsets_per_trigger')} offsets "
                f"per trigger, {s.get('partitions')} partitions, cores.max {s.get('cores_max')}, "
                f"executor {s.get('executor_memory')}",
                f"  backlog of {_num(backlog.get('records'))} drained: {_num(backlog.get('rows_per_s'))} "
                f"processed rows/s ({backlog.get('batches')} batches, {_num(backlog.get('busy_s'), 1)} s busy)",
                f"  steady {_num(steady.get('rate_per_s'))} records/s for {steady.get('seconds')} s: "
                f"produce-to-Parquet p50 {_num(lat.get('p50'))} ms, p99 {_num(lat.get('p99'))} ms "
                f"({_num(steady.get('records'))} records, {_num(steady.get('rows_per_s'))} processed rows/s busy)",
                f"  raw kafka-python consumer, same topic: {_num(raw.get('records_per_s'))} records/s "
                f"({_num(raw.get('records'))} records, {_num(raw.get('mib_per_s'), 2)} MiB/s)",
            ]
    for section in ("kafka", "spark"):
        if (doc.get(section) or {}).get("cleanup_error"):
            out.append(f"cleanup after {section} incomplete: {doc[section]['cleanup_error']}")
    errors = errors_in(doc)
    out += ["", f"measurements not taken: {len(errors)}"] + [f"  {e}" for e in errors]
    return "\n".join(out) + "\n"


def _plot_provisioning(plt: Any, doc: Mapping[str, Any]) -> tuple[Any, str] | None:
    prov = doc.get("provisioning") or {}
    cold, noop = prov.get("cold") or {}, prov.get("noop") or {}
    slow = (cold.get("slowest_tasks") if cold.get("wall_s") else None) or noop.get("slowest_tasks") or []
    if not slow:
        return None
    fig, ax = plt.subplots(figsize=(12, 5))
    ranked = list(reversed(slow))  # the slowest on top; two tasks may share a name, so positions, not labels
    ax.barh(range(len(ranked)), [t["seconds"] for t in ranked], color="#4c72b0")
    ax.set_yticks(range(len(ranked)), [f"{t['task'][:60]} [{t['play'][:24]}]" for t in ranked], fontsize=7)
    ax.set_xlabel("seconds")
    which = "cold converge" if cold.get("wall_s") else "no-op re-run"
    ax.set_title(
        f"site.yml: cold converge {fmt_duration(cold.get('wall_s'))}, no-op re-run {fmt_duration(noop.get('wall_s'))} "
        f"({noop.get('changed_total', '-')} changed tasks)\nthe ten slowest tasks of the {which} [play]",
        fontsize=10,
    )
    return fig, f"ansible-playbook -i {doc.get('inventory')} playbooks/site.yml ({prov.get('hosts')} hosts)"


def _grouped_bars(ax: Any, rows: Sequence[Mapping[str, Any]], keys: Sequence[Any], labels: Sequence[str]) -> None:
    """MiB/s bars, one group per key (record size, or size and acks), one bar per client."""
    clients = sorted({r["client"] for r in rows})
    width = 0.8 / max(len(clients), 1)
    for i, client in enumerate(clients):
        values = {r["key"]: r["mib_per_s"] for r in rows if r["client"] == client}
        ax.bar([j + i * width for j in range(len(keys))], [values.get(k, 0) for k in keys], width, label=client)
    ax.set_xticks([j + width * (len(clients) - 1) / 2 for j in range(len(keys))], labels, fontsize=8)
    ax.legend(fontsize=8)


def _plot_kafka(plt: Any, doc: Mapping[str, Any]) -> tuple[Any, str] | None:
    kafka = doc.get("kafka") or {}
    producers = [r | {"key": (r["record_size"], r["acks"])} for r in kafka.get("producers") or [] if "error" not in r]
    consumers = [r | {"key": r["record_size"]} for r in kafka.get("consumers") or [] if "error" not in r]
    if not producers and not consumers:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    configs = sorted({r["key"] for r in producers})
    labels = [f"{size} B acks={acks}" for size, acks in configs]
    _grouped_bars(axes[0][0], producers, configs, labels)
    axes[0][0].set_title("producer throughput (MiB/s)", fontsize=10)

    ax = axes[0][1]
    for j, client in enumerate(sorted({r["client"] for r in producers})):
        by_config = {r["key"]: r["latency_ms"] for r in producers if r["client"] == client}
        for i, (pct, marker) in enumerate((("p50", "o"), ("p99", "s"), ("p99.9", "^"))):
            values = [by_config[c][pct] if c in by_config else math.nan for c in configs]
            ax.plot(
                range(len(configs)), values, marker + "-", color=f"C{j}", alpha=1 - 0.3 * i, label=f"{client} {pct}"
            )
    ax.set_yscale("log")
    ax.set_xticks(range(len(configs)), labels, fontsize=8)
    ax.set_title("producer latency, send to acknowledgement (ms, log scale)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)

    sizes = sorted({r["key"] for r in consumers})
    _grouped_bars(axes[1][0], consumers, sizes, [f"{size} B" for size in sizes])
    axes[1][0].set_title("consumer throughput (MiB/s; the perf tool's excludes its group join)", fontsize=10)

    ax = axes[1][1]
    ordered = sorted(producers, key=lambda r: (r["record_size"], r["acks"], r["client"]))
    positions = list(range(len(ordered)))
    ax.barh([y + 0.2 for y in positions], [100 * (r.get("of_disk") or 0) for r in ordered], 0.4, label="disk write")
    ax.barh([y - 0.2 for y in positions], [100 * (r.get("of_loopback") or 0) for r in ordered], 0.4, label="loopback")
    ax.set_yticks(positions, [f"{r['client']} {r['record_size']} B acks={r['acks']}" for r in ordered], fontsize=7)
    ax.set_xlabel("% of the measured limit")
    ax.set_title("producers as a fraction of the physical limits", fontsize=10)
    ax.legend(fontsize=8)
    fig.suptitle("Kafka: its perf tools (kafka-java, on a broker host) and kafka-python (on the controller)")
    s, phys = kafka.get("settings") or {}, doc.get("physical") or {}
    records = ", ".join(f"{n:,} x {size} B" for size, n in (s.get("records") or {}).items())
    disk = _num((phys.get("disk") or {}).get("mib_per_s"))
    loopback = _num((phys.get("loopback") or {}).get("mib_per_s"))
    return fig, (
        f"RF {s.get('replication_factor')}, {s.get('partitions')} partitions, min.insync.replicas "
        f"{s.get('min_insync_replicas')}, linger.ms {s.get('linger_ms')}, batch.size {s.get('batch_size')}, "
        f"unthrottled; records per run: {records}; limits: disk {disk} MiB/s, loopback {loopback} MiB/s; "
        f"{kafka.get('fraction_note', '')}"
    )


def _plot_spark(plt: Any, doc: Mapping[str, Any]) -> tuple[Any, str] | None:
    spark = doc.get("spark") or {}
    if not spark or "error" in spark:
        return None
    backlog, steady, raw = spark.get("backlog") or {}, spark.get("steady") or {}, spark.get("raw_consumer") or {}
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    left.bar(
        ["Spark job\n(backlog, busy time)", "kafka-python consumer\n(same topic)"],
        [backlog.get("rows_per_s") or 0, raw.get("records_per_s") or 0],
        color=["#dd8452", "#4c72b0"],
    )
    left.set_ylabel("records per second")
    left.set_title("processed rows/s next to a raw consumer", fontsize=10)
    samples = steady.get("latency_samples_ms") or []
    if samples:
        right.hist(samples, bins=40, color="#55a868")
        for pct, color in (("p50", "black"), ("p99", "red")):
            value = (steady.get("latency_ms") or {}).get(pct)
            if value is not None:
                right.axvline(value, color=color, linestyle="--", label=f"{pct} {value:,.0f} ms")
        right.legend(fontsize=8)
    right.set_xlabel("ms from send to the commit of the micro-batch holding the record")
    right.set_title(
        f"produce-to-Parquet latency at {_num(steady.get('rate_per_s'))} records/s for {steady.get('seconds')} s",
        fontsize=10,
    )
    fig.suptitle("Spark job: Kafka -> Parquet")
    s = spark.get("settings") or {}
    return fig, (
        f"trigger {s.get('trigger_interval')}, maxOffsetsPerTrigger {s.get('max_offsets_per_trigger')}, "
        f"{s.get('partitions')} partitions RF {s.get('replication_factor')}, cores.max {s.get('cores_max')}, "
        f"executor {s.get('executor_memory')}, driver {s.get('driver_memory')}; backlog of {backlog.get('records')} "
        "events (kafka-python, acks=all)"
    )


def write_plots(doc: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """PNG plots of the document (matplotlib's Agg backend); each names its settings and the machine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for name, plot in (
        ("provisioning.png", _plot_provisioning),
        ("kafka.png", _plot_kafka),
        ("spark.png", _plot_spark),
    ):
        made = plot(plt, doc)
        if made is None:
            continue
        fig, settings = made
        fig.tight_layout(rect=(0, 0.07, 1, 0.96))
        fig.text(0.01, 0.005, f"{settings}\n{machine_line(doc)}", fontsize=7, va="bottom", color="#444444", wrap=True)
        fig.savefig(out_dir / name, dpi=110, bbox_inches="tight")  # long task names stay whole
        plt.close(fig)
        written.append(out_dir / name)
    return written


# --------------------------------------------------------------------------- running things


@dataclass(frozen=True)
class HostResult:
    host: str
    rc: int
    stdout: str
    stderr: str
    ok: bool
    msg: str


def adhoc_results(doc: Mapping[str, Any]) -> dict[str, HostResult]:
    """Per-host results of one ad-hoc module run, from ansible.posix.json's document."""
    results: dict[str, HostResult] = {}
    for play in doc.get("plays") or []:
        for task in play.get("tasks") or []:
            for host, r in (task.get("hosts") or {}).items():
                ok = not (r.get("failed") or r.get("unreachable"))
                results[host] = HostResult(
                    host=host,
                    rc=int(r.get("rc", 0 if ok else 1)),
                    stdout=str(r.get("stdout", "")),
                    stderr=str(r.get("stderr", "")),
                    ok=ok,
                    msg=str(r.get("msg", "")),
                )
    return results


class Ansible:
    """Ad-hoc commands and playbooks against one inventory, read back through the JSON callback."""

    def __init__(self, inventory: str) -> None:
        self.inventory = inventory
        self.bin = Path(sys.executable).parent
        # JSON on stdout, and no other callback writing there (ansible.cfg enables profile_tasks).
        self.env = {
            **os.environ,
            "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
            "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_JSON_INDENT": "0",
            "ANSIBLE_NOCOLOR": "1",
        }

    def _tool(self, name: str) -> str:
        beside = self.bin / name
        return str(beside) if beside.is_file() else name

    def groups(self) -> dict[str, list[str]]:
        proc = subprocess.run(
            [self._tool("ansible-inventory"), "-i", self.inventory, "--list"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise MeasurementError(f"ansible-inventory -i {self.inventory} failed: {proc.stderr.strip()[-300:]}")
        data = json.loads(proc.stdout)

        def members(group: str) -> list[str]:
            node = data.get(group) or {}
            hosts = list(node.get("hosts") or [])
            for child in node.get("children") or []:
                hosts += members(child)
            return sorted(set(hosts))

        return {group: members(group) for group in data if group != "_meta"}

    def module(self, pattern: str, module: str, args: Mapping[str, Any], timeout: float = 900) -> dict[str, HostResult]:
        cmd = [self._tool("ansible"), pattern, "-i", self.inventory, "-m", module, "-a", json.dumps(args)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise MeasurementError(f"{module} on {pattern} did not finish in {timeout:.0f} s") from None
        try:
            return adhoc_results(json.loads(proc.stdout))
        except ValueError:
            raise MeasurementError(f"ansible {module} on {pattern} failed: {proc.stderr.strip()[-300:]}") from None

    def run(self, host: str, argv: Sequence[str], timeout: float = 900, check: bool = True) -> HostResult:
        """A command on one host (ansible.builtin.command: no shell)."""
        result = self.module(host, "ansible.builtin.command", {"argv": list(argv)}, timeout).get(host)
        if result is None:
            raise MeasurementError(f"no result from {host} for {shlex.join(argv)}")
        if check and not result.ok:
            detail = (result.stderr or result.msg or result.stdout).strip()[-400:]
            raise MeasurementError(f"{host}: {shlex.join(argv)[:200]} failed (rc {result.rc}): {detail}")
        return result

    def playbook(self, playbook: str, log: Path) -> tuple[float, dict[str, Any]]:
        """Run a playbook; (wall seconds, summary). The JSON document and stderr are kept beside `log`."""
        started = time.monotonic()
        with log.open("w") as out, log.with_suffix(".stderr.log").open("w") as err:
            proc = subprocess.run(
                [self._tool("ansible-playbook"), "-i", self.inventory, playbook],
                stdout=out,
                stderr=err,
                env=self.env,
                check=False,
            )
        wall = time.monotonic() - started
        try:
            summary = playbook_summary(json.loads(log.read_text() or "{}"))
        except ValueError:
            raise MeasurementError(f"{playbook} printed no JSON (rc {proc.returncode}): see {log}") from None
        if proc.returncode != 0:
            raise MeasurementError(
                f"{playbook} failed (rc {proc.returncode}): " + "; ".join(summary["failures"][:3]) + f" (see {log})"
            )
        return wall, summary


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def loadavg() -> list[float]:
    return parse_loadavg(Path("/proc/loadavg").read_text())


def measured(what: str, fn: Callable[[], dict[str, Any]], base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Take one measurement; a failure is recorded as its `error` (the run then exits non-zero)."""
    say(what)
    try:
        return {**(base or {}), **fn()}
    except Exception as exc:  # any failure of one measurement is reported, and the others still run
        say(f"  could not measure {what}: {exc}")
        return {**(base or {}), "error": f"{type(exc).__name__}: {exc}"}


# --------------------------------------------------------------------------- the sections


def provisioning(ansible: Ansible, cold: bool, out_dir: Path, root: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"playbook": "playbooks/site.yml"}
    result["hosts"] = len(ansible.groups().get("cluster") or [])

    def cold_converge() -> dict[str, Any]:
        # The lab module's own commands, as `make lab-destroy` and `make lab-up` run them.
        started = time.monotonic()
        for action in ("down", "up"):
            proc = subprocess.run(
                [sys.executable, "-m", "kafkalab.lab", action, "--inventory", ansible.inventory],
                capture_output=True,
                text=True,
                cwd=root,
                check=False,
            )
            if proc.returncode != 0:
                raise MeasurementError(f"lab {action} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        lab_up = time.monotonic() - started
        wall, summary = ansible.playbook("playbooks/site.yml", out_dir / "converge-cold.json")
        return {
            "lab_up_s": round(lab_up, 1),
            "wall_s": round(wall, 1),
            "changed_total": summary["changed_total"],
            "changed": summary["changed"],
            "slowest_tasks": slowest_tasks(summary["tasks"]),
        }

    def noop() -> dict[str, Any]:
        wall, summary = ansible.playbook("playbooks/site.yml", out_dir / "converge-noop.json")
        return {
            "wall_s": round(wall, 1),
            "changed_total": summary["changed_total"],
            "changed": summary["changed"],
            "slowest_tasks": slowest_tasks(summary["tasks"]),
        }

    if cold:
        result["cold"] = measured("cold converge: lab hosts destroyed and recreated, then site.yml", cold_converge)
    else:
        result["cold"] = {"skipped": "--no-cold (BENCH_COLD=0): hosts were not recreated"}
    result["noop"] = measured("no-op re-run of site.yml", noop)
    return result


def machine(ansible: Ansible, hosts: list[str]) -> dict[str, Any]:
    controller = {
        "cores": os.cpu_count(),
        "memory_bytes": meminfo_total_bytes(Path("/proc/meminfo").read_text()),
        "cpu": cpu_model(Path("/proc/cpuinfo").read_text()),
        "kernel": os.uname().release,
    }
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    found: dict[str, Any] = {}
    results = ansible.module(
        ":".join(hosts),
        "ansible.builtin.command",
        {"argv": ["sh", "-c", "nproc; cat /proc/sys/kernel/random/boot_id; cat /proc/meminfo"]},
        timeout=120,
    )
    for host in hosts:
        r = results.get(host)
        if r is None or not r.ok:
            found[host] = {"error": f"unreachable or failed: {r.msg if r else 'no result'}"}
            continue
        lines = r.stdout.splitlines()
        found[host] = {
            "cores": int(lines[0]),
            "memory_bytes": meminfo_total_bytes(r.stdout),
            "same_kernel_as_controller": lines[1].strip() == boot_id,
        }
    return {
        "controller": controller,
        "hosts": found,
        "hosts_share_controller": bool(found) and all(h.get("same_kernel_as_controller") for h in found.values()),
    }


@dataclass
class Cluster:
    bootstrap: str
    brokers: list[str]
    tool_host: str
    log_dir: str


def discover(ansible: Ansible, brokers: list[str], bootstrap: str | None) -> Cluster:
    props = {}
    results = ansible.module(
        ":".join(brokers), "ansible.builtin.command", {"argv": ["cat", SERVER_PROPERTIES]}, timeout=120
    )
    for host in brokers:
        r = results.get(host)
        if r is None or not r.ok:
            raise MeasurementError(f"cannot read {SERVER_PROPERTIES} on {host}: {r.msg if r else 'no result'}")
        props[host] = parse_properties(r.stdout)
    first = brokers[0]
    return Cluster(
        bootstrap=bootstrap or ",".join(broker_address(props[b]) for b in brokers),
        brokers=brokers,
        tool_host=first,
        log_dir=props[first].get("log.dirs", props[first].get("log.dir", "/tmp/kafka-logs")).split(",")[0],
    )


def admin_client(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafkalab-bench", request_timeout_ms=60_000)


def delete_bench_topics(bootstrap: str, only: Iterable[str] | None = None) -> list[str]:
    """Delete the bench's own topics: those named, or every kafkalab-bench-* topic (leftovers of a killed run)."""
    admin = admin_client(bootstrap)
    try:
        existing = set(admin.list_topics())
        names = sorted(t for t in (existing if only is None else set(only) & existing) if t.startswith(BENCH_PREFIX))
        if names:
            admin.delete_topics(names)
        return names
    finally:
        admin.close()


def delete_bench_groups(bootstrap: str, names: Iterable[str]) -> list[str]:
    """Delete the perf consumer's groups that still exist (one without committed offsets is gone already)."""
    admin = admin_client(bootstrap)
    try:
        existing = {g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()}
        doomed = sorted(n for n in set(names) & existing if n.startswith(BENCH_PREFIX))
        if doomed:
            admin.delete_groups(doomed)
        return doomed
    finally:
        admin.close()


def physical(ansible: Ansible, cluster: Cluster) -> dict[str, Any]:
    def disk() -> dict[str, Any]:
        target = f"{cluster.log_dir.rstrip('/')}/{BENCH_PREFIX}dd-{uuid.uuid4().hex[:8]}"
        script = (
            f"LC_ALL=C dd if=/dev/zero of={shlex.quote(target)} bs=1M count={DD_MIB} conv=fdatasync; "
            f"rc=$?; rm -f {shlex.quote(target)}; exit $rc"
        )
        r = ansible.run(cluster.tool_host, ["sh", "-c", script], timeout=600)
        return parse_dd(r.stderr) | {"command": f"dd if=/dev/zero bs=1M count={DD_MIB} conv=fdatasync"}

    def loopback() -> dict[str, Any]:
        from kafkalab.lab import LabError, ensure_tools

        try:
            ensure_tools({"iperf3": "iperf3"})
        except LabError as exc:
            raise MeasurementError(str(exc)) from None
        port = str(5201 + random.randrange(500))
        server = subprocess.Popen(
            ["iperf3", "--server", "--one-off", "--bind", "127.0.0.1", "--port", port],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1)
            proc = subprocess.run(
                ["iperf3", "--client", "127.0.0.1", "--port", port, "--time", str(IPERF_SECONDS), "--json"],
                capture_output=True,
                text=True,
                timeout=IPERF_SECONDS + 60,
                check=False,
            )
        finally:
            server.terminate()
            server.wait(timeout=10)
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            raise MeasurementError(f"iperf3 failed: {proc.stderr.strip()[-300:]}") from None
        return parse_iperf3(report) | {"command": f"iperf3 -c 127.0.0.1 -t {IPERF_SECONDS} (1 TCP stream)"}

    return {
        "disk": measured(
            f"disk: dd {DD_MIB} MiB into {cluster.tool_host}:{cluster.log_dir}",
            disk,
            {"host": cluster.tool_host, "log_dir": cluster.log_dir},
        ),
        "loopback": measured("loopback TCP: iperf3 on the controller", loopback, {"host": "controller"}),
    }


def _payload(size: int) -> bytes:
    # Random letters, like the perf tool's payload: nothing a compressor or a cache would favour.
    return "".join(random.choices(string.ascii_uppercase, k=size)).encode()


def kafka_python_produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> dict[str, Any]:
    """What kafka-producer-perf-test measures, with kafka-python: send to acknowledgement, per record."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1 if acks == "1" else "all",
        enable_idempotence=acks == "all",  # as the Java client's default does with acks=all
        linger_ms=LINGER_MS,
        batch_size=BATCH_SIZE,
        client_id="kafkalab-bench",
    )
    payload = _payload(size)
    latencies: list[float] = []
    failed: list[BaseException] = []
    try:
        producer.partitions_for(topic)  # metadata first: not part of the figure (the Java tool's first send waits)
        started = time.perf_counter()
        for _ in range(records):
            sent = time.perf_counter()
            future = producer.send(topic, payload)
            future.add_callback(lambda _md, sent=sent: latencies.append(time.perf_counter() - sent))
            future.add_errback(failed.append)
        producer.flush(timeout=600)
        elapsed = time.perf_counter() - started
    finally:
        producer.close(timeout=30)
    if failed or len(latencies) != records:
        raise MeasurementError(f"{len(failed)} of {records} sends failed ({failed[:1]}), {len(latencies)} acked")
    return {
        "records_per_s": records / elapsed,
        "mib_per_s": records * size / elapsed / MIB,
        "latency_ms": latency_summary([s * 1000 for s in latencies]),
    }


def java_producer_argv(bootstrap: str, topic: str, records: int, size: int, acks: str) -> list[str]:
    """kafka-producer-perf-test, unthrottled, with the settings the kafka-python run gets too.

    --producer-props is accepted by 3.9 and 4.x alike (4.x prefers --command-property and warns).
    """
    return [
        "env", "KAFKA_HEAP_OPTS=-Xmx512m", "kafka-producer-perf-test",
        "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", f"linger.ms={LINGER_MS}",
        f"batch.size={BATCH_SIZE}", "client.id=kafkalab-bench",
    ]  # fmt: skip


def java_consumer_argv(bootstrap: str, topic: str, records: int, group: str) -> list[str]:
    """kafka-consumer-perf-test; --messages is accepted by 3.9 and 4.x alike (4.x prefers --num-records)."""
    return [
        "env", "KAFKA_HEAP_OPTS=-Xmx512m", "kafka-consumer-perf-test",
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
        "--timeout", "60000", "--group", group,
    ]  # fmt: skip


def bench_topic(run: str, client: str, size: int, acks: str) -> str:
    return f"{BENCH_PREFIX}{run}-{client}-{size}b-acks{acks}"


def kafka_section(ansible: Ansible, cluster: Cluster, doc: Mapping[str, Any], run: str, scale: float) -> dict[str, Any]:
    from kafkalab.e2e import create_topic, read_rate

    counts = {size: max(1000, int(n * scale)) for size, n in RECORD_COUNTS.items()}
    shared = bool((doc.get("machine") or {}).get("hosts_share_controller"))
    copies = copies_per_limit(REPLICATION, len(cluster.brokers), shared)
    phys = doc.get("physical") or {}
    disk_limit = (phys.get("disk") or {}).get("mib_per_s")
    net_limit = (phys.get("loopback") or {}).get("mib_per_s")
    where = "all on this machine" if shared else f"spread over {len(cluster.brokers)} brokers"
    result: dict[str, Any] = {
        "settings": {
            "replication_factor": REPLICATION,
            "partitions": PARTITIONS,
            "min_insync_replicas": MIN_INSYNC,
            "linger_ms": LINGER_MS,
            "batch_size": BATCH_SIZE,
            "compression": "none",
            "throughput": "unthrottled",
            "records": {str(size): n for size, n in counts.items()},
            "idempotence": "on with acks=all, off with acks=1 (the Java client's default behaviour)",
            "kafka-java": f"kafka-producer-perf-test / kafka-consumer-perf-test on {cluster.tool_host}, -Xmx512m",
            "kafka-python": "kafka-python on the controller",
            "bootstrap": cluster.bootstrap,
        },
        "fraction_note": (
            f"producers: MiB/s x {copies:g} (RF {REPLICATION}: log dirs and network hops, {where}) over the disk "
            "write and loopback limits; consumers: MiB/s over loopback"
        ),
        "producers": [],
        "consumers": [],
    }
    topics: list[str] = []
    groups: list[str] = []

    def produce(client: str, topic: str, records: int, size: int, acks: str) -> dict[str, Any]:
        topics.append(topic)
        create_topic(cluster.bootstrap, topic, PARTITIONS, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)})
        if client == "kafka-python":
            figures = kafka_python_produce(cluster.bootstrap, topic, records, size, acks)
        else:
            argv = java_producer_argv(cluster.bootstrap, topic, records, size, acks)
            figures = parse_producer_perf(ansible.run(cluster.tool_host, argv).stdout)
        return figures | {
            "of_disk": fraction_of_limit(figures["mib_per_s"], disk_limit, copies),
            "of_loopback": fraction_of_limit(figures["mib_per_s"], net_limit, copies),
        }

    def consume(client: str, topic: str, records: int) -> dict[str, Any]:
        if client == "kafka-python":
            count, size_bytes, seconds = read_rate(cluster.bootstrap, topic)
            figures: dict[str, Any] = {
                "records": count,
                "records_per_s": count / seconds,
                "mib_per_s": size_bytes / seconds / MIB,
            }
        else:
            group = f"{topic}-consumer"
            groups.append(group)
            argv = java_consumer_argv(cluster.bootstrap, topic, records, group)
            figures = parse_consumer_perf(ansible.run(cluster.tool_host, argv).stdout)
        return figures | {"of_loopback": fraction_of_limit(figures["mib_per_s"], net_limit)}

    try:
        for client in CLIENTS:
            for size, records in counts.items():
                for acks in ACKS:
                    topic = bench_topic(run, client, size, acks)
                    result["producers"].append(
                        measured(
                            f"{client} producer: {size} B x {records}, acks={acks}",
                            partial(produce, client, topic, records, size, acks),
                            {"client": client, "record_size": size, "acks": acks, "records": records, "topic": topic},
                        )
                    )
            for size, records in counts.items():
                topic = bench_topic(run, client, size, "all")
                result["consumers"].append(
                    measured(
                        f"{client} consumer: {size} B x {records}",
                        partial(consume, client, topic, records),
                        {"client": client, "record_size": size, "records": records, "topic": topic},
                    )
                )
    finally:
        try:
            delete_bench_topics(cluster.bootstrap, topics)
            delete_bench_groups(cluster.bootstrap, groups)
        except Exception as exc:  # reported; the topics carry the bench prefix and the next run removes them
            result["cleanup_error"] = f"{type(exc).__name__}: {exc}"
    return result


def produce_at_rate(bootstrap: str, topic: str, rate: float, seconds: float) -> list[tuple[int, int, float]]:
    """Numbered JSON events (kafkalab.e2e's format) at a steady rate; (partition, offset, sent_at) of each ack."""
    from kafka import KafkaProducer

    from kafkalab.e2e import encode

    run_id = uuid.uuid4().hex
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=LINGER_MS,
        client_id="kafkalab-bench",
    )
    acked: list[tuple[int, int, float]] = []
    failed: list[BaseException] = []
    total = int(rate * seconds)
    try:
        producer.partitions_for(topic)
        started = time.time()
        for seq in range(total):
            delay = started + seq / rate - time.time()
            if delay > 0:
                time.sleep(delay)
            sent = time.time()
            future = producer.send(topic, key=f"key-{seq % 64}".encode(), value=encode(run_id, seq))
            future.add_callback(lambda md, sent=sent: acked.append((md.partition, md.offset, sent)))
            future.add_errback(failed.append)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=30)
    if failed or len(acked) != total:
        raise MeasurementError(f"{len(failed)} of {total} steady sends failed ({failed[:1]})")
    return acked


def spark_section(
    ansible: Ansible, cluster: Cluster, master: str, run: str, backlog_records: int, rate: float, seconds: float
) -> dict[str, Any]:
    from kafka import KafkaConsumer

    from kafkalab.e2e import create_topic, produce_numbered, read_rate

    config = tomllib.loads(ansible.run(master, ["cat", SPARK_JOB_CONFIG]).stdout)
    submit = parse_spark_properties(ansible.run(master, ["cat", SPARK_SUBMIT_CONF]).stdout)
    unit = parse_systemctl_show(
        ansible.run(
            master,
            [
                "systemctl",
                "show",
                SPARK_SERVICE,
                "-p",
                "ExecStart",
                "-p",
                "Environment",
                "-p",
                "User",
                "-p",
                "Group",
                "-p",
                "ActiveState",
            ],
        ).stdout
    )
    job_topic = config["kafka"]["topics"][0]
    probe = KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="kafkalab-bench")
    try:
        partitions = len(probe.partitions_for_topic(job_topic) or []) or PARTITIONS
    finally:
        probe.close()
    topic = f"{BENCH_PREFIX}{run}-spark"
    bench_unit = f"kafkalab-bench-spark-{run}"
    data_dir = f"{SPARK_BENCH_DIR}/{run}"
    bench_config = f"{data_dir}/job.toml"
    result: dict[str, Any] = {
        "settings": {
            "job": f"{SPARK_SERVICE}'s code and settings ({SPARK_JOB_CONFIG}) on topic {topic}, as unit {bench_unit}",
            "trigger_interval": config["stream"]["trigger_interval"],
            "max_offsets_per_trigger": config["kafka"]["max_offsets_per_trigger"],
            "partitions": partitions,
            "replication_factor": REPLICATION,
            "cores_max": submit.get("spark.cores.max"),
            "executor_memory": submit.get("spark.executor.memory"),
            "driver_memory": submit.get("spark.driver.memory"),
            "master": submit.get("spark.master"),
            "producer": "kafka-python on the controller, acks=all, idempotent, JSON events (kafkalab.e2e)",
            "latency": "send time on the controller to the commit of the micro-batch holding the record "
            "(trigger start + triggerExecution, from the job's progress log)",
            "service_paused": f"{SPARK_SERVICE} is stopped while the bench job holds the workers' cores",
        }
    }
    was_active = unit.get("ActiveState") == "active"
    user, group = unit.get("User") or "root", unit.get("Group") or "root"

    def tail_log() -> str:
        r = ansible.run(master, ["journalctl", "-u", bench_unit, "--no-pager", "-o", "cat", "-n", "5"], check=False)
        return " | ".join(r.stdout.splitlines())[-600:]

    def wait_committed(records: Iterable[tuple[int, int]], limit: float) -> None:
        wanted = end_offsets_wanted(records)
        r = ansible.run(
            master,
            [
                "python3",
                "-c",
                _WAIT_SCRIPT,
                f"{data_dir}/status.json",
                topic,
                json.dumps(wanted),
                str(limit),
                bench_unit,
            ],
            timeout=limit + 120,
            check=False,
        )
        if not r.ok:
            raise MeasurementError(
                f"the bench job did not commit up to {wanted}: {r.stdout.strip()} "
                f"(journalctl -u {bench_unit} on {master}: {tail_log()})"
            )

    try:
        create_topic(cluster.bootstrap, topic, partitions, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)})
        say(f"spark: producing a backlog of {backlog_records} events into {topic}")
        _, backlog, failed = produce_numbered(cluster.bootstrap, topic, backlog_records, client_id="kafkalab-bench")
        if failed:
            raise MeasurementError(f"{len(failed)} backlog events were not acknowledged")
        say(f"spark: pausing {SPARK_SERVICE}, starting the job on {topic} as {bench_unit}")
        ansible.run(master, ["systemctl", "stop", SPARK_SERVICE], timeout=180)
        ansible.run(master, ["install", "-d", "-o", user, "-g", group, "-m", "0755", data_dir])
        copied = ansible.module(
            master,
            "ansible.builtin.copy",
            {
                "dest": bench_config,
                "content": to_toml(bench_job_config(config, topic, data_dir, "kafkalab-bench")),
                "owner": user,
                "group": group,
                "mode": "0644",
            },
        ).get(master)
        if copied is None or not copied.ok:
            raise MeasurementError(f"cannot write {bench_config}: {copied.msg if copied else 'no result'}")
        env = shlex.split(unit.get("Environment", ""))
        argv = with_config(execstart_argv(unit.get("ExecStart", "")), bench_config)
        ansible.run(
            master,
            [
                "systemd-run",
                f"--unit={bench_unit}",
                "--collect",
                f"--uid={user}",
                f"--gid={group}",
                f"--working-directory={data_dir}",
                *(f"--setenv={e}" for e in env),
                "--",
                *argv,
            ],
        )
        say("spark: waiting for the job to drain the backlog")
        wait_committed(((r.partition, r.offset) for r in backlog), 600)
        steady_started = time.time()
        say(f"spark: producing {rate:g} events/s for {seconds:g} s")
        steady = produce_at_rate(cluster.bootstrap, topic, rate, seconds)
        wait_committed(((p, o) for p, o, _ in steady), 300)
        log = ansible.run(
            master,
            [
                "sh",
                "-c",
                f"journalctl -u {shlex.quote(bench_unit)} --no-pager -o cat | grep -F 'progress query=records'",
            ],
        ).stdout
        batches = parse_progress(log, topic)
        backlog_batches = [b for b in batches if b.started < steady_started]
        steady_batches = [b for b in batches if b.started >= steady_started]
        latencies, unmatched = e2e_latencies_ms(steady, batches)
        if not latencies:
            raise MeasurementError("no steady record was found in a committed batch of the job's progress log")
        result["batches"] = [
            {"batch_id": b.batch_id, "started": b.started, "duration_s": b.duration_s, "rows": b.rows}
            for b in batches
            if b.rows
        ]
        result["backlog"] = {"records": len(backlog)} | processed_rate(backlog_batches)
        result["steady"] = {
            "rate_per_s": rate,
            "seconds": seconds,
            "records": len(steady),
            "records_without_batch": unmatched,
            "latency_ms": latency_summary(latencies),
            "latency_samples_ms": [round(v, 1) for v in latencies],
        } | {k: v for k, v in processed_rate(steady_batches).items() if k in ("rows_per_s", "batches", "busy_s")}
        count, size, took = read_rate(cluster.bootstrap, topic)
        result["raw_consumer"] = {
            "client": "kafka-python, no group, no decoding",
            "records": count,
            "records_per_s": count / took,
            "mib_per_s": size / took / MIB,
        }
    finally:
        cleanup: list[str] = []
        for argv in (
            ["systemctl", "stop", bench_unit],
            ["rm", "-rf", "--one-file-system", data_dir],
            ["rmdir", "--ignore-fail-on-non-empty", SPARK_BENCH_DIR],
            *([["systemctl", "start", SPARK_SERVICE]] if was_active else []),
        ):
            r = ansible.run(master, argv, timeout=300, check=False)
            if not r.ok and "not loaded" not in r.stderr:
                cleanup.append(f"{shlex.join(argv)}: {(r.stderr or r.msg).strip()[-200:]}")
        try:
            delete_bench_topics(cluster.bootstrap, [topic])
        except Exception as exc:  # reported; the next run removes kafkalab-bench-* leftovers
            cleanup.append(f"deleting {topic}: {exc}")
        if cleanup:
            result["cleanup_error"] = "; ".join(cleanup)
    return result


def bench(args: argparse.Namespace) -> dict[str, Any]:
    root = Path.cwd()
    started = time.monotonic()
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    run = uuid.uuid4().hex[:6]
    doc: dict[str, Any] = {
        "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inventory": args.inventory,
        "run": run,
        "sections": list(args.only),
        "load_average": {"start": loadavg()},
    }
    ansible = Ansible(args.inventory)
    if "provisioning" in args.only:
        doc["provisioning"] = provisioning(ansible, args.cold, out_dir, root)
    groups = ansible.groups()
    brokers = groups.get("kafka_broker") or []
    masters = groups.get("spark_master") or []
    if not brokers:
        raise MeasurementError(f"inventory {args.inventory} has no hosts in group kafka_broker")
    doc["machine"] = machine(ansible, sorted({*brokers, *masters}))
    cluster = discover(ansible, brokers, args.bootstrap)
    doc["cluster"] = {"bootstrap": cluster.bootstrap, "brokers": brokers, "tool_host": cluster.tool_host}
    leftovers = delete_bench_topics(cluster.bootstrap)
    if leftovers:
        say(f"removed {len(leftovers)} bench topic(s) left by an interrupted run: {', '.join(leftovers)}")
        doc["cluster"]["removed_leftover_topics"] = leftovers
    if "physical" in args.only:
        doc["physical"] = physical(ansible, cluster)
    if "kafka" in args.only:
        doc["kafka"] = kafka_section(ansible, cluster, doc, run, args.scale)
    if "spark" in args.only:
        if not masters:
            doc["spark"] = {"error": f"inventory {args.inventory} has no hosts in group spark_master"}
        else:
            doc["spark"] = measured(
                "spark: the job on a bench topic",
                lambda: spark_section(
                    ansible,
                    cluster,
                    masters[0],
                    run,
                    max(1000, int(args.spark_backlog * args.scale)),
                    args.spark_rate,
                    args.spark_seconds,
                ),
            )
    doc["load_average"]["end"] = loadavg()
    doc["duration_s"] = round(time.monotonic() - started, 1)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inventory", "-i", default="inventories/lab", help="inventory (default: the lab)")
    cold = parser.add_mutually_exclusive_group(required=True)
    cold.add_argument(
        "--cold",
        dest="cold",
        action="store_true",
        help="destroy and recreate the lab's hosts, then time a cold converge (a lab inventory only)",
    )
    cold.add_argument(
        "--no-cold",
        dest="cold",
        action="store_false",
        help="do not recreate hosts: only the no-op re-run is timed (any inventory)",
    )
    parser.add_argument("--out", type=Path, default=Path(".cache/bench"), help="where bench.json and the plots go")
    parser.add_argument(
        "--bootstrap", help="bootstrap servers (default: each broker's advertised inter-broker listener)"
    )
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {','.join(SECTIONS)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the record counts (e.g. 0.1 for a try)")
    parser.add_argument("--spark-backlog", type=int, default=150_000, help="events drained by the job at once")
    parser.add_argument("--spark-rate", type=float, default=500, help="steady events/s for the latency figure")
    parser.add_argument("--spark-seconds", type=float, default=40, help="how long the steady stream runs")
    args = parser.parse_args(argv)
    args.only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(args.only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {','.join(SECTIONS)}")
    if args.cold and "provisioning" in args.only:
        from kafkalab.lab import LabError, read_inventory

        try:
            read_inventory(args.inventory)
        except LabError as exc:
            parser.error(
                f"--cold destroys and recreates the hosts, which only a lab inventory can do ({exc}); "
                "use --no-cold (make bench BENCH_COLD=0) to time only the no-op re-run"
            )
    try:
        doc = bench(args)
    except MeasurementError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    table = render_table(doc)
    (args.out / "bench.txt").write_text(table)
    plots = write_plots(doc, args.out)
    sys.stdout.write(table)
    print(f"(JSON: {args.out / 'bench.json'}; plots: {', '.join(str(p) for p in plots) or 'none'})")
    return 1 if errors_in(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
