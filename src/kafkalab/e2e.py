"""End-to-end delivery check: produce a numbered stream, read it back, and account for every message.

Shared by the molecule scenarios (KRaft and ZooKeeper), `make lab` and the failover tests, so every
place that claims "nothing was lost" counts the same way: the set of acknowledged (partition, offset,
sequence) triples is compared with what a separate consumer read, per partition and in order.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from kafkalab import kafka_client


@dataclass(frozen=True, order=True)
class Record:
    """One message as the producer saw it acknowledged, or as a consumer read it."""

    partition: int
    offset: int
    key: str
    seq: int


@dataclass
class DeliveryReport:
    """What happened to an acknowledged stream: the numbers a test asserts and a person reads."""

    acked: int
    consumed: int
    lost: list[int] = field(default_factory=list)
    duplicated: list[int] = field(default_factory=list)
    unacked_extra: list[int] = field(default_factory=list)
    out_of_order_partitions: list[int] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.out_of_order_partitions or self.moved)

    def summary(self) -> str:
        return (
            f"acked={self.acked} consumed={self.consumed} lost={len(self.lost)} "
            f"duplicated={len(self.duplicated)} out_of_order_partitions={self.out_of_order_partitions} "
            f"moved={len(self.moved)} unacked_extra={len(self.unacked_extra)}"
        )


def compare(acked: Iterable[Record], consumed: Iterable[Record]) -> DeliveryReport:
    """Account for every acknowledged record in what was consumed.

    lost: acknowledged sequence numbers never consumed. duplicated: sequence numbers consumed more than
    once. moved: consumed at another partition/offset than acknowledged. out_of_order: partitions whose
    consumed order differs from the acknowledged offset order. unacked_extra: consumed but never
    acknowledged (legal with retries whose ack was lost; reported, not a failure).
    """
    acked = sorted(acked)
    consumed = list(consumed)
    by_seq = {r.seq: r for r in acked}
    counts = Counter(r.seq for r in consumed)
    seen = set(counts)
    report = DeliveryReport(acked=len(acked), consumed=len(consumed))
    report.lost = sorted(s for s in by_seq if s not in seen)
    report.duplicated = sorted(s for s, n in counts.items() if n > 1)
    report.unacked_extra = sorted(s for s in seen if s not in by_seq)
    report.moved = sorted(
        {
            r.seq
            for r in consumed
            if r.seq in by_seq and (by_seq[r.seq].partition, by_seq[r.seq].offset) != (r.partition, r.offset)
        }
    )
    acked_order: dict[int, list[int]] = defaultdict(list)
    for r in acked:  # sorted by (partition, offset)
        acked_order[r.partition].append(r.seq)
    consumed_order: dict[int, list[int]] = defaultdict(list)
    for r in consumed:
        if r.seq in by_seq:
            consumed_order[r.partition].append(r.seq)
    report.out_of_order_partitions = sorted(
        p for p, seqs in consumed_order.items() if _dedupe(seqs) != [s for s in acked_order.get(p, []) if s in seen]
    )
    return report


def _dedupe(seqs: list[int]) -> list[int]:
    out: list[int] = []
    last: set[int] = set()
    for s in seqs:
        if s not in last:
            out.append(s)
            last.add(s)
    return out


def encode(run_id: str, seq: int) -> bytes:
    return json.dumps({"run": run_id, "seq": seq, "ts_ms": int(time.time() * 1000)}).encode()


def decode(value: bytes | None) -> dict[str, Any] | None:
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def create_topic(
    bootstrap: str, topic: str, partitions: int, replication: int, configs: dict[str, str] | None = None
) -> None:
    """Create a topic (no-op if it exists with that name) and wait until every partition has a leader."""
    admin = KafkaAdminClient(**kafka_client.settings(), bootstrap_servers=bootstrap, client_id="kafkalab-e2e")
    try:
        if topic not in admin.list_topics():
            admin.create_topics(
                {topic: {"num_partitions": partitions, "replication_factor": replication, "configs": configs or {}}}
            )
        admin.wait_for_topics([topic], timeout_ms=60_000)
    finally:
        admin.close()


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete a topic this suite created (never used on user topics)."""
    admin = KafkaAdminClient(**kafka_client.settings(), bootstrap_servers=bootstrap, client_id="kafkalab-e2e")
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()


def produce_numbered(
    bootstrap: str, topic: str, count: int, run_id: str | None = None, keys: int = 64, **producer_config: Any
) -> tuple[str, list[Record], list[int]]:
    """Produce `count` keyed, numbered messages with acks=all and idempotence.

    Returns (run_id, acknowledged records, sequence numbers whose send failed).
    """
    run_id = run_id or uuid.uuid4().hex
    config: dict[str, Any] = {
        **kafka_client.settings(),
        "bootstrap_servers": bootstrap,
        "acks": "all",
        "enable_idempotence": True,
        "linger_ms": 5,
        "retries": 2**31 - 1,
        "request_timeout_ms": 30_000,
        "delivery_timeout_ms": 120_000,
        "max_in_flight_requests_per_connection": 5,
        "client_id": "kafkalab-e2e-producer",
        **producer_config,
    }
    producer = KafkaProducer(**config)
    acked: list[Record] = []
    failed: list[int] = []
    try:
        futures = [
            (seq, key, producer.send(topic, key=key.encode(), value=encode(run_id, seq)))
            for seq in range(count)
            for key in [f"key-{seq % keys}"]
        ]
        producer.flush(timeout=180)
        for seq, key, future in futures:
            try:
                md = future.get(timeout=60)
            except Exception:
                failed.append(seq)
                continue
            acked.append(Record(md.partition, md.offset, key, seq))
    finally:
        producer.close(timeout=30)
    return run_id, acked, failed


