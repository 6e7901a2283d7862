"""Pure DataFrame -> DataFrame transforms of the job: no I/O, no session state, batch or streaming alike.

The input is what Spark's Kafka source yields (key and value as bytes, topic, partition, offset,
timestamp). A record is malformed when its bytes cannot be what the topic promises: a null value, a key
or value that is not UTF-8, or a value that looks like JSON but does not parse as a JSON object. Malformed
records are never dropped: they go to the quarantine output with the reason, next to their raw bytes.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

# The columns the Kafka source provides (and the unit tests build).
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)

REASON_NULL_VALUE = "value is null (tombstone)"
REASON_KEY_NOT_UTF8 = "key is not valid UTF-8"
REASON_VALUE_NOT_UTF8 = "value is not valid UTF-8"
REASON_BAD_JSON = "value looks like JSON but is not a valid JSON object"

# What both outputs of a well-formed record carry of it (the Parquet archive and the low-latency topic).
_RECORD_COLUMNS = ("partition", "offset", "key", "value", "value_format", "fields")

# JSON objects are kept as a string map: any value (number, nested object) keeps its JSON text, so no
# schema has to be agreed with the producers for the records to land.
_JSON_FIELDS = "map<string,string>"


def _utf8(column: Column) -> Column:
    return F.when(F.is_valid_utf8(column), column.cast("string"))


def parse_records(raw: DataFrame) -> DataFrame:
    """Decode each Kafka record and say why it is malformed (quarantine_reason), or null when it is fine."""
    value_text = _utf8(F.col("value"))
    looks_like_json = F.ltrim(value_text).startswith("{") | F.ltrim(value_text).startswith("[")
    fields = F.from_json(value_text, _JSON_FIELDS)
    reason = (
        F.when(F.col("value").isNull(), F.lit(REASON_NULL_VALUE))
        .when(F.col("key").isNotNull() & ~F.is_valid_utf8(F.col("key")), F.lit(REASON_KEY_NOT_UTF8))
        .when(~F.is_valid_utf8(F.col("value")), F.lit(REASON_VALUE_NOT_UTF8))
        .when(looks_like_json & fields.isNull(), F.lit(REASON_BAD_JSON))
    )
    return raw.select(
        "topic",
        "partition",
        "offset",
        _utf8(F.col("key")).alias("key"),
        value_text.alias("value"),
        F.when(looks_like_json, F.lit("json")).otherwise(F.lit("text")).alias("value_format"),
        F.when(looks_like_json, fields).alias("fields"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("key_raw"),
        F.col("value").alias("value_raw"),
        reason.alias("quarantine_reason"),
    )


def with_latency(records: DataFrame) -> DataFrame:
    """Add when the record was processed and its produce-to-process latency (Kafka timestamp to now).

    In a stream, current_timestamp() is the micro-batch's time, the same for every row of the batch.
    """
    return records.withColumn("processed_at", F.current_timestamp()).withColumn(
        "latency_ms", F.unix_millis(F.col("processed_at")) - F.unix_millis(F.col("kafka_timestamp"))
    )


def good_records(parsed: DataFrame) -> DataFrame:
    """The well-formed records, as the Parquet output stores them (one row per topic/partition/offset)."""
    return with_latency(parsed.where(F.col("quarantine_reason").isNull())).select(
        "topic", *_RECORD_COLUMNS, "kafka_timestamp", "processed_at", "latency_ms"
    )


def records_schema(spark: SparkSession) -> StructType:
    """The schema of the Parquet archive (good_records of parsed Kafka records): what a reader of it, such as
    the windowed counts' stream, declares (a streaming file source does not infer one)."""
    return good_records(parse_records(spark.createDataFrame([], KAFKA_SCHEMA))).schema


def quarantine_rows(rows: DataFrame, reason: Column) -> DataFrame:
    """Rows as a quarantine keeps them: position, raw bytes (columns key_raw, value_raw), Kafka timestamp, reason."""
    return rows.select(
        "topic",
        "partition",
        "offset",
        F.col("key_raw").alias("key"),
        F.col("value_raw").alias("value"),
        "kafka_timestamp",
        reason.alias("reason"),
        F.current_timestamp().alias("quarantined_at"),
    )


def quarantined(parsed: DataFrame) -> DataFrame:
    """The malformed records with their reason and their raw bytes, so nothing is lost or guessed at."""
    return quarantine_rows(parsed.where(F.col("quarantine_reason").isNotNull()), F.col("quarantine_reason"))


def windowed_counts(records: DataFrame, window_duration: str, watermark_delay: str) -> DataFrame:
    """Per topic and event-time window (Kafka timestamp): how many records, and their latency.

    The watermark lets a stream emit each window once it can no longer change (append mode) and bounds
    the state kept; on a batch DataFrame it is a no-op.
    """
    return (
        records.withWatermark("kafka_timestamp", watermark_delay)
        .groupBy(F.window("kafka_timestamp", window_duration).alias("window"), "topic")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.avg("latency_ms").alias("latency_ms_avg"),
            F.max("latency_ms").alias("latency_ms_max"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "topic",
            "records",
            "latency_ms_avg",
            "latency_ms_max",
        )
    )


def processing_time_ms() -> Column:
    """The wall-clock time each row is processed at, in epoch milliseconds. Not current_timestamp(): Spark
    fixes that once per batch, and a Real-time Mode batch lasts minutes while its records flow through."""
    return F.expr("reflect('java.lang.System', 'currentTimeMillis')").cast("long")


def realtime_routed(parsed: DataFrame, output_topic: str, dead_letter_topic: str) -> DataFrame:
    """What the low-latency path writes to Kafka, one row per input record (topic, key, value): a
    well-formed record goes to output_topic as a JSON object enriched with where it came from and when it
    was processed; a malformed one to dead_letter_topic with its reason and its raw bytes in base64.
    Stateless (a projection), so Spark's Real-time Mode can run it."""
    good = F.col("quarantine_reason").isNull()
    now = processing_time_ms()
    enriched = F.to_json(
        F.struct(
            F.col("topic").alias("source_topic"),
            *_RECORD_COLUMNS,
            F.unix_millis("kafka_timestamp").alias("kafka_timestamp_ms"),
            now.alias("processed_at_ms"),
        )
    )
    dead_letter = F.to_json(
        F.struct(
            F.col("topic").alias("source_topic"),
            "partition",
            "offset",
            F.col("quarantine_reason").alias("reason"),
            F.base64("key_raw").alias("key_base64"),
            F.base64("value_raw").alias("value_base64"),
            F.unix_millis("kafka_timestamp").alias("kafka_timestamp_ms"),
            now.alias("processed_at_ms"),
        )
    )
    return parsed.select(
        F.when(good, F.lit(output_topic)).otherwise(F.lit(dead_letter_topic)).alias("topic"),
        F.col("key_raw").alias("key"),
        F.when(good, enriched).otherwise(dead_letter).alias("value"),
    )
