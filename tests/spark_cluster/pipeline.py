"""Helpers of the Spark pipeline suite: waiting on the job's status, producing paced events, the Spark master's
and the drivers' own views (their JSON and REST APIs), and accounting for a run's events in both outputs (the
Parquet archive through Spark, the low-latency topic through Kafka)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab import kafka_client
from kafkalab.e2e import DeliveryReport, Record, compare, encode

from .conftest import SparkNode


def wait_for(what: str, check: Any, timeout: float, interval: float = 3.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def committed(spark_node: SparkNode, query: str, records: list[Record], fully: bool = True) -> bool:
    """Whether the job's last committed batch of `query` (its status file: the last batch this process ran, or,
    before it ran one, the checkpoint it resumed from) covers the records' offsets: all of them (fully), or
    some of them. Cheap enough to poll, unlike reading the output through Spark."""
    try:
        status = spark_node.status()
        entry = status["queries"][query]
        if "last_batch" in entry:
            end = entry["last_batch"]["end_offset"][spark_node.topic]
        else:  # nothing new since this process started: everything up to its checkpoint is committed
            end = status["started_from"][query]["checkpoint"]["offsets"][spark_node.topic]
    except (KeyError, ValueError, TypeError):  # restarted and not reported yet, or the file is being replaced
        return False
    last: dict[int, int] = {}
    first: dict[int, int] = {}
    for r in records:
        last[r.partition] = max(last.get(r.partition, -1), r.offset)
        first[r.partition] = min(first.get(r.partition, r.offset), r.offset)
    if fully:
        return all(end.get(str(p), 0) > o for p, o in last.items())
    return any(end.get(str(p), 0) > o for p, o in first.items())


def master_state(spark_node: SparkNode) -> dict[str, Any]:
    """The Spark master's own view (its /json/ endpoint): workers, their cores in use, the running apps."""
    master = spark_node.submit_conf("spark.master").removeprefix("spark://")
    return get_json(f"http://{master.split(':')[0]}:8080/json/")  # type: ignore[no-any-return]


def produce_paced(
    bootstrap: str,
    topic: str,
    run_id: str,
    first_seq: int,
    count: int,
    chunks: int,
    until: threading.Event | None = None,
) -> list[Record]:
    """Keep producing numbered events (acks=all, idempotent) in chunks of count // chunks, a little at a time:
    `chunks` of them, and then on until `until` is set, when given."""
    producer = KafkaProducer(
        **kafka_client.settings(), bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5
    )
    acked: list[Record] = []
    try:
        per_chunk = count // chunks
        chunk = -1
        while (chunk := chunk + 1) < chunks or (until is not None and not until.is_set()):
            seqs = range(first_seq + chunk * per_chunk, first_seq + (chunk + 1) * per_chunk)
            futures = [
                (seq, producer.send(topic, key=f"key-{seq % 64}".encode(), value=encode(run_id, seq))) for seq in seqs
            ]
            producer.flush(timeout=120)
            for seq, future in futures:
                md = future.get(timeout=60)
                acked.append(Record(md.partition, md.offset, f"key-{seq % 64}", seq))
            time.sleep(3)
    finally:
        producer.close(timeout=30)
    return acked


def end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    consumer = KafkaConsumer(**kafka_client.settings(), bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or [])]
        return dict(consumer.end_offsets(parts))
    finally:
        consumer.close()


