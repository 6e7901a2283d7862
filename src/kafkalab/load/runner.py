"""The background load process (`python -m kafkalab.load run --state DIR`, spawned by `start`).

Two parts run side by side until SIGTERM:

- a producer writing e2e's numbered, keyed stream (acks=all, idempotent, retries forever within a
  180 s delivery timeout, like e2e.BackgroundProducer) at a fixed rate; every ack goes to acked.jsonl
  with its time, every send that ends in an error to failed.jsonl;
- a consumer-group member reading the topic (manual commits, synchronous, about once a second) that
  logs what it read of this run to group.jsonl and each commit the broker accepted to commits.jsonl.

Both must ride out brokers that are down for tens of seconds, a coordinator that moves and the
rebalances that follow: errors are logged and retried, never fatal. A member that reads nothing of a
partition for STALL_S while the producer's records keep being acked there is stalled (a client that
hangs, as kafka-python consumers have been seen to after rolling restarts): the process logs what it
knows (the member thread's stack, its last reads and commits), retires it, and starts a new member of
the same group, which resumes from the group's committed offsets. The restarts are counted in done.json
and reported by `stop`; records the group never read still fail it. On SIGTERM the producer stops
sending and waits for every outstanding send to end; the member then reads up to the end offsets,
commits, and the process writes done.json and exits 0 (1 if it could not finish cleanly).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkalab import kafka_client
from kafkalab.e2e import STREAM_LINGER_MS, decode, encode
from kafkalab.load.files import JsonlWriter, StateDir, read_json, write_json

log = logging.getLogger("kafkalab.load")

DELIVERY_TIMEOUT_MS = 180_000
# `stop` waits 300 s for the process; the whole shutdown (flush, then drain) must fit well inside that.
SHUTDOWN_BUDGET_S = 270.0
DRAIN_TIMEOUT_S = 120.0
COMMIT_INTERVAL_S = 1.0
FLUSH_INTERVAL_S = 0.5
# A rebalance, a coordinator move or a partition without a leader during a restart stops a member's reads for
# seconds (the longest ack gaps measured are under 1 s, a rebalance is bounded by the 10 s session timeout).
STALL_S = 120.0
# A member that stops polling (hung) leaves the group after this, so its partitions go to the next member.
MAX_POLL_INTERVAL_MS = 60_000


class StreamProducer:
    """Sends the numbered stream in a thread; records acks and failures as they complete."""

    def __init__(self, config: dict[str, Any], acked: JsonlWriter, failed: JsonlWriter) -> None:
        self._topic = str(config["topic"])
        self._run_id = str(config["run_id"])
        self._keys = int(config.get("keys", 64))
        self._interval = 1.0 / float(config["rate"])
        self._acked, self._failed = acked, failed
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._in_flight: dict[int, str] = {}
        self.sent = 0
        self.acked_at: dict[int, float] = {}  # partition -> monotonic time of its latest ack
        self._producer = KafkaProducer(
            **kafka_client.settings(),
            bootstrap_servers=config["bootstrap"],
            acks="all",
            enable_idempotence=True,
            linger_ms=STREAM_LINGER_MS,
            retries=2**31 - 1,
            request_timeout_ms=15_000,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            max_in_flight_requests_per_connection=5,
            client_id="kafkalab-load-producer",
        )
        self._thread = threading.Thread(target=self._run, name="load-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _on_ack(self, seq: int, key: str) -> Callable[[Any], None]:
        def callback(md: Any) -> None:
            self._acked.write({"partition": md.partition, "offset": md.offset, "key": key, "seq": seq})
            with self._lock:
                self._in_flight.pop(seq, None)
                self.acked_at[md.partition] = time.monotonic()

        return callback

    def _on_error(self, seq: int) -> Callable[[Exception], None]:
        def errback(exc: Exception) -> None:
            self._failed.write({"seq": seq, "error": repr(exc)})
            with self._lock:
                self._in_flight.pop(seq, None)

        return errback

    def _run(self) -> None:
        seq = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            key = f"key-{seq % self._keys}"
            try:
                future = self._producer.send(self._topic, key=key.encode(), value=encode(self._run_id, seq))
            except Exception as exc:
                # send() raises before queueing (no metadata or no buffer within max_block_ms): the record
                # was never handed over, so the same seq is tried again and the stream stays gapless.
                log.warning("send of seq %d not queued (%r); trying again", seq, exc)
                self._stop.wait(1.0)
                continue
            with self._lock:
                self._in_flight[seq] = key
            future.add_callback(self._on_ack(seq, key))
            future.add_errback(self._on_error(seq))
            seq += 1
            self.sent = seq
            next_at += self._interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -1.0:  # fell behind (a blocked send): keep the rate, do not burst to catch up
                next_at = time.monotonic()

    def stop(self, timeout_s: float) -> int:
        """Stop sending; wait for every outstanding send to be acked or fail. Returns how many did neither.

        A send still unresolved after the flush is recorded in failed.jsonl, so `stop` counts it.
        """
        self._stop.set()
        self._thread.join(timeout=30)
        deadline = time.monotonic() + timeout_s
        try:
            self._producer.flush(timeout=timeout_s)
        except Exception as exc:
            log.error("producer flush did not finish within %.0f s: %r", timeout_s, exc)
        # Callbacks run on the producer's I/O thread and may trail the flush by a moment.
        grace_end = min(deadline, time.monotonic() + 5)
        while self._outstanding() and time.monotonic() < grace_end:
            time.sleep(0.1)
        with self._lock:
            unresolved = dict(self._in_flight)
        for seq in sorted(unresolved):
            self._failed.write({"seq": seq, "error": "neither acked nor failed when the producer was flushed"})
        try:
            self._producer.close(timeout=10)
        except Exception as exc:
            log.warning("producer close: %r", exc)
        log.info("producer stopped: %d sent, %d unresolved", self.sent, len(unresolved))
        return len(unresolved)

    def _outstanding(self) -> bool:
        with self._lock:
            return bool(self._in_flight)

    def last_acks(self) -> dict[int, float]:
        with self._lock:
            return dict(self.acked_at)


class GroupMember:
    """A consumer-group member in a thread: reads the topic, commits synchronously about once a second."""

    def __init__(
        self, config: dict[str, Any], consumed: JsonlWriter, commits: JsonlWriter, generation: int = 1
    ) -> None:
        self._config = config
        self._topic = str(config["topic"])
        self._run_id = str(config["run_id"])
        self._consumed, self._commits = consumed, commits
        self._drain_by: float | None = None
        self._lock = threading.Lock()
        self._next: dict[int, int] = {}  # partition -> offset after the last record read
        self._committed: dict[int, int] = {}
        self.started_at = time.monotonic()
        self.read_at: dict[int, float] = {}  # partition -> monotonic time this member last read a record of it
        self.loop_at = self.started_at  # the member's loop last went round
        self.last_error = ""
        self.retired = threading.Event()
        self.drained = False
        self.final_commit = False
        self._thread = threading.Thread(target=self._run, name=f"load-group-member-{generation}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def drain(self, timeout_s: float) -> bool:
        """Read up to the end offsets (as they are now that the producer stopped), commit, leave the group."""
        with self._lock:
            self._drain_by = time.monotonic() + timeout_s
        self._thread.join(timeout=timeout_s + 30)
        return self.drained and self.final_commit

    def _deadline(self) -> float | None:
        with self._lock:
            return self._drain_by

    def stalled(self, acked_at: dict[int, float], now: float) -> list[int]:
        """Partitions whose records were acked STALL_S after this member last read one of them, and which it has
        not read for STALL_S: a member that keeps failing to read what the cluster took."""
        with self._lock:
            read_at = dict(self.read_at)
        out = []
        for partition, acked in sorted(acked_at.items()):
            last = read_at.get(partition, self.started_at)
            if acked - last > STALL_S and now - last > STALL_S:
                out.append(partition)
        return out

    def describe(self) -> str:
        """What the member knows of itself, for the log; its consumer is not touched (not thread-safe)."""
        now = time.monotonic()
        with self._lock:
            read = {p: round(now - t, 1) for p, t in sorted(self.read_at.items())}
        frame = sys._current_frames().get(self._thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(thread ended)\n"
        return (
            f"thread alive={self._thread.is_alive()}, loop last went round {now - self.loop_at:.1f} s ago, "
            f"seconds since each partition's last read {read}, read up to {dict(sorted(self._next.items()))}, "
            f"committed {dict(sorted(self._committed.items()))}, last error {self.last_error or 'none'}; "
            f"its stack:\n{stack}"
        )

    def retire(self) -> None:
        """Stop this member writing reads and commits, and leave the group if its consumer still answers."""
        self.retired.set()

    def _connect(self) -> KafkaConsumer | None:
        while True:
            deadline = self._deadline()
            if deadline is not None and time.monotonic() > deadline:
                return None
            try:
                consumer = KafkaConsumer(
                    **kafka_client.settings(),
                    bootstrap_servers=self._config["bootstrap"],
                    group_id=self._config["group"],
                    max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
                    enable_auto_commit=False,
                    auto_offset_reset="earliest",
                    client_id="kafkalab-load-group-member",
                )
                consumer.subscribe([self._topic])
                return consumer
            except Exception as exc:
                log.warning("group member cannot connect yet (%r); retrying", exc)
                time.sleep(2.0)

    def _run(self) -> None:
        consumer = self._connect()
        if consumer is None:
            log.error("group member never connected")
            return
        targets: dict[TopicPartition, int] | None = None
        last_commit = 0.0
        try:
            while not self.retired.is_set():
                self.loop_at = time.monotonic()
                deadline = self._deadline()
                if deadline is not None:
                    if targets is None:
                        targets = self._end_offsets(consumer)
                    if targets is not None and self._caught_up(consumer, targets):
                        self.drained = True
                        break
                    if time.monotonic() > deadline:
                        log.error("group member did not reach the end offsets %s in time", _plain(targets))
                        break
                self._poll(consumer)
                if time.monotonic() - last_commit >= COMMIT_INTERVAL_S:
                    self._commit(consumer)
                    last_commit = time.monotonic()
            for _ in range(0 if self.retired.is_set() else 5):
                if self._commit(consumer):
                    self.final_commit = True
                    break
                time.sleep(1.0)
        finally:
            try:
                consumer.close(autocommit=False)
            except Exception as exc:
                log.warning("group member close: %r", exc)
        log.info("group member stopped: drained=%s final_commit=%s", self.drained, self.final_commit)

    def _poll(self, consumer: KafkaConsumer) -> None:
        try:
            polled = consumer.poll(timeout_ms=500, max_records=2000)
        except Exception as exc:  # coordinator moves, rebalances, brokers down: keep going
            log.warning("group member poll: %r", exc)
            self.last_error = f"poll: {exc!r}"
            time.sleep(1.0)
            return
        if self.retired.is_set():  # its successor reads these again from the committed offsets
            return
        now = time.monotonic()
        with self._lock:
            for tp, batch in polled.items():
                if batch:
                    self.read_at[tp.partition] = now
        for tp, batch in polled.items():
            for msg in batch:
                self._next[tp.partition] = max(self._next.get(tp.partition, 0), msg.offset + 1)
                data = decode(msg.value)
                if data and data.get("run") == self._run_id:
                    self._consumed.write({"partition": tp.partition, "offset": msg.offset, "seq": int(data["seq"])})

    def _commit(self, consumer: KafkaConsumer) -> bool:
        """Commit what was read on the partitions this member owns now; record it once the broker accepted it."""
        if self.retired.is_set():
            return False
        try:
            owned = {tp.partition for tp in consumer.assignment() if tp.topic == self._topic}
            todo = {p: o for p, o in self._next.items() if p in owned and self._committed.get(p) != o}
            if not todo:
                return True
            consumer.commit(
                {TopicPartition(self._topic, p): OffsetAndMetadata(o, "", -1) for p, o in todo.items()},
                timeout_ms=10_000,
            )
        except Exception as exc:  # CommitFailedError after a rebalance, coordinator unavailable, timeouts
            log.warning("group commit failed (%r); next one in %.0f s", exc, COMMIT_INTERVAL_S)
            self.last_error = f"commit: {exc!r}"
            return False
        self._committed.update(todo)
        self._commits.write({"offsets": {str(p): o for p, o in sorted(todo.items())}})
        return True

    def _end_offsets(self, consumer: KafkaConsumer) -> dict[TopicPartition, int] | None:
        try:
            partitions = [TopicPartition(self._topic, p) for p in sorted(consumer.partitions_for_topic(self._topic))]
            ends = dict(consumer.end_offsets(partitions, timeout_ms=10_000))
        except Exception as exc:
            log.warning("group member cannot read end offsets yet (%r)", exc)
            return None
        log.info("group member draining up to %s", _plain(ends))
        return ends

    def _caught_up(self, consumer: KafkaConsumer, targets: dict[TopicPartition, int]) -> bool:
        try:
            owned = consumer.assignment()
            return all(
                tp in owned and (consumer.position(tp, timeout_ms=1000) or 0) >= end for tp, end in targets.items()
            )
        except Exception as exc:
            log.warning("group member position: %r", exc)
            return False


def _plain(offsets: dict[TopicPartition, int] | None) -> dict[int, int] | None:
    return None if offsets is None else {tp.partition: o for tp, o in sorted(offsets.items())}


def run(state: StateDir) -> int:
    """The background process's body; returns its exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    config = read_json(state.config)
    kafka_client.use(config.get("client_config"))
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    writers = [JsonlWriter(p) for p in (state.acked, state.failed, state.group, state.commits)]
    acked, failed, group, commits = writers
    log.info(
        "load %s: topic %s, group %s, %s msg/s", config["run_id"], config["topic"], config["group"], config["rate"]
    )
    try:
        producer = StreamProducer(config, acked, failed)
    except Exception as exc:
        log.error("cannot start the producer against %s: %r", config["bootstrap"], exc)
        return 1
    member = GroupMember(config, group, commits)
    member.start()
    producer.start()
    ready = False
    restarts = 0
    while not stopping.wait(FLUSH_INTERVAL_S):
        stalled = member.stalled(producer.last_acks(), time.monotonic())
        if stalled:
            restarts += 1
            log.error(
                "group member stalled: nothing read of partitions %s for %.0f s while their records were acked; "
                "starting member %d of the group. The stalled member: %s",
                stalled,
                STALL_S,
                restarts + 1,
                member.describe(),
            )
            member.retire()
            member = GroupMember(config, group, commits, generation=restarts + 1)
            member.start()
        if not state.config.exists():
            # The run's state was removed (a scenario starting over after a failed one): nobody can account for
            # this run any more, and producing on would only take CPU from the next one.
            log.warning("%s was removed: nobody accounts for this run; exiting", state.config)
            os._exit(3)
        for w in writers:
            w.flush()
        if not ready and acked.count:
            write_json(state.ready, {"t": time.time(), "pid": os.getpid(), "acked": acked.count})
            log.info("first acks arrived: producing")
            ready = True
    budget_end = time.monotonic() + SHUTDOWN_BUDGET_S
    unresolved = producer.stop(timeout_s=DELIVERY_TIMEOUT_MS / 1000 + 10)
    for w in writers:
        w.flush()
    drain_s = max(10.0, min(DRAIN_TIMEOUT_S, budget_end - time.monotonic()))
    drained = member.drain(timeout_s=drain_s)
    for w in writers:
        w.close()
    clean = drained and unresolved == 0
    write_json(
        state.done,
        {
            "t": time.time(),
            "sent": producer.sent,
            "acked": acked.count,
            "failed": failed.count,
            "unresolved": unresolved,
            "group_consumed": group.count,
            "drained": member.drained,
            "final_commit": member.final_commit,
            "group_member_restarts": restarts,
            "clean": clean,
        },
    )
    log.info("stopped: sent=%d acked=%d failed=%d clean=%s", producer.sent, acked.count, failed.count, clean)
    return 0 if clean else 1
