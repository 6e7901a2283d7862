"""`python -m kafkalab.bench.transactions`: a transactional read-process-write pipeline's rate, measured.

Kafka's own Java clients of the release (kafkalab/clients/TxnProcessor.java: a read_committed consumer, one
transaction per poll of up to 100 records, the input offsets sent to the transaction) process a backlog written with
acks=all to a new input topic, into a new output topic. Printed and saved as JSON (.cache/bench/transactions.json):
committed transactions per second and records per second from the first commit to the last, and the same checks the
tests make (lost, duplicated, aborted read, torn: expected 0; the tests assert them, this only reports).

    python -m kafkalab.bench.transactions --inventory inventories/lab --kafka-version 4.4.0 --records 20000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka.admin import NewTopic

from kafkalab import kafka_client
from kafkalab.bench.cluster import admin_client, discover
from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.mirror import produce
from kafkalab.bench.runner import Ansible
from kafkalab.transactions import TxnWorkload


def processed(workload: TxnWorkload) -> int:
    """Input records in the transactions committed so far."""
    return sum(int(line.split()[2]) for line in list(workload.lines) if line.startswith("COMMIT "))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    ansible = Ansible(args.inventory)
    brokers = ansible.groups().get("kafka_broker") or []
    if not brokers:
        raise MeasurementError("the inventory has no kafka_broker hosts")
    cluster = discover(ansible, brokers, None)
    name = f"kafkalab-bench-txn-{uuid.uuid4().hex[:6]}"
    topics = (f"{name}-in", f"{name}-out")
    rf = min(3, len(brokers))
    admin = admin_client(cluster.bootstrap)
    try:
        configs = {"min.insync.replicas": "2"} if rf == 3 else {}
        admin.create_topics([NewTopic(t, args.partitions, rf, topic_configs=configs) for t in topics])
    finally:
        admin.close()
    try:
        produce(cluster.bootstrap, topics[0], args.records, args.bytes)
        workload = TxnWorkload(
            args.kafka_version, cluster.bootstrap, os.environ.get(kafka_client.ENV), topics, name, abort_every=0
        )
        workload.start()
        deadline = time.monotonic() + args.timeout
        try:
            while processed(workload) < args.records:
                if not workload.running():
                    raise MeasurementError(f"the processor exited: {workload.tail()}")
                if time.monotonic() > deadline:
                    raise MeasurementError(f"the backlog was not processed in {args.timeout:.0f} s: {workload.tail()}")
                time.sleep(0.5)
            workload.stop()
        finally:
            workload.close()
        verdict = workload.verify()
    finally:
        admin = admin_client(cluster.bootstrap)
        try:
            admin.delete_topics(list(topics))
        finally:
            admin.close()
    commits = [int(line.split()[3]) for line in workload.lines if line.startswith("COMMIT ")]
    span = (max(commits) - min(commits)) / 1000 if len(commits) > 1 else 0.0
    return {
        "records": args.records,
        "bytes_per_record": args.bytes,
        "partitions": args.partitions,
        "kafka_version": args.kafka_version,
        "transactions": verdict.committed_transactions,
        "records_per_transaction": round(args.records / max(1, verdict.committed_transactions), 1),
        "transactions_per_s": round((len(commits) - 1) / span, 1) if span else None,
        "records_per_s": round(args.records / span) if span else None,
        "anomalies": {k: getattr(verdict, k) for k in ("lost", "duplicated", "aborted_read", "torn", "unaccounted")},
        "aborted_by_faults": verdict.aborted_by_faults,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench.transactions", description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="inventories/lab")
    parser.add_argument("--kafka-version", required=True, help="the release whose Java clients run (the cluster's)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--bytes", type=int, default=100, help="bytes per record")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", default=".cache/bench/transactions.json")
    args = parser.parse_args(argv)
    try:
        result = measure(args)
    except MeasurementError as exc:
        print(f"bench transactions: {exc}", file=sys.stderr)
        return 1
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"transactions, {result['records']:,} records of {result['bytes_per_record']} B: "
        f"{result['transactions']} committed, {result['records_per_transaction']} records each, "
        f"{result['transactions_per_s']} transactions/s, {result['records_per_s']} records/s; "
        f"anomalies {result['anomalies']} ({args.out})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