def _from_the_beginning(consumer: KafkaConsumer, topic: str) -> dict[TopicPartition, int]:
    """Assign every partition of the topic from its beginning; returns the end offsets to read up to."""
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
    if not partitions:
        raise RuntimeError(f"topic {topic} has no partitions visible to the consumer")
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    return dict(consumer.end_offsets(partitions))


def consume_run(
    bootstrap: str, topic: str, run_id: str, timeout_s: float = 120, **consumer_config: Any
) -> list[Record]:
    """Read the whole topic from the beginning up to the end offsets seen at start; keep this run's records."""
    return read_run(bootstrap, topic, run_id, timeout_s, **consumer_config)[0]


def read_run(
    bootstrap: str, topic: str, run_id: str, timeout_s: float = 120, **consumer_config: Any
) -> tuple[list[Record], dict[int, int]]:
    """consume_run, and whether it got there: (this run's records, {partition: records left unread}).

    The second part is empty when every partition was read up to the end offsets seen at start; a caller
    that reports "lost" must check it, or a read cut short by the timeout passes for lost records.
    """
    consumer = KafkaConsumer(
        **{
            **kafka_client.settings(),
            "bootstrap_servers": bootstrap,
            "group_id": None,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "client_id": "kafkalab-e2e-consumer",
            **consumer_config,
        }
    )
    records: list[Record] = []
    try:
        end = _from_the_beginning(consumer, topic)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(consumer.position(tp) < o for tp, o in end.items()):
            for tp, batch in consumer.poll(timeout_ms=1000, max_records=5000).items():
                for msg in batch:
                    data = decode(msg.value)
                    if data and data.get("run") == run_id:
                        records.append(Record(tp.partition, msg.offset, (msg.key or b"").decode(), int(data["seq"])))
        short = _unread(consumer, end)
    finally:
        consumer.close()
    return records, short


def _unread(consumer: KafkaConsumer, end: dict[TopicPartition, int]) -> dict[int, int]:
    """Records left before each partition's end offset; -1 where the position cannot be told."""
    short: dict[int, int] = {}
    for tp, o in end.items():
        try:
            position = consumer.position(tp, timeout_ms=5000)
        except KafkaError:
            position = None
        if position is None:
            short[tp.partition] = -1
        elif position < o:
            short[tp.partition] = o - position
    return short


