"""A transactional read-process-write workload (kafkalab/clients/TxnProcessor.java, Kafka's own Java clients of the
release under test) and the checks Jepsen's 2024 analysis of Kafka made on such a pipeline.

The processor reads an input topic with a read_committed consumer, writes one transaction per poll to an output
topic (one record per input record, named by the input's partition and offset, carrying its transaction's number
and size) and sends the input offsets to the same transaction; every ABORT_EVERY-th transaction it aborts on
purpose after sending its records. After it stops, `verify` reads the output (read_committed and
read_uncommitted), the input up to the group's committed offsets, and counts:

- lost: an input record below the committed offsets with no committed output record (a committed write lost);
- duplicated: an input record with more than one committed output record;
- aborted_read: a committed-read record of a transaction the processor aborted;
- torn: a transaction seen by read_committed with fewer or more records than it wrote;
- unaccounted: a committed output record for input above the committed offsets (offsets and output disagree);
- missing_commits: a transaction the processor saw committed that read_committed does not show.

Every count must be 0. aborted_in_log (records of aborted transactions present in the log, which read_uncommitted
sees) must not be: it shows the aborted-read check had something to find.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

from kafkalab import kafka_client
from kafkalab.java_clients import JavaClient

LINE = re.compile(r"^(COMMIT|ABORT) (\d+) (\d+) (.*)$")


@dataclass
class Verdict:
    committed_transactions: int
    aborted_on_purpose: int
    aborted_by_faults: int
    input_records: int
    output_committed: int
    aborted_in_log: int
    lost: int
    duplicated: int
    aborted_read: int
    torn: int
    unaccounted: int
    missing_commits: int
    commits_per_s: float
    failures: list[str] = field(default_factory=list)  # the processor's own reasons for the aborts it did not choose

    def anomalies(self) -> dict[str, int]:
        return {
            name: getattr(self, name)
            for name in ("lost", "duplicated", "aborted_read", "torn", "unaccounted", "missing_commits")
            if getattr(self, name)
        }

    def line(self) -> str:
        return (
            f"transactions: {self.committed_transactions} committed ({self.commits_per_s:.1f}/s), "
            f"{self.aborted_on_purpose} aborted on purpose, {self.aborted_by_faults} aborted by faults; "
            f"{self.input_records} input records = {self.output_committed} read_committed, "
            f"{self.aborted_in_log} aborted records in the log; lost {self.lost}, duplicated {self.duplicated}, "
            f"aborted read {self.aborted_read}, torn {self.torn}, unaccounted {self.unaccounted}, "
            f"missing commits {self.missing_commits}"
        )


class TxnWorkload(JavaClient):
    """kafkalab/clients/TxnProcessor.java as a child process."""

    def __init__(
        self,
        version: str,
        bootstrap: str,
        client_config: str | None,
        topics: tuple[str, str],
        name: str,
        abort_every: int = 10,
        scala: str = "2.13",
    ) -> None:
        self.bootstrap = bootstrap
        self.client_config = client_config
        self.input, self.output = topics
        self.group = f"{name}-group"
        self.transactional_id = f"{name}-txn"
        super().__init__(
            "TxnProcessor",
            version,
            scala,
            [
                client_config or "-",
                bootstrap,
                self.input,
                self.output,
                self.group,
                self.transactional_id,
                str(abort_every),
            ],
        )

    def commits(self) -> int:
        return sum(1 for line in list(self.lines) if line.startswith("COMMIT "))

    def wait_commits(self, more: int, timeout_s: float) -> None:
        """Until `more` transactions past now have committed (the workload makes progress)."""
        target = self.commits() + more
        deadline = time.monotonic() + timeout_s
        while self.commits() < target:
            assert self.running(), f"the processor exited: {self.tail()}"
            assert time.monotonic() < deadline, f"no {more} commits in {timeout_s:.0f} s: {self.tail()}"
            time.sleep(0.5)

    def coordinator(self) -> int:
        """The node id of the transaction coordinator of the workload's transactional id."""
        admin = KafkaAdminClient(**self._settings())
        try:
            return int(admin.describe_transactions([self.transactional_id])[self.transactional_id].coordinator_id)
        finally:
            admin.close()

    def coordinator_partition(self, partitions: int) -> int:
        """The __transaction_state partition that holds the transactional id: Kafka's
        Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions."""
        h = 0
        for unit in self.transactional_id.encode("utf-16-be").hex(" ", 2).split():
            h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
        signed = h - (1 << 32) if h & 0x80000000 else h
        return (0 if signed == -(1 << 31) else abs(signed)) % partitions

    def close(self) -> None:
        """Kill a processor a failed test left running."""
        self.kill()

    # ---- after the stop -----------------------------------------------------------------------------------------

    def _settings(self) -> dict[str, Any]:
        return {**kafka_client.settings(self.client_config), "bootstrap_servers": self.bootstrap}

    def _read_all(self, topic: str, isolation: str) -> list[tuple[int, int, str]]:
        """Every record of the topic (partition, offset, value), from the beginning to its end offsets."""
        consumer = KafkaConsumer(**self._settings(), isolation_level=isolation, enable_auto_commit=False)
        try:
            partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            assert partitions, f"topic {topic} has no partitions"
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            ends = consumer.end_offsets(partitions)
            found: list[tuple[int, int, str]] = []
            idle_since = time.monotonic()
            while any(consumer.position(tp) < ends[tp] for tp in partitions):
                batch = consumer.poll(timeout_ms=1000)
                for records in batch.values():
                    found.extend((r.partition, r.offset, r.value.decode()) for r in records)
                if batch:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > 15:
                    # Positions stay below the end when the last batches are an aborted transaction's and its marker.
                    break
            return found
        finally:
            consumer.close()

    def _committed_input(self) -> dict[int, int]:
        admin = KafkaAdminClient(**self._settings())
        try:
            offsets = admin.list_group_offsets({self.group: None})[self.group]
        finally:
            admin.close()
        return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == self.input}

    def verify(self) -> Verdict:
        committed_at = [int(LINE.match(x).group(4)) for x in self.lines if x.startswith("COMMIT ")]  # type: ignore[union-attr]
        outcomes = [LINE.match(x) for x in self.lines if LINE.match(x)]
        committed = {int(m.group(2)): int(m.group(3)) for m in outcomes if m and m.group(1) == "COMMIT"}
        aborted = {int(m.group(2)) for m in outcomes if m and m.group(1) == "ABORT"}
        on_purpose = {int(m.group(2)) for m in outcomes if m and m.group(1) == "ABORT" and m.group(4) == "on-purpose"}
        failures = [m.group(4) for m in outcomes if m and m.group(1) == "ABORT" and m.group(4) != "on-purpose"]

        until = self._committed_input()
        wanted = {f"{p}:{o}" for p, o, _v in self._read_all(self.input, "read_uncommitted") if o < until.get(p, 0)}
        seen = [v.split(":") for _p, _o, v in self._read_all(self.output, "read_committed")]
        everything = self._read_all(self.output, "read_uncommitted")
        ids = Counter(f"{p}:{o}" for p, o, _t, _n in seen)
        per_txn = Counter(int(t) for _p, _o, t, _n in seen)
        declared = {int(t): int(n) for _p, _o, t, n in seen}
        span = (max(committed_at) - min(committed_at)) / 1000 if len(committed_at) > 1 else 0.0
        return Verdict(
            committed_transactions=len(committed),
            aborted_on_purpose=len(on_purpose),
            aborted_by_faults=len(aborted - on_purpose),
            input_records=len(wanted),
            output_committed=len(seen),
            aborted_in_log=len(everything) - len(seen),
            lost=len(wanted - set(ids)),
            duplicated=sum(n - 1 for n in ids.values() if n > 1),
            aborted_read=sum(n for t, n in per_txn.items() if t in aborted),
            torn=sum(1 for t, n in per_txn.items() if n != declared[t] or (t in committed and n != committed[t])),
            unaccounted=len(set(ids) - wanted),
            missing_commits=len(set(committed) - set(per_txn)),
            commits_per_s=(len(committed_at) - 1) / span if span else 0.0,
            failures=failures,
        )
