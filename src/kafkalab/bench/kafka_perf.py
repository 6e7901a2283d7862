"""The kafka section: producer and consumer throughput and latency, as fractions of the physical limits.

Kafka's own perf tools (the installed distribution, on a broker host) and kafka-python (on the controller)
get the same settings: 100 B and 1 KiB records, acks=1 and acks=all, RF 3, on bench topics deleted after.
"""

from __future__ import annotations

import os
import random
import string
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from kafka import KafkaProducer

from kafkalab import kafka_client
from kafkalab.bench.cluster import Cluster, Listener, delete_bench_groups, delete_bench_topics, process_cpu
from kafkalab.bench.measure import MeasurementError, measured
from kafkalab.bench.parsing import cpu_used, parse_consumer_perf, parse_producer_perf
from kafkalab.bench.runner import Ansible
from kafkalab.bench.settings import (
    ACKS,
    BATCH_SIZE,
    BENCH_PREFIX,
    CLIENTS,
    IDLE_SECONDS,
    LINGER_MS,
    MIB,
    MIN_INSYNC,
    PARTITIONS,
    RECORD_COUNTS,
    REPLICATION,
)
from kafkalab.bench.stats import copies_per_limit, fraction_of_limit, latency_summary
from kafkalab.e2e import create_topic, read_rate


def _payload(size: int) -> bytes:
    # Random letters, like the perf tool's payload: nothing a compressor or a cache would favour.
    return "".join(random.choices(string.ascii_uppercase, k=size)).encode()


