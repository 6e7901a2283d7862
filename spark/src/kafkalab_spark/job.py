"""The streaming job: Kafka topics -> Parquet (exactly once), a quarantine, and windowed counts.

Three Structured Streaming queries share one SparkSession, each with its own checkpoint:
  records     well-formed records -> Parquet file sink at paths.output
  quarantine  malformed records and their reason -> Parquet at paths.quarantine
  metrics     per-topic windowed counts and latency of the archived records -> Parquet at paths.metrics
              (after the watermark)
and, when [avro] lists topics, a fourth:
  avro        the Avro topics' records as typed columns, schemas from the registry (kafkalab_spark.avro)
The file sink records each committed batch in <path>/_spark_metadata, and the checkpoint records the
offsets each batch read: after a crash a batch is re-run with the same offsets and written at most once,
so every Kafka record lands exactly once. Read the output with Spark (which honours _spark_metadata),
not with a plain Parquet reader, which would also see the files of an interrupted batch. The metrics query
reads the archive that way, as a stream of its committed files: Kafka is read (and each record parsed) by
two queries, not three.

Run by spark-submit (the spark_consumer role's systemd unit): the master URL, jars and memory come from
spark-submit's properties file; everything about the data comes from the TOML config (--config).

Stopping: the unit's ExecStop creates the --stop-file and waits for the job to exit. The job then stops each
query between two batches, so the next start resumes right after the last committed batch instead of running
a cut-off one again (which would be safe too, only slower). A query that ends on its own (an error) ends the
job with status 1, and systemd starts it again from the checkpoints.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from kafkalab_spark import avro
from kafkalab_spark import config as job_config
from kafkalab_spark import metrics as job_metrics
from kafkalab_spark.progress import StatusFile, progress_line, read_checkpoint, summarize_progress
from kafkalab_spark.transforms import good_records, parse_records, quarantined, records_schema, windowed_counts

LOG = logging.getLogger("kafkalab_spark")
QUERIES = ("records", "quarantine", "metrics")
# How long a stop waits, by default, for the running batches to commit before cutting them off (the role
# passes --stop-wait, a little less than the unit's TimeoutStopSec, so the job exits by itself).
STOP_WAIT_S = 60.0
T = TypeVar("T")


def query_names(cfg: job_config.JobConfig) -> tuple[str, ...]:
    """The job's queries: the three above, and the Avro archive's when [avro] lists topics."""
    return QUERIES + (("avro",) if cfg.avro is not None else ())


def read_kafka(
    spark: SparkSession,
    cfg: job_config.JobConfig,
    max_offsets_per_trigger: int | None = None,
    topics: Sequence[str] = (),
) -> DataFrame:
    """The Kafka source over the job's topics (or those given); max_offsets_per_trigger overrides the config's
    (0: no limit)."""
    limit = cfg.max_offsets_per_trigger if max_offsets_per_trigger is None else max_offsets_per_trigger
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("subscribe", ",".join(topics or cfg.topics))
        # Only used when a query has no checkpoint yet; afterwards the checkpoint's offsets win.
        .option("startingOffsets", cfg.starting_offsets)
        .option("failOnDataLoss", str(cfg.fail_on_data_loss).lower())
    )
    if limit:
        reader = reader.option("maxOffsetsPerTrigger", str(limit))
    if cfg.min_partitions and max_offsets_per_trigger is None:
        reader = reader.option("minPartitions", str(cfg.min_partitions))
    for key, value in sorted(cfg.kafka_options.items()):
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def archived_records(spark: SparkSession, cfg: job_config.JobConfig) -> DataFrame:
    """The archive (the records query's Parquet output) as a stream of its committed files. The sink's commit
    log (_spark_metadata) is made before any query starts: a file source that finds it reads only committed
    files, one that does not would read every file it lists, an unfinished batch's too."""
    Path(cfg.output_path, "_spark_metadata").mkdir(parents=True, exist_ok=True)
    return spark.readStream.schema(records_schema(spark)).parquet(cfg.output_path)


def start_queries(spark: SparkSession, cfg: job_config.JobConfig) -> list[StreamingQuery]:
    source = read_kafka(spark, cfg)
    if cfg.write_partitions:
        # As many tasks as the archive has cores, not one per Kafka partition: fewer, larger Parquet files and
        # less per-task work for the same records.
        source = source.coalesce(cfg.write_partitions)
    parsed = parse_records(source)
    # Each batch's produce-to-processing latency of the archived records, in its progress (observedMetrics): what
    # the job's metrics endpoint serves as kafkalab_spark_query_record_latency_seconds. No state, no checkpoint change.
    archived = good_records(parsed).observe(
        "latency",
        F.count(F.lit(1)).alias("rows"),
        F.max("latency_ms").alias("max_ms"),
        F.avg("latency_ms").alias("avg_ms"),
    )
    sinks: dict[str, tuple[DataFrame, str]] = {
        "records": (archived, cfg.output_path),
        "quarantine": (quarantined(parsed), cfg.quarantine_path),
        "metrics": (
            windowed_counts(archived_records(spark, cfg), cfg.window_duration, cfg.watermark_delay),
            cfg.metrics_path,
        ),
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
            .trigger(processingTime=cfg.trigger_for(name))
            .start()
        )
    if cfg.avro is not None:
        queries.append(start_avro_query(spark, cfg, cfg.avro))
    return queries


def start_avro_query(spark: SparkSession, cfg: job_config.JobConfig, avro_cfg: job_config.AvroConfig) -> StreamingQuery:
    """The Avro archive (kafkalab_spark.avro): its own Kafka source and checkpoint, each micro-batch decoded with
    the registry's schemas and written once per topic (foreachBatch)."""
    registry = avro.Registry(avro_cfg.registry_urls, avro_cfg.registry_ca)
    archive = avro.AvroArchive(registry, avro_cfg.output_path, avro_cfg.quarantine_path)
    return (
        read_kafka(spark, cfg, topics=avro_cfg.topics)
        .writeStream.queryName("avro")
        .foreachBatch(archive)
        .option("checkpointLocation", cfg.checkpoint_for("avro"))
        .trigger(processingTime=avro_cfg.trigger_interval)
        .start()
    )


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
    """Where a query resumes: the checkpointed batch and offsets, or the startingOffsets it uses without one;
    rerun_batch is the batch cut off before its commit that the query runs again (None after a clean stop)."""
    state = read_checkpoint(checkpoint)
    if state is None:
        LOG.info("query %s: no checkpoint yet, starting from startingOffsets=%s", query, starting_offsets)
        return {"checkpoint": None, "starting_offsets": starting_offsets}
    rerun = state.planned_batch_id if state.planned_batch_id > state.batch_id else None
    LOG.info(
        "query %s: resuming from checkpoint batch %d, offsets %s%s",
        query,
        state.batch_id,
        json.dumps(state.offsets, sort_keys=True),
        f"; batch {rerun} was cut off before its commit and runs again" if rerun is not None else "",
    )
    return {"checkpoint": {"batch_id": state.batch_id, "offsets": state.offsets, "rerun_batch": rerun}}


def started_from(cfg: job_config.JobConfig) -> dict[str, Any]:
    """For each query: the checkpointed batch and offsets it resumes from, or the startingOffsets it uses."""
    return {name: resume_point(name, cfg.checkpoint_for(name), cfg.starting_offsets) for name in query_names(cfg)}


@dataclass(frozen=True)
class Startup(Generic[T]):
    """What an application starts with: its validated settings, and the file whose appearance asks it to stop."""

    settings: T
    stop_file: Path | None
    stop_wait_s: float = STOP_WAIT_S


def settings_from_command_line(
    argv: Sequence[str] | None, prog: str, description: str, parse: Callable[[dict[str, Any]], T]
) -> Startup[T] | None:
    """The application's start: --config names the TOML settings, parse validates them, --stop-file is the
    stop request the unit's ExecStop creates; logging goes to stderr (the journal). None, with the reason
    logged, when the settings cannot be read or are invalid."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--config", required=True, help="the job's TOML settings")
    parser.add_argument("--stop-file", type=Path, help="stop (between batches) once this file exists")
    parser.add_argument(
        "--stop-wait", type=float, default=STOP_WAIT_S, help="seconds a stop waits for running batches to commit"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    LOG.info("%s %s starting", prog, job_version())
    try:
        return Startup(parse(job_config.read_document(args.config)), args.stop_file, args.stop_wait)
    except (OSError, job_config.ConfigError) as exc:
        LOG.error("cannot start: %s", exc)
        return None


def job_version() -> str:
    """The installed build's version (the wheel's), shown in the log and the status file."""
    try:
        return metadata.version("kafkalab-spark")
    except metadata.PackageNotFoundError:  # run from a source tree (the unit tests)
        return "unknown"


def stop_between_batches(query: StreamingQuery, status: StatusFile, deadline: float, poll_s: float = 0.2) -> None:
    """Stop a query once no trigger is running (its last batch committed), or at the deadline (time.monotonic())
    regardless: a batch cut off then runs again on the next start, with the same offsets, so stopping is
    always safe."""
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(poll_s)
    between = not query.status.get("isTriggerActive")
    progress: dict[str, Any] = query.lastProgress or {}  # a StreamingQueryProgress is a dict
    last = progress.get("batchId")
    query.stop()
    status.stopping(query.name or str(query.id), last, between)
    LOG.info(
        "query %s stopped %s (last batch run: %s)",
        query.name,
        "between batches" if between else "in the middle of a batch, which the next start runs again",
        last,
    )


def run_until_stopped(
    spark: SparkSession, queries: Sequence[StreamingQuery], status: StatusFile, stop_file: Path | None, wait_s: float
) -> int:
    """Wait for the first of: a query ending (only an error ends one: status 1, and systemd starts the job
    again from its checkpoints), or the stop file (each query stopped as stop_between_batches says: status 0)."""
    while not spark.streams.awaitAnyTermination(1):
        if stop_file is not None and stop_file.exists():
            LOG.info("stop requested (%s): stopping each query between batches, within %.0f s", stop_file, wait_s)
            deadline = time.monotonic() + wait_s
            for query in queries:
                stop_between_batches(query, status, deadline)
            return 0
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    startup = settings_from_command_line(argv, "kafkalab_spark.job", __doc__.split("\n\n")[0], job_config.parse)
    if startup is None:
        return 2
    cfg = startup.settings
    status = StatusFile(cfg.status_path, started_from(cfg), job_version())
    if cfg.metrics_port:
        triggers = {name: job_config.seconds(cfg.trigger_for(name)) for name in query_names(cfg)}
        job_metrics.serve(
            status, job_metrics.report_intervals(triggers), cfg.app_name, cfg.metrics_bind, cfg.metrics_port
        )
    spark = SparkSession.builder.appName(cfg.app_name).getOrCreate()
    spark.streams.addListener(ProgressListener(status))
    queries = start_queries(spark, cfg)
    # A batch holds at most max_offsets_per_trigger records: long enough to finish the one running.
    return run_until_stopped(spark, queries, status, startup.stop_file, startup.stop_wait_s)


if __name__ == "__main__":
    sys.exit(main())
