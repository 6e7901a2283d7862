"""What the brokers answer a user who reads or writes a topic: the refusal, or None when they let it.

Real requests through kafka-python; `settings` is a user's client settings (kafka_client.from_properties of a
login). Shared by tests/cluster/test_sasl.py (the scenario's users) and tests/spark_cluster (the job's user).
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def read_error(settings: dict[str, Any], bootstrap: str, topic: str) -> BaseException | None:
    consumer = KafkaConsumer(**settings, bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        # Refused at the first fetch; allowed, records come back, or the partition is read for 20 s without a
        # refusal.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if consumer.poll(timeout_ms=1000):
                    return None
            except Exception as exc:
                return exc
        return None
    finally:
        consumer.close()


def write_error(settings: dict[str, Any], bootstrap: str, topic: str, value: bytes) -> BaseException | None:
    # Not idempotent: an idempotent producer first asks for a producer id, which a user without any write ACL is
    # refused at the cluster (ClusterAuthorizationFailed) before the topic's ACL is ever asked.
    producer = KafkaProducer(
        **settings, bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, max_block_ms=30_000
    )
    try:
        producer.send(topic, value).get(timeout=30)
        return None
    except Exception as exc:
        return exc
    finally:
        producer.close()
