"""The Spark job's Avro archive, live, against the scenario's Schema Registry (Apicurio on the two Spark hosts, HTTPS
with the operator's CA) and Kafka (SASL_SSL):
- records produced with Confluent's AvroSerializer (which registers the schema and frames each value with its id)
  land in the archive exactly once (the acknowledged partition/offsets, each once), as typed columns;
- a compatible new version (an optional field with a default) registered and used mid-stream is picked up without a
  restart (the same driver process): both versions in one archive, the older rows with the field null;
- a record whose schema id the registry does not know, and one whose bytes do not decode, are quarantined with the
  reason and their bytes, and archived nowhere else;
- measured, printed and never asserted: the Avro archive's rows/s against the JSON archive's on the same job, over
  the same number of records produced at the same time.
Runs where the job's settings have an [avro] table (molecule spark); elsewhere it is skipped and says why.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import Any

import pytest
from inventory_hosts import ca_dir

from kafkalab import kafka_client

from .conftest import SparkNode
from .pipeline import wait_for

N_V1 = 6_000
N_V2 = 6_000
ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "kafkalab.lab",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "amount", "type": "double"},
    ],
}
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}],
}
UNKNOWN_ID = 2_000_000_000


@pytest.fixture(scope="module")
def avro(spark_node: SparkNode) -> dict[str, Any]:
    if "avro" not in spark_node.config:
        pytest.skip("the job's settings have no [avro] table (spark_consumer_avro_topics is empty)")
    return spark_node.config["avro"]  # type: ignore[no-any-return]


def order(i: int, version: int) -> dict[str, Any]:
    value: dict[str, Any] = {"id": i, "item": f"item-{i % 31}", "amount": round(i / 100, 2)}
    if version == 2:
        value["coupon"] = f"C{i % 7}" if i % 2 else None
    return value


class Producer:
    """confluent-kafka's producer (acks=all, idempotent) with its acknowledged positions."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer as RdProducer

        conf = kafka_client.librdkafka_settings(bootstrap, os.path.join(ca_dir(), "client.properties"))
        self.producer = RdProducer({**conf, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        self.acked: dict[str, dict[tuple[int, int], str]] = {}  # topic -> (partition, offset) -> key
        self.failed: list[str] = []

    def send(self, topic: str, key: bytes, value: bytes) -> None:
        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                self.failed.append(str(error))
            else:
                self.acked.setdefault(message.topic(), {})[(message.partition(), message.offset())] = (
                    message.key().decode()
                )

        self.producer.produce(topic, key=key, value=value, on_delivery=delivered)
        self.producer.poll(0)

    def flush(self) -> None:
        assert self.producer.flush(120) == 0, "records left unacknowledged after 120 s"
        assert not self.failed, self.failed[:5]


def covered(spark_node: SparkNode, query: str, topic: str, positions: Any) -> bool:
    """Whether the query's last committed batch (the status file) reaches past every position."""
    try:
        end = spark_node.status()["queries"][query]["last_batch"]["end_offset"][topic]
    except (KeyError, TypeError, ValueError):
        return False
    last: dict[int, int] = {}
    for partition, offset in positions:
        last[partition] = max(last.get(partition, -1), offset)
    return all(end.get(str(p), 0) > o for p, o in last.items())


class BatchWatch(threading.Thread):
    """Keeps every batch summary of the given queries the status file shows (it holds the last one only)."""

    def __init__(self, spark_node: SparkNode, queries: tuple[str, ...]) -> None:
        super().__init__(daemon=True)
        self.spark_node = spark_node
        self.queries = queries
        self.batches: dict[str, dict[int, dict[str, Any]]] = {q: {} for q in queries}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                status = self.spark_node.status()
                for query in self.queries:
                    last = status["queries"].get(query, {}).get("last_batch")
                    if last:
                        self.batches[query][int(last["batch_id"])] = last
            except (KeyError, TypeError, ValueError, AssertionError):
                pass
            time.sleep(0.2)

    def rate(self, query: str, after: int) -> tuple[int, float]:
        """(rows, rows per second of batch time) of the batches after batch `after`."""
        seen = [b for i, b in self.batches[query].items() if i > after and b["num_input_rows"]]
        rows = sum(b["num_input_rows"] for b in seen)
        seconds = sum(b["trigger_execution_ms"] for b in seen) / 1000
        return rows, rows / seconds if seconds else 0.0


def test_avro_records_land_once_as_typed_columns_through_a_new_version_and_bad_ones_are_quarantined(
    spark_node: SparkNode, avro: dict[str, Any]
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = avro["topics"][0]
    run = uuid.uuid4().hex[:8]
    registry = SchemaRegistryClient(
        {"url": ",".join(avro["registry_urls"]), "ssl.ca.location": os.path.join(ca_dir(), "trust.pem")}
    )
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer(spark_node.bootstrap)
    pid = spark_node.main_pid()
    status = spark_node.status()["queries"]
    since = {q: int((status.get(q, {}).get("last_batch") or {}).get("batch_id", -1)) for q in ("avro", "records")}
    watch = BatchWatch(spark_node, ("avro", "records"))
    watch.start()

    # Version 1, and the same number of JSON records to the JSON archive's topic at the same time (the measurement).
    v1 = AvroSerializer(registry, json.dumps(ORDER_V1))
    for i in range(N_V1):
        producer.send(topic, f"{run}-{i}".encode(), v1(order(i, 1), context))
        payload = {"run": f"avro-{run}", "seq": i, "ts_ms": int(time.time() * 1000), "item": f"item-{i % 31}"}
        producer.send(spark_node.topic, f"{run}-{i}".encode(), json.dumps(payload).encode())
    producer.flush()
    acked = producer.acked[topic]
    wait_for("the v1 records in the Avro archive", lambda: covered(spark_node, "avro", topic, acked), 300, 1)
    wait_for(
        "the JSON records in the archive",
        lambda: covered(spark_node, "records", spark_node.topic, producer.acked[spark_node.topic]),
        300,
        1,
    )
    watch.stop.set()
    watch.join(5)
    avro_rows, avro_rate = watch.rate("avro", since["avro"])
    json_rows, json_rate = watch.rate("records", since["records"])
    print(
        f"archive rows/s of batch time, same job, {N_V1} records produced to each topic together: "
        f"Avro {avro_rate:.0f} ({avro_rows} rows seen), JSON {json_rate:.0f} ({json_rows} rows seen)"
    )

    # The id the serializer framed its records with (Confluent's client caches a subject's latest version).
    v1_id = int.from_bytes(v1(order(0, 1), context)[1:5], "big")
    # Two records the archive cannot take: an id the registry never gave, and bytes that stop mid-record.
    unknown = b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + b"\x02\x06tea"
    truncated = b"\x00" + v1_id.to_bytes(4, "big") + b"\x02"
    producer.send(topic, f"{run}-unknown".encode(), unknown)
    producer.send(topic, f"{run}-truncated".encode(), truncated)
    producer.flush()
    bad = {key: pos for pos, key in acked.items() if key.endswith(("-unknown", "-truncated"))}

    # Version 2, a compatible change (an optional field with a default): the serializer registers it, the job
    # looks the new id up and reads every record into it from then on, without a restart.
    v2 = AvroSerializer(registry, json.dumps(ORDER_V2))
    for i in range(N_V1, N_V1 + N_V2):
        producer.send(topic, f"{run}-{i}".encode(), v2(order(i, 2), context))
    producer.flush()
    v2_id = int.from_bytes(v2(order(0, 2), context)[1:5], "big")
    assert v2_id != v1_id
    wait_for("the v2 records in the Avro archive", lambda: covered(spark_node, "avro", topic, acked), 300, 1)
    assert spark_node.main_pid() == pid, "the job restarted"

    report = spark_node.audit("--avro-topic", topic, "--records")
    assert report["columns"] == {"id": "bigint", "item": "string", "amount": "double", "coupon": "string"}
    rows = [r for r in report["records"] if str(r[2]).startswith(f"{run}-")]
    positions = [(p, o) for p, o, _key, _id, _value in rows]
    # Exactly once: every acknowledged good record, each once, nothing else of this run.
    wanted = {pos for pos in acked if pos not in bad.values()}
    assert len(positions) == len(set(positions)), "a record archived twice"
    assert set(positions) == wanted, (len(wanted - set(positions)), len(set(positions) - wanted))
    assert len(wanted) == N_V1 + N_V2
    for _p, _o, key, schema_id, value in rows:
        i = int(key.rsplit("-", 1)[1])
        version = 1 if i < N_V1 else 2
        assert schema_id == (v1_id if version == 1 else v2_id), (key, schema_id)
        # Rows written before the field existed read it as its default.
        assert value == (order(i, 2) if version == 2 else {**order(i, 1), "coupon": None}), (key, value)
    quarantined = report["quarantined"]
    assert quarantined[f"{bad[run + '-unknown'][0]}:{bad[run + '-unknown'][1]}"] == (
        f"schema id {UNKNOWN_ID} is not in the registry"
    )
    assert f"(id {v1_id})" in quarantined[f"{bad[run + '-truncated'][0]}:{bad[run + '-truncated'][1]}"]
