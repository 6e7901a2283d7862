"""Read what the job wrote, for operators and the verification suite: `python -m kafkalab_spark.audit`.

Runs a small local Spark session on the node (no cluster resources) and reads the outputs through
Spark, which honours the file sink's _spark_metadata log: only committed batches count, exactly as a
downstream reader sees them. Prints JSON.

    python -m kafkalab_spark.audit --config /etc/spark-consumer/job.toml                # totals
    python -m kafkalab_spark.audit --config ... --run RUN_ID --records                  # one e2e run's rows
    python -m kafkalab_spark.audit --config ... --tail 5                                # the latest rows
    python -m kafkalab_spark.audit --config ... --topic events [--records]              # a JSON topic's archived rows
    python -m kafkalab_spark.audit --config ... --avro-topic orders [--records]         # an Avro topic's archive
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafkalab_spark import avro
from kafkalab_spark import config as job_config


def local_session() -> SparkSession:
    return (
        SparkSession.builder.master("local[1]")
        .appName("kafkalab-spark-audit")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def _read(spark: SparkSession, path: str) -> DataFrame | None:
    log = Path(path) / "_spark_metadata"
    if not log.is_dir() or not any(p.name.split(".")[0].isdigit() for p in log.iterdir()):
        return None  # nothing committed yet (the job makes the log before its first commit)
    return spark.read.parquet(path)


def metrics_against_archive(records: DataFrame, metrics: DataFrame) -> dict[str, Any]:
    """Each closed window of the windowed counts against the archive: how many archived records of that topic
    have a Kafka timestamp in the window. Equal when every record counted once (exactly once); the counts can
    only fall short for records later than the watermark allowed."""
    archived = records.join(
        metrics.select("topic", "window_start", "window_end", F.col("records").alias("counted")),
        on=(records["topic"] == metrics["topic"])
        & (records["kafka_timestamp"] >= metrics["window_start"])
        & (records["kafka_timestamp"] < metrics["window_end"]),
    )
    per_window = archived.groupBy(metrics["topic"], "window_start", "counted").agg(F.count(F.lit(1)).alias("archived"))
    rows = per_window.collect()
    differing = [
        {
            "topic": r["topic"],
            "window_start": str(r["window_start"]),
            "counted": r["counted"],
            "archived": r["archived"],
        }
        for r in rows
        if r["counted"] != r["archived"]
    ]
    return {"windows": len(rows), "differing": sorted(differing, key=lambda d: d["window_start"])[:20]}


def run_rows(records: DataFrame, run_id: str) -> DataFrame:
    """The rows of one numbered run (values as kafkalab.e2e encodes them: {"run", "seq", "ts_ms"})."""
    return records.where(F.col("fields")["run"] == F.lit(run_id)).select(
        "topic", "partition", "offset", "key", F.col("fields")["seq"].cast("long").alias("seq")
    )


def topic_rows(records: DataFrame, topic: str) -> DataFrame:
    """The archived rows of one topic: partition, offset, key, value (the text) and processed_at_ms, when the
    job processed the row in milliseconds since the epoch (floored: processed_at keeps microseconds)."""
    return records.where(F.col("topic") == F.lit(topic)).select(
        "partition",
        "offset",
        "key",
        "value",
        F.floor(F.unix_micros("processed_at") / 1000).cast("long").alias("processed_at_ms"),
    )


def topic_audit(spark: SparkSession, cfg: job_config.JobConfig, topic: str, with_records: bool) -> dict[str, Any]:
    """One topic's rows in the main archive: rows, distinct positions and, with_records, each row
    [partition, offset, key, value, processed_at_ms] in (partition, offset) order."""
    records = _read(spark, cfg.output_path)
    report: dict[str, Any] = {"topic": topic, "rows": 0, "distinct_positions": 0}
    if with_records:
        report["records"] = []
    if records is None:
        return report
    rows = topic_rows(records, topic)
    report["rows"] = rows.count()
    report["distinct_positions"] = rows.select("partition", "offset").distinct().count()
    if with_records:
        report["records"] = [
            [r["partition"], r["offset"], r["key"], r["value"], r["processed_at_ms"]]
            for r in rows.orderBy("partition", "offset").collect()
        ]
    return report


def audit(
    spark: SparkSession,
    cfg: job_config.JobConfig,
    run_id: str | None,
    with_records: bool,
    tail: int,
    quarantine_keys: Sequence[str] = (),
    check_metrics: bool = False,
) -> Any:
    records = _read(spark, cfg.output_path)
    quarantine = _read(spark, cfg.quarantine_path)
    metrics = _read(spark, cfg.metrics_path)
    report: dict[str, Any] = {
        "rows": records.count() if records is not None else 0,
        "distinct_positions": (
            records.select("topic", "partition", "offset").distinct().count() if records is not None else 0
        ),
        "quarantined": quarantine.count() if quarantine is not None else 0,
        "quarantine_reasons": (
            {r["reason"]: r["count"] for r in quarantine.groupBy("reason").count().collect()}
            if quarantine is not None
            else {}
        ),
        "metric_windows": metrics.count() if metrics is not None else 0,
    }
    if records is not None and run_id is not None:
        rows = run_rows(records, run_id)
        report["run"] = {"id": run_id, "rows": rows.count()}
        if with_records:
            report["run"]["records"] = [
                [r["topic"], r["partition"], r["offset"], r["key"], r["seq"]] for r in rows.collect()
            ]
    if quarantine is not None and quarantine_keys:
        found = quarantine.where(F.col("key").cast("string").isin(list(quarantine_keys)))
        report["quarantine_by_key"] = {
            r["key"]: r["reason"] for r in found.select(F.col("key").cast("string"), "reason").collect()
        }
    if records is not None and metrics is not None and check_metrics:
        report["metrics_against_archive"] = metrics_against_archive(records, metrics)
    if records is not None and tail:
        latest = records.orderBy(F.col("processed_at").desc(), F.col("offset").desc()).limit(tail)
        report["latest"] = [
            {k: (str(v) if k in ("kafka_timestamp", "processed_at") else v) for k, v in r.asDict().items()}
            for r in latest.drop("fields").collect()
        ]
    return report


def avro_audit(spark: SparkSession, cfg: job_config.JobConfig, topic: str, with_records: bool) -> dict[str, Any]:
    """One Avro topic's archive (every batch, columns merged) and the Avro quarantine: rows, distinct positions,
    the typed columns of the records (value.*) and, with_records, each row [partition, offset, key, schema id,
    value as a JSON object]."""
    if cfg.avro is None:
        raise SystemExit(f"{topic}: the job's settings have no [avro] table")
    records = avro.read_batches(spark, str(Path(cfg.avro.output_path, topic)))
    quarantine = avro.read_batches(spark, cfg.avro.quarantine_path)
    report: dict[str, Any] = {"topic": topic, "rows": 0, "distinct_positions": 0, "columns": {}, "quarantined": {}}
    if records is not None:
        report["rows"] = records.count()
        report["distinct_positions"] = records.select("partition", "offset").distinct().count()
        report["columns"] = {f.name: f.dataType.simpleString() for f in records.schema["value"].dataType.fields}
        report["batches"] = records.select("batch").distinct().count()
        if with_records:
            rows = records.select(
                "partition",
                "offset",
                "key",
                "schema_id",
                F.to_json("value", {"ignoreNullFields": "false"}).alias("value"),
            )
            report["records"] = [
                [r["partition"], r["offset"], r["key"], r["schema_id"], json.loads(r["value"])] for r in rows.collect()
            ]
    if quarantine is not None:
        of_topic = quarantine.where(F.col("topic") == topic)
        report["quarantined"] = {
            f"{r['partition']}:{r['offset']}": r["reason"]
            for r in of_topic.select("partition", "offset", "reason").collect()
        }
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkalab_spark.audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--run", help="a kafkalab.e2e run id: count (and with --records list) its rows")
    parser.add_argument(
        "--records",
        action="store_true",
        help="list the rows of --run, --avro-topic or --topic (for --run: [topic, partition, offset, key, seq])",
    )
    parser.add_argument("--tail", type=int, default=0, help="also show the N latest rows")
    parser.add_argument("--quarantine-key", action="append", default=[], help="the quarantine reason of this key")
    parser.add_argument(
        "--check-metrics", action="store_true", help="each window of the windowed counts against the archive"
    )
    parser.add_argument("--avro-topic", help="this Avro topic's archive (with --records: its rows) and quarantine")
    parser.add_argument(
        "--topic",
        help="this JSON topic's rows in the main archive (with --records: [partition, offset, key, value, "
        "processed_at_ms])",
    )
    args = parser.parse_args(argv)
    cfg = job_config.load(args.config)
    spark = local_session()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if args.avro_topic:
            report = avro_audit(spark, cfg, args.avro_topic, args.records)
        elif args.topic:
            report = topic_audit(spark, cfg, args.topic, args.records)
        else:
            report = audit(spark, cfg, args.run, args.records, args.tail, args.quarantine_key, args.check_metrics)
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
