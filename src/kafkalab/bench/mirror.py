"""`python -m kafkalab.bench.mirror`: MirrorMaker 2's copy rate from a cluster to its DR site, measured.

MirrorMaker 2 runs as connectors on the DR site's Connect workers (roles/kafka_connect, kafka_connect_mirrors). With
the workers stopped, a producer writes a backlog of records (acks=all) to a new topic the mirror covers; the workers
start again, and the copy on the DR site is watched until it holds every record. Printed and saved as JSON
(.cache/bench/mirror.json): the producer's rate, the time from the workers' start to the first copied record (the
worker's start, its rebalance and the mirror's topic discovery), and the copy rate from the first copied record to the
last (records/s and MB/s). Nothing is asserted: tests/cluster/test_mirror.py proves that nothing is lost.

    python -m kafkalab.bench.mirror --inventory inventories/lab --dr-inventory inventories/lab-dr --records 200000
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

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from kafkalab import kafka_client
from kafkalab.bench.cluster import admin_client, discover
from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.runner import Ansible

CONNECT_SERVICE = "kafka-connect"


def produce(bootstrap: str, topic: str, records: int, size: int) -> float:
    """Write `records` records of `size` bytes with acks=all; the seconds it took, every record acknowledged."""
    producer = KafkaProducer(
        **kafka_client.settings(), bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=262144
    )
    value = b"x" * size
    started = time.monotonic()
    try:
        futures = [producer.send(topic, value) for _ in range(records)]
        producer.flush()
        failed = sum(1 for f in futures if f.failed())
    finally:
        producer.close()
    if failed:
        raise MeasurementError(f"{failed} of {records} records were not acknowledged")
    return time.monotonic() - started


def copied(consumer: KafkaConsumer, topic: str) -> int:
    """Records in the copy: the sum of its partitions' end offsets (0 while the mirror has not made it)."""
    partitions = consumer.partitions_for_topic(topic)
    if not partitions:
        return 0
    ends = consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
    return int(sum(ends.values()))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    primary, dr = Ansible(args.inventory), Ansible(args.dr_inventory)
    brokers = primary.groups().get("kafka_broker") or []
    dr_brokers = dr.groups().get("kafka_broker") or []
    workers = dr.groups().get("kafka_connect") or []
    if not brokers or not dr_brokers or not workers:
        raise MeasurementError("the inventories need kafka_broker hosts, and the DR site kafka_connect hosts too")
    cluster = discover(primary, brokers, None)
    dr_pki = os.path.join(args.dr_inventory, ".pki")
    dr_cluster = discover(dr, dr_brokers, None, tls_dir=dr_pki)
    dr_settings = kafka_client.settings(os.path.join(dr_pki, "client.properties"))

    topic = f"{args.topic_prefix}{uuid.uuid4().hex[:6]}"
    copy = f"{args.source_alias}.{topic}"
    admin = admin_client(cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, args.partitions, min(3, len(brokers)))], validate_only=False)
    finally:
        admin.close()

    def workers_to(state: str) -> None:
        service = {"name": CONNECT_SERVICE, "state": state}
        dr.module(":".join(workers), "ansible.builtin.systemd_service", service, become=True)

    workers_to("stopped")
    try:
        produce_s = produce(cluster.bootstrap, topic, args.records, args.bytes)
    finally:
        started = time.monotonic()
        workers_to("started")
    consumer = KafkaConsumer(**dr_settings, bootstrap_servers=dr_cluster.bootstrap, client_id="kafkalab-bench-mirror")
    first_s = done_s = None
    try:
        deadline = started + args.timeout
        while time.monotonic() < deadline:
            consumer.topics()  # refresh the metadata: the copy appears once the mirror finds the new topic
            n = copied(consumer, copy)
            now = time.monotonic() - started
            if n and first_s is None:
                first_s = now
            if n >= args.records:
                done_s = now
                break
            time.sleep(0.5)
    finally:
        consumer.close()
    if first_s is None or done_s is None:
        raise MeasurementError(f"the copy {copy} did not reach {args.records} records in {args.timeout} s")
    copy_s = max(done_s - first_s, 0.5)
    mb = args.records * args.bytes / 1e6
    return {
        "topic": topic,
        "copy": copy,
        "records": args.records,
        "bytes_per_record": args.bytes,
        "partitions": args.partitions,
        "produce_s": round(produce_s, 2),
        "produce_records_per_s": round(args.records / produce_s),
        "start_to_first_copy_s": round(first_s, 1),
        "start_to_last_copy_s": round(done_s, 1),
        "copy_records_per_s": round(args.records / copy_s),
        "copy_mb_per_s": round(mb / copy_s, 2),
        "resolution_s": 0.5,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench.mirror", description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="inventories/lab", help="the source cluster's inventory")
    parser.add_argument("--dr-inventory", default="inventories/lab-dr", help="the DR site's inventory")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--bytes", type=int, default=100, help="bytes per record")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--topic-prefix", default="mirrored.bench-", help="a topic name the mirror covers")
    parser.add_argument("--source-alias", default="primary", help="the source's alias (the copy's prefix)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", default=".cache/bench/mirror.json")
    args = parser.parse_args(argv)
    try:
        result = measure(args)
    except MeasurementError as exc:
        print(f"bench mirror: {exc}", file=sys.stderr)
        return 1
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"MirrorMaker 2, {result['records']:,} records of {result['bytes_per_record']} B ({result['partitions']} "
        f"partitions): produced at {result['produce_records_per_s']:,} records/s (acks=all) while the DR workers were "
        f"stopped; after their start, the first copy in {result['start_to_first_copy_s']} s, the last in "
        f"{result['start_to_last_copy_s']} s: copied at {result['copy_records_per_s']:,} records/s, "
        f"{result['copy_mb_per_s']} MB/s ({args.out})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