def read_from(bootstrap: str, start: dict[TopicPartition, int], done: Any, timeout: float) -> list[Any]:
    """Every record after `start` until done(records) holds or the timeout passes."""
    consumer = KafkaConsumer(**kafka_client.settings(), bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign(list(start))
    for tp, offset in start.items():
        consumer.seek(tp, offset)
    records: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not done(records):
            for batch in consumer.poll(timeout_ms=1000).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def driver_executors(spark_node: SparkNode, ui_port: int) -> list[dict[str, Any]]:
    """The executors of the application whose driver serves its UI on ui_port (its REST API, /api/v1): each
    with hostPort and its task counts; the driver itself is left out."""
    host = str(spark_node.submit_conf("spark.driver.host"))
    apps = get_json(f"http://{host}:{ui_port}/api/v1/applications")
    executors = get_json(f"http://{host}:{ui_port}/api/v1/applications/{apps[0]['id']}/executors")
    return [e for e in executors if e["id"] != "driver"]


def worker_executors(worker: dict[str, Any]) -> list[dict[str, Any]]:
    """What a worker (an entry of the master's /json/ workers) says it runs, from its own API."""
    return list(get_json(f"{worker['webuiaddress']}/json/")["executors"])


def archive_report(spark_node: SparkNode, run_id: str, acked: list[Record]) -> tuple[DeliveryReport, dict[str, Any]]:
    """The run's rows in the Parquet archive (read through Spark, committed batches only), against what was
    acknowledged: same key and sequence at the same partition and offset, each once."""
    report = spark_node.audit("--run", run_id, "--records")
    rows = report["run"]["records"]
    # Parquet keeps no order: rows are put in offset order before comparing.
    consumed = sorted(Record(partition, offset, key, seq) for _, partition, offset, key, seq in rows)
    return compare(acked, consumed), report


@dataclass
class Forwarded:
    """What the low-latency path wrote for a set of input positions: how often each reached the output topic
    (at least once is its promise; a consumer keyed on the position reads each once) and the dead-letter
    reasons of the malformed ones."""

    good: Counter[tuple[int, int]] = field(default_factory=Counter)
    dead: dict[tuple[int, int], str] = field(default_factory=dict)
    latencies_ms: list[int] = field(default_factory=list)


def forwarded(
    records: list[Any], source_topic: str, rt: dict[str, Any], wanted: set[tuple[int, int]], bad: set[tuple[int, int]]
) -> Forwarded:
    result = Forwarded()
    for record in records:
        doc = json.loads(record.value)
        if doc["source_topic"] != source_topic:
            continue
        position = (doc["partition"], doc["offset"])
        if record.topic == rt["output_topic"] and position in wanted:
            result.good[position] += 1
            result.latencies_ms.append(record.timestamp - doc["kafka_timestamp_ms"])
        elif record.topic == rt["dead_letter_topic"] and position in bad:
            result.dead[position] = doc["reason"]
    return result


def read_forwarded(
    spark_node: SparkNode,
    start: dict[TopicPartition, int],
    wanted: set[tuple[int, int]],
    bad: set[tuple[int, int]] = frozenset(),  # type: ignore[assignment]
    timeout: float = 180,
) -> Forwarded:
    """Read the low-latency path's topics from `start` until every wanted and bad position arrived (or the
    timeout passed)."""
    rt = spark_node.config["realtime"]

    def complete(records: list[Any]) -> bool:
        found = forwarded(records, spark_node.topic, rt, wanted, bad)
        return len(found.good) == len(wanted) and len(found.dead) == len(bad)

    return forwarded(read_from(spark_node.bootstrap, start, complete, timeout), spark_node.topic, rt, wanted, bad)


def realtime_start(spark_node: SparkNode) -> dict[TopicPartition, int]:
    rt = spark_node.config["realtime"]
    return end_offsets(spark_node.bootstrap, [rt["output_topic"], rt["dead_letter_topic"]])


class PacedProducer:
    """produce_paced in a thread, for events to keep arriving while the test disturbs the pipeline: `chunks`
    chunks at least, and with `until_joined` on until join() is called."""

    def __init__(
        self, spark_node: SparkNode, run_id: str, first_seq: int, count: int, chunks: int, until_joined: bool = False
    ) -> None:
        self.acked: list[Record] = []
        self.errors: list[BaseException] = []
        self._joined = threading.Event() if until_joined else None

        def produce() -> None:
            try:
                acked = produce_paced(
                    spark_node.bootstrap, spark_node.topic, run_id, first_seq, count, chunks, self._joined
                )
                self.acked.extend(acked)
            except BaseException as exc:  # reported by join(), not lost in the thread
                self.errors.append(exc)

        self._thread = threading.Thread(target=produce)
        self._thread.start()

    def join(self, timeout: float = 300) -> list[Record]:
        if self._joined is not None:
            self._joined.set()
        self._thread.join(timeout=timeout)
        assert not self._thread.is_alive(), "the producer did not finish"
        assert not self.errors, self.errors
        return self.acked


def elapsed_until(check: Callable[[], Any], since: float, timeout: float, interval: float = 1.0) -> float:
    """Seconds from `since` (time.time()) until check() holds, polling."""
    wait_for("the condition", check, timeout, interval)
    return time.time() - since
