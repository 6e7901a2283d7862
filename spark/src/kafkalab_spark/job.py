"""The streaming job: Kafka topics -> Parquet (exactly once), a quarantine, and windowed counts.

Three Structured Streaming queries share one SparkSession, each with its own checkpoint:
  records     well-formed records -> Parquet file sink at paths.output
  quarantine  malformed records and their reason -> Parquet at paths.quarantine
  metrics     per-topic windowed counts and latency -> Parquet at paths.metrics (after the watermark)
The file sink records each committed batch in <path>/_spark_metadata, and the checkpoint records the
offsets each batch read: after a crash a batch is re-run with the same offsets and written at most once,
so every Kafka record lands exactly once. Read the output with Spark (which honours _spark_metadata),
not with a plain Parquet reader, which would also see the files of an interrupted batch.

Run by spark-submit (the spark_consumer role's systemd unit): the master URL, jars and memory come from
spark-submit's properties file; everything about the data comes from the TOML config (--config).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from kafkalab_spark import config as job_config
from kafkalab_spark.progress import StatusFile, progress_line, read_checkpoint, summarize_progress
from kafkalab_spark.transforms import good_records, parse_records, quarantined, windowed_counts

LOG = logging.getLogger("kafkalab_spark")
QUERIES = ("records", "quarantine", "metrics")
T = TypeVar("T")


def read_kafka(spark: SparkSession, cfg: job_config.JobConfig, max_offsets_per_trigger: int | None = None) -> DataFrame:
    """The Kafka source over the job's topics; max_offsets_per_trigger overrides the config's (0: no limit)."""
    limit = cfg.max_offsets_per_trigger if max_offsets_per_trigger is None else max_offsets_per_trigger
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("subscribe", ",".join(cfg.topics))
        # Only used when a query has no checkpoint yet; afterwards the checkpoint's offsets win.
        .option("startingOffsets", cfg.starting_offsets)
        .option("failOnDataLoss", str(cfg.fail_on_data_loss).lower())
    )
    if limit:
        reader = reader.option("maxOffsetsPerTrigger", str(limit))
    for key, value in sorted(cfg.kafka_options.items()):
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def start_queries(spark: SparkSession, cfg: job_config.JobConfig) -> list[StreamingQuery]:
    parsed = parse_records(read_kafka(spark, cfg))
    sinks: dict[str, tuple[DataFrame, str]] = {
        "records": (good_records(parsed), cfg.output_path),
        "quarantine": (quarantined(parsed), cfg.quarantine_path),
        "metrics": (windowed_counts(good_records(parsed), cfg.window_duration, cfg.watermark_delay), cfg.metrics_path),
    }
    queries = []
    for name in QUERIES:
        frame, path = sinks[name]
        queries.append(
            frame.writeStream.queryName(name)
            .format("parquet")
            .outputMode("append")
            .option("path", path)
            .option("checkpointLocation", cfg.checkpoint_for(name))
            .trigger(processingTime=cfg.trigger_interval)
            .start()
        )
    return queries


class ProgressListener(StreamingQueryListener):
    """Writes each query's progress to the status file and the log."""

    def __init__(self, status: StatusFile) -> None:
        self.status = status
        self.names: dict[str, str] = {}  # query id -> name: idle events carry only the id

    def onQueryStarted(self, event: Any) -> None:
        self.names[str(event.id)] = str(event.name)
        self.status.started(str(event.name), str(event.timestamp))
        LOG.info("query %s started (id %s)", event.name, event.id)

    def onQueryProgress(self, event: Any) -> None:
        progress = json.loads(event.progress.json)
        summary = summarize_progress(progress)
        name = progress.get("name") or "unnamed"
        self.status.record(name, summary)
        LOG.info(progress_line(name, summary))

    def onQueryIdle(self, event: Any) -> None:
        # After a restart with nothing new to read, Spark 4 runs no batch and sends idle events instead
        # of progress: without this the status file would not show the query at all until data comes.
        self.status.idle(self.names.get(str(event.id), str(event.id)), str(event.timestamp))

    def onQueryTerminated(self, event: Any) -> None:
        LOG.error("query %s terminated: %s", event.id, event.exception)
        self.status.terminated(str(event.id), event.exception)


def resume_point(query: str, checkpoint: str, starting_offsets: str) -> dict[str, Any]:
    """Where a query resumes: the checkpointed batch and offsets, or the startingOffsets it uses without one."""
    state = read_checkpoint(checkpoint)
    if state is None:
        LOG.info("query %s: no checkpoint yet, starting from startingOffsets=%s", query, starting_offsets)
        return {"checkpoint": None, "starting_offsets": starting_offsets}
    LOG.info(
        "query %s: resuming from checkpoint batch %d, offsets %s",
        query,
        state.batch_id,
        json.dumps(state.offsets, sort_keys=True),
    )
    return {"checkpoint": {"batch_id": state.batch_id, "offsets": state.offsets}}


def started_from(cfg: job_config.JobConfig) -> dict[str, Any]:
    """For each query: the checkpointed batch and offsets it resumes from, or the startingOffsets it uses."""
    return {name: resume_point(name, cfg.checkpoint_for(name), cfg.starting_offsets) for name in QUERIES}


def settings_from_command_line(
    argv: Sequence[str] | None, prog: str, description: str, parse: Callable[[dict[str, Any]], T]
) -> T | None:
    """The application's start: --config names the TOML settings, parse validates them; logging goes to
    stderr (the journal). None, with the reason logged, when the settings cannot be read or are invalid."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--config", required=True, help="the job's TOML settings")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return parse(job_config.read_document(args.config))
    except (OSError, job_config.ConfigError) as exc:
        LOG.error("cannot start: %s", exc)
        return None


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_command_line(argv, "kafkalab_spark.job", __doc__.split("\n\n")[0], job_config.parse)
    if cfg is None:
        return 2
    status = StatusFile(cfg.status_path, started_from(cfg))
    spark = SparkSession.builder.appName(cfg.app_name).getOrCreate()
    spark.streams.addListener(ProgressListener(status))
    start_queries(spark, cfg)
    # Any query ending (it only ends on an error) ends the job: systemd restarts it from the checkpoints.
    spark.streams.awaitAnyTermination()
    return 1


if __name__ == "__main__":
    sys.exit(main())
