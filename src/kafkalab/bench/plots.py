"""PNG plots of the bench document (matplotlib's Agg backend), each naming its settings and the machine."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

from kafkalab.bench.report import fmt_duration, machine_line, num


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
    disk = num((phys.get("disk") or {}).get("mib_per_s"))
    loopback = num((phys.get("loopback") or {}).get("mib_per_s"))
    return fig, (
        f"RF {s.get('replication_factor')}, {s.get('partitions')} partitions, min.insync.replicas "
        f"{s.get('min_insync_replicas')}, linger.ms {s.get('linger_ms')}, batch.size {s.get('batch_size')}, "
        f"unthrottled; records per run: {records}; limits: disk {disk} MiB/s, loopback {loopback} MiB/s; "
        f"{kafka.get('fraction_note', '')}"
    )


def _plot_listeners(plt: Any, doc: Mapping[str, Any]) -> tuple[Any, str] | None:
    """Records/s of each run over each listener the kafka section measured (the lab: PLAINTEXT against TLS+SCRAM)."""
    sections = [doc.get("kafka") or {}, *(doc.get("kafka_over") or {}).values()]
    sections = [k for k in sections if k.get("producers") and not k.get("error")]
    if len(sections) < 2:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(13, 6))
    for ax, kind in zip(axes, ("producers", "consumers"), strict=True):
        keys = sorted(
            {(r["client"], r["record_size"], r.get("acks", "")) for k in sections for r in k[kind] if "error" not in r}
        )
        width = 0.8 / len(sections)
        for i, section in enumerate(sections):
            listener = (section.get("settings") or {}).get("listener") or {}
            rates = {(r["client"], r["record_size"], r.get("acks", "")): r["records_per_s"]
                     for r in section[kind] if "error" not in r}  # fmt: skip
            ax.bar([j + i * width for j in range(len(keys))], [rates.get(key, 0) for key in keys], width,
                   label=f"{listener.get('name')} ({listener.get('protocol')})")  # fmt: skip
        labels = [f"{c} {size} B{f' acks={acks}' if acks else ''}" for c, size, acks in keys]
        ax.set_xticks(
            [j + width * (len(sections) - 1) / 2 for j in range(len(keys))], labels, fontsize=7, rotation=30, ha="right"
        )
        ax.set_title(f"{kind}: records/s per listener", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Kafka over each listener: the same runs, the same brokers, minutes apart")
    return fig, "settings as in kafka.png; each listener's clients read the settings the kafka role wrote for it"


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
        f"produce-to-Parquet latency at {num(steady.get('rate_per_s'))} records/s for {steady.get('seconds')} s",
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


def _plot_spark_latency(plt: Any, doc: Mapping[str, Any]) -> tuple[Any, str] | None:
    """Latency over the steady stream's time, both paths, with their p99 (the issue's goals: archive p99 <= 3 s,
    low-latency p99 <= 1 s at 500 records/s)."""
    spark = doc.get("spark") or {}
    steady, realtime = spark.get("steady") or {}, spark.get("realtime") or {}
    series = [
        ("Parquet archive (commit of the micro-batch)", steady, "#dd8452"),
        ("low-latency path (first output record)", realtime, "#4c72b0"),
    ]
    series = [(label, part, color) for label, part, color in series if part.get("latency_over_time")]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(12, 5))
    for label, part, color in series:
        points = part["latency_over_time"]
        p99 = (part.get("latency_ms") or {}).get("p99")
        ax.plot(
            [t for t, _ in points],
            [ms for _, ms in points],
            ".",
            markersize=2,
            color=color,
            label=f"{label}: p99 {num(p99)} ms",
        )
        if p99 is not None:
            ax.axhline(p99, color=color, linestyle="--", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("seconds into the steady stream (send time)")
    ax.set_ylabel("ms from send to output (log scale)")
    ax.legend(fontsize=8)
    ax.set_title(
        f"produce-to-output latency at {num(steady.get('rate_per_s'))} records/s for {steady.get('seconds')} s",
        fontsize=10,
    )
    s = spark.get("settings") or {}
    return fig, (
        f"archive trigger {s.get('trigger_interval')}, cores.max {s.get('cores_max')}; low-latency path "
        f"{(s.get('realtime') or {}).get('mode')} (batch duration {(s.get('realtime') or {}).get('batch_duration')}); "
        f"{s.get('partitions')} partitions RF {s.get('replication_factor')}"
    )


def write_plots(doc: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """PNG plots of the document (matplotlib's Agg backend); each names its settings and the machine."""
    matplotlib.use("Agg")  # here, not on import: importing the bench must not set a program's backend
    written = []
    for name, plot in (
        ("provisioning.png", _plot_provisioning),
        ("kafka.png", _plot_kafka),
        ("kafka-listeners.png", _plot_listeners),
        ("spark.png", _plot_spark),
        ("spark-latency.png", _plot_spark_latency),
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
