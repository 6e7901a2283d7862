"""The short table `make bench` prints (and writes to bench.txt), and the measurements a document lacks.

Pure functions of the bench document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalab.bench.settings import DD_MIB, IPERF_SECONDS


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


def num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _broker_cpu(r: Mapping[str, Any]) -> str:
    used = r.get("broker_cpu") or {}
    if not used:
        return ""
    return f"{num(used.get('cpu_s_total'), 1)} s {num(used.get('ms_per_mib'))} ms/MiB"


def _agents(settings: Mapping[str, Any]) -> str:
    agents = settings.get("broker_java_agents")
    if not isinstance(agents, Mapping) or "error" in agents:
        return f"java agents unknown ({(agents or {}).get('error', 'not read')})"
    names = sorted({a for found in agents.values() for a in found})
    return f"java agents in the brokers: {', '.join(names) or 'none'}"


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


def _kafka_table(kafka: Mapping[str, Any]) -> list[str]:
    """One listener's producers and consumers (the kafka section, or one of kafka_over)."""
    out: list[str] = []
    if kafka:
        s = kafka.get("settings") or {}
        listener = s.get("listener") or {}
        over = f" over {listener.get('name')} ({listener.get('protocol')})" if listener else ""
        out += [
            "",
            f"Kafka producers{over}: RF {s.get('replication_factor')}, {s.get('partitions')} partitions, "
            f"min.insync.replicas {s.get('min_insync_replicas')}, linger.ms {s.get('linger_ms')}, "
            f"batch.size {s.get('batch_size')}, unthrottled",
            f"  {'client':<13} {'size':>5} {'acks':>4} {'records':>8} {'rec/s':>8} {'MiB/s':>7} "
            f"{'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8} {'of disk':>7} {'of net':>7} {'broker CPU':>13}",
        ]
        for r in kafka.get("producers") or []:
            head = f"  {r['client']:<13} {r['record_size']:>5} {r['acks']:>4} {r['records']:>8} "
            if r.get("error"):
                out.append(head + f"NOT MEASURED: {r['error']}")
                continue
            lat = r.get("latency_ms") or {}
            out.append(
                head + f"{num(r['records_per_s']):>8} {num(r['mib_per_s'], 2):>7} {num(lat.get('p50')):>7} "
                f"{num(lat.get('p99')):>7} {num(lat.get('p99.9')):>8} "
                f"{_pct(r.get('of_disk')):>7} {_pct(r.get('of_loopback')):>7} {_broker_cpu(r):>13}"
            )
        out += [
            "  Kafka consumers: the acks=all topic of the same client and size, from the beginning",
            f"  {'client':<13} {'size':>5} {'':>4} {'records':>8} {'rec/s':>8} {'MiB/s':>7} "
            f"{'':>7} {'':>7} {'':>8} {'':>7} {'of net':>7} {'broker CPU':>13}",
        ]
        for r in kafka.get("consumers") or []:
            head = f"  {r['client']:<13} {r['record_size']:>5} {'':>4} {r['records']:>8} "
            if r.get("error"):
                out.append(head + f"NOT MEASURED: {r['error']}")
                continue
            out.append(
                head + f"{num(r['records_per_s']):>8} {num(r['mib_per_s'], 2):>7} {'':>7} {'':>7} {'':>8} "
                f"{'':>7} {_pct(r.get('of_loopback')):>7} {_broker_cpu(r):>13}"
            )
        if kafka.get("fraction_note"):
            out.append(f"  disk/net: {kafka['fraction_note']}")
        out.append(
            "  broker CPU: CPU seconds the brokers' Kafka processes used during the run (all brokers) and per MiB; "
            + _agents(s)
        )
        idle = kafka.get("idle") or {}
        if idle:
            used = idle.get("broker_cpu") or {}
            out.append(
                "  brokers at rest: "
                + (
                    f"NOT MEASURED: {idle['error']}"
                    if idle.get("error")
                    else f"{_pct(used.get('cores_each'))} of a core each over {num(used.get('seconds'), 1)} s "
                    f"({num(used.get('cpu_s_total'), 2)} CPU s in all)"
                )
            )
    return out


