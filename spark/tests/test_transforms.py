"""Parsing, quarantine and windowed counts on small Kafka-shaped DataFrames (one shared local session)."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from kafkalab_spark import transforms as T
from pyspark.sql import DataFrame, SparkSession

KAFKA_SCHEMA = T.KAFKA_SCHEMA
T0 = dt.datetime(2025, 1, 1, 12, 0, 0)

# (case id, key, value, expected quarantine reason or None)
CASES: list[tuple[str, bytes | None, bytes | None, str | None]] = [
    ("json_object", b"key-1", json.dumps({"run": "r1", "seq": 7, "nested": {"a": 1}}).encode(), None),
    ("plain_text", b"key-2", b"hello, world", None),
    ("no_key", None, b'{"seq": 8}', None),
    ("json_with_leading_space", b"k", b'  {"seq": 9}', None),
    ("truncated_json", b"k", b'{"seq": 10,', T.REASON_BAD_JSON),
    ("json_array", b"k", b"[1, 2, 3]", T.REASON_BAD_JSON),
    ("value_not_utf8", b"k", b"\xff\xfe\x00binary", T.REASON_VALUE_NOT_UTF8),
    ("key_not_utf8", b"\xc3\x28", b"fine", T.REASON_KEY_NOT_UTF8),
    ("tombstone", b"k", None, T.REASON_NULL_VALUE),
]


def kafka_frame(spark: SparkSession, rows: list[tuple[bytes | None, bytes | None]], topic: str = "events") -> DataFrame:
    data = [(key, value, topic, i % 3, i, T0 + dt.timedelta(seconds=i)) for i, (key, value) in enumerate(rows)]
    return spark.createDataFrame(data, KAFKA_SCHEMA)


@pytest.fixture(scope="module")
def parsed(spark: SparkSession) -> DataFrame:
    return T.parse_records(kafka_frame(spark, [(k, v) for _, k, v, _ in CASES])).cache()


@pytest.mark.parametrize(("case", "key", "value", "reason"), CASES, ids=[c[0] for c in CASES])
def test_each_record_is_classified_with_its_reason(
    parsed: DataFrame, case: str, key: bytes | None, value: bytes | None, reason: str | None
) -> None:
    offset = [c[0] for c in CASES].index(case)
    row = parsed.where(f"offset = {offset}").collect()[0]
    assert row["quarantine_reason"] == reason


def test_json_values_keep_every_field_as_text(parsed: DataFrame) -> None:
    row = parsed.where("offset = 0").collect()[0]
    assert row["value_format"] == "json"
    assert row["fields"] == {"run": "r1", "seq": "7", "nested": '{"a":1}'}
    assert row["key"] == "key-1"


def test_text_values_are_kept_as_text(parsed: DataFrame) -> None:
    row = parsed.where("offset = 1").collect()[0]
    assert (row["value_format"], row["value"], row["fields"]) == ("text", "hello, world", None)


def test_good_records_hold_each_well_formed_record_once_with_its_position(parsed: DataFrame) -> None:
    good = T.good_records(parsed).collect()
    expected = sorted(i for i, c in enumerate(CASES) if c[3] is None)
    assert sorted(r["offset"] for r in good) == expected
    assert {(r["topic"], r["partition"]) for r in good} <= {("events", p) for p in range(3)}
    assert all(r["latency_ms"] is not None and r["latency_ms"] > 0 for r in good)


def test_malformed_records_go_to_quarantine_with_reason_and_raw_bytes(parsed: DataFrame) -> None:
    bad = {r["offset"]: r for r in T.quarantined(parsed).collect()}
    expected = {i: c for i, c in enumerate(CASES) if c[3] is not None}
    assert sorted(bad) == sorted(expected)
    for offset, (_, key, value, reason) in expected.items():
        assert bad[offset]["reason"] == reason
        assert (bad[offset]["key"], bad[offset]["value"]) == (
            bytearray(key) if key is not None else None,
            bytearray(value) if value is not None else None,
        )


def test_good_and_quarantined_records_account_for_every_input(parsed: DataFrame) -> None:
    assert T.good_records(parsed).count() + T.quarantined(parsed).count() == len(CASES)


def test_windowed_counts_count_per_topic_and_window(spark: SparkSession) -> None:
    rows = [(b"k", b'{"seq": 1}')] * 70
    events = T.good_records(T.parse_records(kafka_frame(spark, rows, "events")))
    clicks = T.good_records(T.parse_records(kafka_frame(spark, rows[:5], "clicks")))
    counts = T.windowed_counts(events.unionByName(clicks), "1 minute", "1 minute").orderBy("topic", "window_start")
    got = [(r["topic"], r["window_start"], r["records"]) for r in counts.collect()]
    # 70 events one second apart from 12:00:00 span the 12:00 and 12:01 windows.
    assert got == [("clicks", T0, 5), ("events", T0, 60), ("events", T0 + dt.timedelta(minutes=1), 10)]
    assert all(r["latency_ms_max"] >= r["latency_ms_avg"] > 0 for r in counts.collect())


def test_the_realtime_path_routes_each_record_once_enriched_or_dead_lettered(parsed: DataFrame) -> None:
    before = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    rows = T.realtime_routed(parsed, "events-realtime", "events-dead-letter").collect()
    after = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    assert len(rows) == len(CASES), "one output record per input record, none dropped"
    for (case, key, value, reason), row in zip(
        CASES, sorted(rows, key=lambda r: json.loads(r.value)["offset"]), strict=True
    ):
        doc = json.loads(row.value)
        assert row.key == key, case
        assert (doc["source_topic"], doc["offset"]) == ("events", CASES.index((case, key, value, reason))), case
        assert before <= doc["processed_at_ms"] <= after, case
        assert doc["kafka_timestamp_ms"] == int(T0.replace(tzinfo=dt.UTC).timestamp() * 1000) + doc["offset"] * 1000
        if reason is None:
            assert row.topic == "events-realtime", case
            assert doc["value"] == value.decode(), case
        else:
            assert row.topic == "events-dead-letter", case
            assert doc["reason"] == reason, case
            # to_json leaves null fields out: a tombstone has no value_base64.
            assert doc.get("value_base64") == (base64.b64encode(value).decode() if value is not None else None), case


def test_the_archive_schema_is_what_good_records_write(spark: SparkSession, parsed: DataFrame) -> None:
    assert T.records_schema(spark) == T.good_records(parsed).schema
