"""The audit's check of the windowed counts against the archive, on small batch DataFrames."""

from __future__ import annotations

import datetime as dt

from kafkalab_spark import audit
from kafkalab_spark import transforms as T
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

T0 = dt.datetime(2025, 1, 1, 12, 0, 0)


def test_windows_that_count_each_archived_record_once_agree_and_others_are_named(spark: SparkSession) -> None:
    kafka = spark.createDataFrame(
        [(b"k", b'{"seq": %d}' % i, "events", 0, i, T0 + dt.timedelta(seconds=20 * i)) for i in range(6)],
        T.KAFKA_SCHEMA,
    )
    records = T.good_records(T.parse_records(kafka))
    # Two one-minute windows of three records each; the second counted once too often.
    metrics = spark.createDataFrame(
        [
            ("events", T0, T0 + dt.timedelta(minutes=1), 3),
            ("events", T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=2), 4),
        ],
        "topic string, window_start timestamp, window_end timestamp, records long",
    )
    assert audit.metrics_against_archive(records, metrics) == {
        "windows": 2,
        "differing": [{"topic": "events", "window_start": "2025-01-01 12:01:00", "counted": 4, "archived": 3}],
    }


def test_topic_rows_are_the_archived_rows_of_that_topic_with_their_processing_time_in_milliseconds(
    spark: SparkSession,
) -> None:
    kafka = spark.createDataFrame(
        [(b"k%d" % i, b'{"seq": %d}' % i, "events", i % 2, 10 + i, T0) for i in range(3)]
        + [(b"o%d" % i, b'{"seq": %d}' % i, "orders", 0, i, T0) for i in range(2)],
        T.KAFKA_SCHEMA,
    )
    # good_records stamps processed_at with the time of the query; a fixed one (with microseconds, which the
    # milliseconds floor away) makes the expected values known. Time-zone aware: the same instant on any machine.
    processed = dt.datetime(2025, 1, 1, 12, 0, 1, 234567, tzinfo=dt.UTC)
    records = T.good_records(T.parse_records(kafka)).withColumn("processed_at", F.lit(processed))
    processed_ms = 1_735_732_801_234  # 2025-01-01T12:00:01.234Z
    rows = audit.topic_rows(records, "events").orderBy("partition", "offset").collect()
    assert [tuple(r) for r in rows] == [
        (0, 10, "k0", '{"seq": 0}', processed_ms),
        (0, 12, "k2", '{"seq": 2}', processed_ms),
        (1, 11, "k1", '{"seq": 1}', processed_ms),
    ]
