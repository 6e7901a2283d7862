"""Reading what the tools print: Kafka's perf tools, dd, iperf3, systemd, /proc, and ISO time stamps.

Pure functions of text; an output that holds no figure raises MeasurementError quoting its tail.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.settings import MIB

_PRODUCER_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mibps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th"
)


def parse_producer_perf(output: str) -> dict[str, Any]:
    """The final summary of kafka-producer-perf-test (the line with percentiles; progress lines have none).

    The tool's "MB/sec" is bytes / 2^20 per second: MiB/s, as everywhere in the bench.
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


def advertised(props: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Each listener a broker advertises (the controller's aside): name -> (address, security protocol)."""
    protocols = dict(
        item.strip().split(":", 1) for item in props.get("listener.security.protocol.map", "").split(",") if ":" in item
    )
    controllers = set(props.get("controller.listener.names", "").split(","))
    found: dict[str, tuple[str, str]] = {}
    for item in props.get("advertised.listeners", "").split(","):
        name, _, address = item.strip().partition("://")
        if address and name not in controllers:
            found[name] = (address, protocols.get(name, name if name in ("SSL", "SASL_SSL") else "PLAINTEXT"))
    return found


def broker_address(props: Mapping[str, str]) -> str:
    """The address a broker advertises on its inter-broker listener (the one the verification suite uses)."""
    listener = props.get("inter.broker.listener.name", "PLAINTEXT")
    found = advertised(props).get(listener)
    if not found:
        raise MeasurementError(f"no advertised {listener} listener in {props.get('advertised.listeners')!r}")
    return found[0]


def bench_listeners(props: Mapping[str, Mapping[str, str]], brokers: list[str]) -> list[tuple[str, str, str]]:
    """(name, protocol, bootstrap servers) of each listener the kafka section measures: the inter-broker one first,
    then every other the brokers advertise on the same host (so the perf tools on a broker host and the clients on
    the controller both reach it; a NAT listener's advertised address is for outside clients), each on its own."""
    first = props[brokers[0]]
    inter_broker = first.get("inter.broker.listener.name", "PLAINTEXT")
    home = {b: broker_address(props[b]).rsplit(":", 1)[0] for b in brokers}  # raises without the listener
    chosen = []
    for name in [inter_broker] + [n for n in advertised(first) if n != inter_broker]:
        found = {b: advertised(props[b]).get(name) or ("", "") for b in brokers}
        if all(address.rsplit(":", 1)[0] == home[b] for b, (address, _) in found.items()):
            chosen.append((name, found[brokers[0]][1], ",".join(address for address, _ in found.values())))
    return chosen


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


def without_option(argv: Sequence[str], option: str) -> list[str]:
    """The same command without `option VALUE` (the unit's --stop-file: a bench run is stopped by systemd)."""
    out = list(argv)
    while option in out[:-1]:
        at = out.index(option)
        del out[at : at + 2]
    return out


@dataclass(frozen=True)
class ProcessCpu:
    """One reading of a service's main process: its PID, the CPU time it has used, the java agents it runs."""

    pid: int
    cpu_s: float
    java_agents: tuple[str, ...]


_JAVA_AGENT = re.compile(r"-javaagent:([^=\s]+)")


def parse_process_cpu(text: str) -> ProcessCpu:
    """What kafkalab.bench.cluster.PROCESS_CPU_SCRIPT prints: the main PID, its /proc/PID/stat line, CLK_TCK,
    its command line.

    utime and stime are fields 14 and 15 of stat(5); the command (field 2) may hold spaces and parentheses,
    so the fields are counted from the last ')'.
    """
    lines = text.splitlines()
    if len(lines) < 3 or not lines[0].strip().isdigit() or lines[0].strip() == "0":
        raise MeasurementError(f"the service has no running main process: {text.strip()[-200:]!r}")
    fields = lines[1].rpartition(")")[2].split()
    if len(fields) < 13 or not lines[2].strip().isdigit():
        raise MeasurementError(f"cannot read CPU times from {lines[1][:200]!r}")
    ticks = int(lines[2])
    agents = tuple(posixpath.basename(m) for m in _JAVA_AGENT.findall(lines[3] if len(lines) > 3 else ""))
    return ProcessCpu(pid=int(lines[0]), cpu_s=(int(fields[11]) + int(fields[12])) / ticks, java_agents=agents)


def cpu_used(before: Mapping[str, ProcessCpu], after: Mapping[str, ProcessCpu], seconds: float) -> dict[str, Any]:
    """CPU seconds each host's service used between two readings, their sum and the share of one core.

    A process that restarted in between (another PID) has no figure: its counter started again.
    """
    hosts: dict[str, float] = {}
    for host, start in sorted(before.items()):
        end = after.get(host)
        if end is None or end.pid != start.pid:
            raise MeasurementError(
                f"{host}: the service restarted during the measurement (PID {start.pid} -> "
                f"{end.pid if end else 'none'})"
            )
        hosts[host] = round(end.cpu_s - start.cpu_s, 2)
    total = sum(hosts.values())
    return {
        "seconds": round(seconds, 1),
        "cpu_s": hosts,
        "cpu_s_total": round(total, 2),
        "cores_each": round(total / len(hosts) / seconds, 4) if hosts and seconds > 0 else None,
    }


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


def iso_seconds(stamp: str) -> float:
    """Epoch seconds of an ISO 8601 time stamp (Ansible's and Spark's end in Z)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