def read_rate(bootstrap: str, topic: str, timeout_s: float = 600) -> tuple[int, int, float]:
    """Read the whole topic as fast as a plain kafka-python consumer can (no decoding, no group).

    Returns (records, value bytes, seconds): the baseline the Spark job and `make bench` compare with.
    """
    consumer = KafkaConsumer(
        **kafka_client.settings(),
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        client_id="kafkalab-read-rate",
    )
    try:
        end = _from_the_beginning(consumer, topic)
        count, size = 0, 0
        started = time.monotonic()
        deadline = started + timeout_s
        while any(consumer.position(tp) < o for tp, o in end.items()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {topic} took longer than {timeout_s:.0f} s ({count} records read)")
            for batch in consumer.poll(timeout_ms=1000, max_records=10_000).values():
                count += len(batch)
                size += sum(len(msg.value or b"") for msg in batch)
        return count, size, time.monotonic() - started
    finally:
        consumer.close()


def round_trip(
    bootstrap: str,
    topic: str,
    count: int,
    consumer_bootstrap: str | None = None,
    security: dict[str, Any] | None = None,
    consumer_security: dict[str, Any] | None = None,
) -> DeliveryReport:
    """Produce `count` messages through `bootstrap`, read them back (optionally through another address).

    security / consumer_security: the client settings of each side's listener when it is not the bootstrap
    listener (kafka_client.settings(), the default), e.g. a TLS external listener of a cluster plain inside."""
    run_id, acked, failed = produce_numbered(bootstrap, topic, count, **(security or {}))
    if failed:
        raise AssertionError(f"{len(failed)} of {count} sends were not acknowledged (first: {failed[:5]})")
    consumed = consume_run(consumer_bootstrap or bootstrap, topic, run_id, **(consumer_security or security or {}))
    return compare(acked, consumed)


# How long a stream producer (BackgroundProducer, kafkalab.load) holds records to batch them. At 100 msg/s over
# TLS on the lab's 2 cores, 5 ms sent one record per request: three brokers took 20 % of a core each and the load
# process 23 %; at 100 ms they took 8 % each and the load 9 % (top over 30 s, 2026-11-27), the same 100 msg/s with
# acks=all, idempotence and the same accounting. Acks come in batches, so the longest gap between acks reads
# about 0.1 s on an idle cluster instead of a few ms; a failover's gap (0.5 s and up) stands out as before.
STREAM_LINGER_MS = 100


class BackgroundProducer:
    """Produces a numbered, keyed stream (acks=all, idempotent) in a thread until stopped.

    Used by the failover tests: the stream keeps flowing while a broker is killed, paused or cut off,
    and afterwards `acked` is compared with what a consumer reads back. `ack_times` lets a test show
    that acknowledgements kept coming during the disruption.
    """

    def __init__(self, bootstrap: str, topic: str, rate_per_s: float = 200.0, keys: int = 64) -> None:
        self.topic = topic
        self.run_id = uuid.uuid4().hex
        self._interval = 1.0 / rate_per_s
        self._keys = keys
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.acked: list[Record] = []
        self.ack_times: list[float] = []
        self.send_times: list[float] = []  # by sequence number
        self.highest_acked = -1
        self.failed: list[int] = []
        self.sent = 0
        self._closing_diagnosis = ""
        self._producer = KafkaProducer(
            **kafka_client.settings(),
            bootstrap_servers=bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=STREAM_LINGER_MS,
            retries=2**31 - 1,
            request_timeout_ms=15_000,
            delivery_timeout_ms=180_000,
            max_in_flight_requests_per_connection=5,
            client_id="kafkalab-failover-producer",
        )
        self._thread = threading.Thread(target=self._run, name="background-producer", daemon=True)

    def start(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def _on_ack(self, seq: int, key: str) -> Any:
        def callback(md: Any) -> None:
            with self._lock:
                self.acked.append(Record(md.partition, md.offset, key, seq))
                self.ack_times.append(time.monotonic())
                self.highest_acked = max(self.highest_acked, seq)

        return callback

    def _on_error(self, seq: int) -> Any:
        def errback(_exc: Exception) -> None:
            with self._lock:
                self.failed.append(seq)

        return errback

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            key = f"key-{seq % self._keys}"
            future = self._producer.send(self.topic, key=key.encode(), value=encode(self.run_id, seq))
            future.add_callback(self._on_ack(seq, key))
            future.add_errback(self._on_error(seq))
            with self._lock:
                self.send_times.append(time.monotonic())
            seq += 1
            self.sent = seq
            time.sleep(self._interval)

    def acks_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(start <= t <= end for t in self.ack_times)

    def wait_for_ack_after(self, moment: float, timeout_s: float) -> bool:
        """Wait until a send made after `moment` (time.monotonic()) is acknowledged: the stream flows again.
        False when none was within timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                first_later = bisect.bisect_right(self.send_times, moment)
                acked = first_later < len(self.send_times) and self.highest_acked >= first_later
            if acked or time.monotonic() >= deadline:
                return acked
            time.sleep(0.2)

    def stop(self, timeout_s: float = 180) -> int:
        """Stop sending, wait for every outstanding send to be acknowledged or to fail; returns how many did
        neither within timeout_s (0 when all resolved). A flush that times out is not raised: the caller
        reports the count with diagnosis(), which says why, instead of a bare timeout from the flush."""
        self._stop.set()
        self._thread.join(timeout=10)
        with contextlib.suppress(KafkaError):  # KafkaTimeoutError: counted below
            self._producer.flush(timeout=timeout_s)
        unresolved = self.unresolved()
        self._closing_diagnosis = self.diagnosis() if unresolved else ""
        self._producer.close(timeout=30)
        return unresolved

    def unresolved(self) -> int:
        with self._lock:
            return self.sent - len(self.acked) - len(self.failed)

    def diagnosis(self) -> str:
        """What the producer's client knows, for a failure message: the leader it would send each partition of
        the topic to, and whether its metadata refresh is alive (kafka-python 3 refreshes metadata in one
        long-running task on its I/O thread; if that task has ended, nothing refreshes the leaders again)."""
        if self._closing_diagnosis:
            return self._closing_diagnosis
        cluster = getattr(self._producer, "_metadata", None)
        if cluster is None:
            return "no client metadata"
        leaders = {
            p: cluster.leader_for_partition(TopicPartition(self.topic, p))
            for p in sorted(cluster.partitions_for_topic(self.topic) or [])
        }
        loop = getattr(cluster, "_refresh_loop_future", None)
        if loop is None:
            loop_state = "not started"
        elif not loop.is_done:
            loop_state = "running"
        else:
            loop_state = f"ended ({loop.exception!r})"
        age_s = time.monotonic() - getattr(cluster, "_last_successful_refresh_ms", 0) / 1000
        return (
            f"{self.unresolved()} of {self.sent} sends unresolved; the producer's leaders for {self.topic}: {leaders}; "
            f"its metadata refresh loop: {loop_state}, last refreshed {age_s:.0f} s ago"
        )
