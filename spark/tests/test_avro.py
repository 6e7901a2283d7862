"""Avro records in the registry's wire format decoded into typed columns, on a local SparkSession with Spark's
own Avro jar; the schemas are handed in as the registry would return them (tests/spark_cluster reads them from a
real registry)."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from pathlib import Path

import fastavro
import pytest
from kafkalab_spark import avro as A
from kafkalab_spark import transforms as T
from pyspark.sql import DataFrame, SparkSession

T0 = dt.datetime(2025, 1, 1, 12, 0, 0)
V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "lab",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "amount", "type": "double"},
    ],
}
# A compatible new version: one optional field with a default.
V2 = {**V1, "fields": [*V1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}]}
WRITERS = {11: ("AVRO", json.dumps(V1)), 12: ("AVRO", json.dumps(V2)), 13: ("JSON", '{"type": "object"}')}


def frame(schema_id: int, schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


ROWS: list[tuple[str, bytes | None]] = [
    ("v1", frame(11, V1, {"id": 1, "item": "tea", "amount": 2.5})),
    ("v2", frame(12, V2, {"id": 2, "item": "cake", "amount": 4.0, "coupon": "SPRING"})),
    ("v2-no-coupon", frame(12, V2, {"id": 3, "item": "jam", "amount": 3.0, "coupon": None})),
    ("unknown-id", frame(99, V1, {"id": 4, "item": "x", "amount": 1.0})),
    ("truncated", frame(11, V1, {"id": 5, "item": "a long item name", "amount": 1.0})[:9]),
    ("not-framed", b'{"id": 6}'),
    ("json-schema", b"\x00" + struct.pack(">I", 13) + b'{"id": 7}'),
    ("tombstone", None),
]


def kafka_rows(spark: SparkSession, topic: str = "orders") -> DataFrame:
    data = [(key.encode(), value, topic, 0, i, T0 + dt.timedelta(seconds=i)) for i, (key, value) in enumerate(ROWS)]
    return spark.createDataFrame(data, T.KAFKA_SCHEMA)


@pytest.fixture(scope="module")
def decoded(spark: SparkSession) -> A.Decoded:
    rows = A.framed(kafka_rows(spark)).cache()
    present = [(r["topic"], r["schema_id"]) for r in rows.where("schema_id is not null").distinct().collect()]
    writers = {i: WRITERS[i] for _, i in present if i in WRITERS}
    return A.decode(rows, present, writers, {"orders": json.dumps(V2)})


def test_records_of_both_versions_are_typed_columns_of_the_latest(decoded: A.Decoded) -> None:
    frame_ = decoded.records["orders"]
    fields = {f.name: f.dataType.simpleString() for f in frame_.schema["value"].dataType.fields}
    assert fields == {"id": "bigint", "item": "string", "amount": "double", "coupon": "string"}
    rows = {r["key"]: (r["schema_id"], r["value"].asDict()) for r in frame_.collect()}
    assert rows == {
        # Written before the field existed: its default.
        "v1": (11, {"id": 1, "item": "tea", "amount": 2.5, "coupon": None}),
        "v2": (12, {"id": 2, "item": "cake", "amount": 4.0, "coupon": "SPRING"}),
        "v2-no-coupon": (12, {"id": 3, "item": "jam", "amount": 3.0, "coupon": None}),
    }


def test_every_other_record_is_quarantined_with_its_reason(decoded: A.Decoded) -> None:
    assert decoded.quarantine is not None
    reasons = {bytes(r["key"]).decode(): r["reason"] for r in decoded.quarantine.collect()}
    assert reasons == {
        "unknown-id": A.reason_unknown_id(99),
        "truncated": "value does not decode with its writer's schema (id 11) into the orders-value schema the "
        "archive reads",
        "not-framed": A.REASON_NOT_FRAMED,
        "json-schema": A.reason_not_avro(13, "JSON"),
        "tombstone": A.REASON_NULL_VALUE,
    }
    # The raw bytes are kept, so nothing is lost or guessed at.
    raw = {bytes(r["key"]).decode(): r["value"] for r in decoded.quarantine.collect()}
    assert bytes(raw["truncated"]) == ROWS[4][1]


def test_without_a_subject_the_newest_writer_is_the_reader(spark: SparkSession) -> None:
    rows = A.framed(kafka_rows(spark).where("offset < 3"))
    decoded = A.decode(rows, [("orders", 11), ("orders", 12)], WRITERS, {})
    assert "coupon" in decoded.records["orders"].schema["value"].dataType.names


def test_a_batch_is_written_once(spark: SparkSession, tmp_path: Path) -> None:
    frame_ = spark.createDataFrame([(1, "a")], "n int, s string")
    final = tmp_path / "orders" / "batch=7"
    # A run cut off before its rename left a staging directory: the next run writes it again.
    (tmp_path / "orders" / "_staging" / "batch=7").mkdir(parents=True)
    assert A.write_once(frame_, final) is True
    assert A.write_once(frame_.union(frame_), final) is False
    # Read as the audit reads it.
    archive = A.read_batches(spark, str(tmp_path / "orders"))
    assert archive is not None and archive.count() == 1
    assert not (tmp_path / "orders" / "_staging" / "batch=7").exists()