def kafka_python_produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> dict[str, Any]:
    """What kafka-producer-perf-test measures, with kafka-python: send to acknowledgement, per record."""
    producer = KafkaProducer(
        **kafka_client.settings(),
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


def java_producer_argv(bootstrap: str, topic: str, records: int, size: int, acks: str, config: str = "") -> list[str]:
    """kafka-producer-perf-test, unthrottled, with the settings the kafka-python run gets too; `config`: the
    listener's client settings on the tool host (TLS, a SCRAM login), when the wrapper's own are not the ones.

    --producer-props and --producer.config are accepted by 3.9 and 4.x alike (4.x prefers --command-property and
    --command-config, and warns).
    """
    return [
        "env", "KAFKA_HEAP_OPTS=-Xmx512m", "kafka-producer-perf-test",
        "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        *(["--producer.config", config] if config else []),
        "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", f"linger.ms={LINGER_MS}",
        f"batch.size={BATCH_SIZE}", "client.id=kafkalab-bench",
    ]  # fmt: skip


def java_consumer_argv(bootstrap: str, topic: str, records: int, group: str, config: str = "") -> list[str]:
    """kafka-consumer-perf-test; --messages and --consumer.config are accepted by 3.9 and 4.x alike (4.x prefers
    --num-records and --command-config)."""
    return [
        "env", "KAFKA_HEAP_OPTS=-Xmx512m", "kafka-consumer-perf-test",
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
        "--timeout", "60000", "--group", group,
        *(["--consumer.config", config] if config else []),
    ]  # fmt: skip


@contextmanager
def client_settings(path: str) -> Iterator[None]:
    """While inside: the bench's kafka-python clients read `path` (a listener's settings); nothing changes for ''."""
    before = os.environ.get(kafka_client.ENV)
    if path:
        kafka_client.use(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(kafka_client.ENV, None)
        else:
            os.environ[kafka_client.ENV] = before


def _rest() -> dict[str, Any]:
    time.sleep(IDLE_SECONDS)
    return {}


def with_broker_cpu(ansible: Ansible, brokers: list[str], fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """fn's figures and the CPU time the brokers' Kafka processes used meanwhile (`broker_cpu`).

    Each reading is one Ansible run of a few seconds; the window is taken between the middles of the two, so
    the idle seconds either side of fn count as much as the clock says they lasted.
    """
    called = time.monotonic()
    before = process_cpu(ansible, brokers)
    start = (called + time.monotonic()) / 2
    figures = fn()
    called = time.monotonic()
    after = process_cpu(ansible, brokers)
    end = (called + time.monotonic()) / 2
    used = cpu_used(before, after, end - start) | {"java_agents": {h: list(p.java_agents) for h, p in before.items()}}
    moved = figures.get("mib")
    if moved:
        used["ms_per_mib"] = round(used["cpu_s_total"] * 1000 / moved, 1)
    return figures | {"broker_cpu": used}


def reachability_argv(bootstrap: str) -> list[str]:
    """A command that prints each host:port of `bootstrap` it cannot open a TCP connection to within 3 s."""
    script = 'for a in "$@"; do timeout 3 bash -c "exec 3<>/dev/tcp/${a%:*}/${a##*:}" 2>/dev/null || echo "$a"; done'
    return ["bash", "-c", script, "bash", *bootstrap.split(",")]


def unreachable_from(ansible: Ansible, host: str, bootstrap: str) -> str:
    """'' when `host` reaches every bootstrap server, else why the perf tools there cannot be measured."""
    missed = ansible.run(host, reachability_argv(bootstrap)).stdout.split()
    if not missed:
        return ""
    return (
        f"{host} (where the perf tools run) cannot reach {', '.join(missed)}: the firewall lets only the "
        "listener's client networks in. Add the broker hosts to that listener's client_networks to measure it here."
    )


def bench_topic(run: str, listener: str, client: str, size: int, acks: str) -> str:
    return f"{BENCH_PREFIX}{run}-{listener.lower()}-{client}-{size}b-acks{acks}"


def kafka_section(
    ansible: Ansible,
    cluster: Cluster,
    doc: Mapping[str, Any],
    run: str,
    scale: float,
    listener: Listener | None = None,
    idle: bool = True,
) -> dict[str, Any]:
    """The producers and consumers over one listener (default: the cluster's first, the inter-broker one), in
    that listener's client settings; `idle`: also read the brokers' CPU at rest (once per bench is enough)."""
    listener = listener or cluster.listeners[0]
    with client_settings(listener.controller_config):
        return _kafka_section(ansible, cluster, doc, run, scale, listener, idle)


def _kafka_section(
    ansible: Ansible,
    cluster: Cluster,
    doc: Mapping[str, Any],
    run: str,
    scale: float,
    listener: Listener,
    idle: bool,
) -> dict[str, Any]:
    bootstrap = listener.bootstrap
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
            "bootstrap": bootstrap,
            "listener": {"name": listener.name, "protocol": listener.protocol},
        },
        "fraction_note": (
            f"producers: MiB/s x {copies:g} (RF {REPLICATION}: log dirs and network hops, {where}) over the disk "
            "write and loopback limits; consumers: MiB/s over loopback"
        ),
        "producers": [],
        "consumers": [],
    }
    if idle:
        result["idle"] = measured(
            f"brokers at rest for {IDLE_SECONDS} s (their CPU time)",
            partial(with_broker_cpu, ansible, cluster.brokers, _rest),
        )
        # The agents the brokers ran, as their command lines said at the first reading (each run records its own).
        result["settings"]["broker_java_agents"] = (result["idle"].get("broker_cpu") or {}).get(
            "java_agents", {"error": result["idle"].get("error", "not read")}
        )
    else:
        first = (doc.get("kafka") or {}).get("settings") or {}
        result["settings"]["broker_java_agents"] = first.get("broker_java_agents", {"error": "not read"})
    # The perf tools run on a broker host: a listener whose firewall rules do not let that host in would only time
    # out, run after run. Said once, up front, with the fix.
    unreachable = unreachable_from(ansible, cluster.tool_host, bootstrap)
    topics: list[str] = []
    groups: list[str] = []

    def produce(client: str, topic: str, records: int, size: int, acks: str) -> dict[str, Any]:
        topics.append(topic)
        create_topic(bootstrap, topic, PARTITIONS, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)})
        if client == "kafka-python":
            figures = kafka_python_produce(bootstrap, topic, records, size, acks)
        else:
            if unreachable:
                raise MeasurementError(unreachable)
            argv = java_producer_argv(bootstrap, topic, records, size, acks, listener.node_config)
            figures = parse_producer_perf(ansible.run(cluster.tool_host, argv).stdout)
        return figures | {
            "mib": records * size / MIB,
            "of_disk": fraction_of_limit(figures["mib_per_s"], disk_limit, copies),
            "of_loopback": fraction_of_limit(figures["mib_per_s"], net_limit, copies),
        }

    def consume(client: str, topic: str, records: int) -> dict[str, Any]:
        if client == "kafka-python":
            count, size_bytes, seconds = read_rate(bootstrap, topic)
            figures: dict[str, Any] = {
                "records": count,
                "records_per_s": count / seconds,
                "mib_per_s": size_bytes / seconds / MIB,
            }
        else:
            if unreachable:
                raise MeasurementError(unreachable)
            group = f"{topic}-consumer"
            groups.append(group)
            argv = java_consumer_argv(bootstrap, topic, records, group, listener.node_config)
            figures = parse_consumer_perf(ansible.run(cluster.tool_host, argv).stdout)
        return figures | {
            "mib": records * size / MIB,
            "of_loopback": fraction_of_limit(figures["mib_per_s"], net_limit),
        }

    try:
        for client in CLIENTS:
            for size, records in counts.items():
                for acks in ACKS:
                    topic = bench_topic(run, listener.name, client, size, acks)
                    result["producers"].append(
                        measured(
                            f"{client} producer: {size} B x {records}, acks={acks}",
                            partial(
                                with_broker_cpu,
                                ansible,
                                cluster.brokers,
                                partial(produce, client, topic, records, size, acks),
                            ),
                            {"client": client, "record_size": size, "acks": acks, "records": records, "topic": topic},
                        )
                    )
            for size, records in counts.items():
                topic = bench_topic(run, listener.name, client, size, "all")
                result["consumers"].append(
                    measured(
                        f"{client} consumer: {size} B x {records}",
                        partial(with_broker_cpu, ansible, cluster.brokers, partial(consume, client, topic, records)),
                        {"client": client, "record_size": size, "records": records, "topic": topic},
                    )
                )
    finally:
        try:
            delete_bench_topics(bootstrap, topics)
            delete_bench_groups(bootstrap, groups)
        except Exception as exc:  # reported; the topics carry the bench prefix and the next run removes them
            result["cleanup_error"] = f"{type(exc).__name__}: {exc}"
    return result
