"""The audit's check of the windowed counts against the archive, on small batch DataFrames."""

from __future__ import annotations

import datetime as dt

from kafkalab_spark import audit
from kafkalab_spark import transforms as T
from pyspark.sql import SparkSession

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