def _listener_ratios(first: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """rec/s over another listener as a share of the first's, run by run (same client, size and acks)."""

    def rates(section: Mapping[str, Any], kind: str) -> dict[tuple[Any, ...], float]:
        return {
            (r["client"], r["record_size"], r.get("acks", "")): r["records_per_s"]
            for r in section.get(kind) or []
            if not r.get("error") and r.get("records_per_s")
        }

    name = ((other.get("settings") or {}).get("listener") or {}).get("name", "?")
    base = ((first.get("settings") or {}).get("listener") or {}).get("name", "the first listener")
    out = [f"  {name} against {base}, rec/s (same client, size, acks):"]
    for kind in ("producers", "consumers"):
        mine, theirs = rates(other, kind), rates(first, kind)
        parts = [
            f"{client} {size} B{f' acks={acks}' if acks else ''} {_pct(mine[key] / theirs[key])}"
            for key in mine
            if key in theirs
            for client, size, acks in [key]
        ]
        if parts:
            out.append(f"    {kind}: " + ", ".join(parts))
    return out


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
            f"  disk sequential write  {num(disk.get('mib_per_s'), 1):>9} MiB/s   "
            + (disk.get("error") or f"dd {DD_MIB} MiB, fdatasync, {disk.get('host')}:{disk.get('log_dir')}")
        )
        out.append(
            f"  loopback TCP           {num(net.get('mib_per_s'), 1):>9} MiB/s   "
            + (net.get("error") or f"iperf3, 1 stream, {IPERF_SECONDS} s, on the controller")
        )
    out += _kafka_table(doc.get("kafka") or {})
    for other in (doc.get("kafka_over") or {}).values():
        if other.get("error"):
            out += ["", f"Kafka over another listener: NOT MEASURED: {other['error']}"]
            continue
        out += _kafka_table(other) + _listener_ratios(doc.get("kafka") or {}, other)
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
            realtime = spark.get("realtime") or {}
            rt_lat = realtime.get("latency_ms") or {}
            out += [
                f"  settings: trigger {s.get('trigger_interval')}, max {s.get('max_offsets_per_trigger')} offsets "
                f"per trigger, {s.get('partitions')} partitions, cores.max {s.get('cores_max')}, "
                f"executor {s.get('executor_memory')}",
                f"  backlog of {num(backlog.get('records'))} drained: {num(backlog.get('rows_per_s'))} "
                f"processed rows/s ({backlog.get('batches')} batches, {num(backlog.get('busy_s'), 1)} s busy; "
                f"{_pct(backlog.get('of_raw_consumer'))} of the raw consumer); after the first batch (JVM warm-up) "
                f"{num((backlog.get('after_the_first_batch') or {}).get('rows_per_s'))} rows/s, "
                f"{_pct((backlog.get('after_the_first_batch') or {}).get('of_raw_consumer'))}",
                f"  steady {num(steady.get('rate_per_s'))} records/s for {steady.get('seconds')} s: "
                f"produce-to-Parquet p50 {num(lat.get('p50'))} ms, p95 {num(lat.get('p95'))} ms, "
                f"p99 {num(lat.get('p99'))} ms ({num(steady.get('records'))} records, "
                f"{num(steady.get('rows_per_s'))} processed rows/s busy)",
            ]
            for point in spark.get("trigger_sweep") or []:
                swept = point.get("latency_ms") or {}
                deployed = " (deployed)" if point.get("deployed") else ""
                out.append(
                    f"    archive alone, trigger {point.get('trigger_interval')}{deployed}: "
                    f"p50 {num(swept.get('p50'))} ms, p99 {num(swept.get('p99'))} ms, "
                    f"{num(point.get('batches_per_min'), 1)} batches/min"
                )
            if realtime:
                out.append(
                    f"  low-latency path ({(s.get('realtime') or {}).get('mode')}), same stream: produce-to-output "
                    f"p50 {num(rt_lat.get('p50'))} ms, p95 {num(rt_lat.get('p95'))} ms, "
                    f"p99 {num(rt_lat.get('p99'))} ms "
                    f"({realtime.get('never_forwarded')} never forwarded, {realtime.get('forwarded_more_than_once')} "
                    "more than once)"
                )
                for lost in (realtime.get("never_forwarded_records") or [])[:5]:
                    out.append(
                        f"    never forwarded: partition {lost['partition']} offset {lost['offset']}, produced at "
                        f"{lost['produced_at']}"
                    )
            out.append(
                f"  raw kafka-python consumer, same topic: {num(raw.get('records_per_s'))} records/s "
                f"({num(raw.get('records'))} records, {num(raw.get('mib_per_s'), 2)} MiB/s)"
            )
    for section in ("kafka", "spark"):
        if (doc.get(section) or {}).get("cleanup_error"):
            out.append(f"cleanup after {section} incomplete: {doc[section]['cleanup_error']}")
    errors = errors_in(doc)
    out += ["", f"measurements not taken: {len(errors)}"] + [f"  {e}" for e in errors]
    return "\n".join(out) + "\n"
