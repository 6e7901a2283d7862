"""The low-latency path: the job's topics -> Kafka, each record forwarded as soon as it is read.

One Structured Streaming query, its own application (spark-submit) and checkpoint beside the archive job
(kafkalab_spark.job): a well-formed record goes, enriched with its source position and processing time, to
realtime.output_topic; a malformed one, with its reason and raw bytes, to realtime.dead_letter_topic.

realtime.mode realtime runs it in Spark's Real-time Mode (Spark 4.1+): long-running tasks, one per input
partition, process records as they arrive; realtime.batch_duration is only how often progress is
checkpointed. The application must hold a core per input partition for as long as it runs, so it runs
apart from the archive job, which would otherwise starve it. realtime.mode microbatch runs the same query
in 1-second micro-batches: the fallback where Real-time Mode cannot run.

Delivery to the output topics is at least once (Spark's Kafka sink is, in either mode): after a crash or a
stop the records of the unfinished batch are written again. Consumers key on (source_topic, partition, offset).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from kafkalab_spark import config as job_config
from kafkalab_spark import metrics as job_metrics
from kafkalab_spark.job import (
    ProgressListener,
    job_version,
    read_kafka,
    resume_point,
    run_until_stopped,
    settings_from_command_line,
)
from kafkalab_spark.progress import StatusFile
from kafkalab_spark.transforms import parse_records, realtime_routed

LOG = logging.getLogger("kafkalab_spark.realtime")
QUERY = "realtime"


def start_query(spark: SparkSession, cfg: job_config.JobConfig, rt: job_config.RealtimeConfig) -> StreamingQuery:
    # Real-time Mode reads each partition with one long-running task: no per-batch offset limit.
    source = read_kafka(spark, cfg, max_offsets_per_trigger=0)
    writer = (
        realtime_routed(parse_records(source), rt.output_topic, rt.dead_letter_topic)
        .writeStream.queryName(QUERY)
        .format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        # A few milliseconds of batching: one produce request per partition and moment instead of one per record,
        # which on a busy cluster costs the brokers far more than the wait.
        .option("kafka.linger.ms", "5")
        .option("checkpointLocation", rt.checkpoint_path)
        .outputMode("update")
    )
    for key, value in sorted(cfg.kafka_options.items()):
        writer = writer.option(f"kafka.{key}", value)
    if rt.mode == "realtime":
        writer = writer.trigger(realTime=rt.batch_duration)
    else:
        writer = writer.trigger(processingTime="1 second")
    query: StreamingQuery = writer.start()
    return query


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_from_command_line(
        argv,
        "kafkalab_spark.realtime",
        __doc__.split("\n\n")[0],
        lambda document: (job_config.parse(document), job_config.parse_realtime(document)),
    )
    if settings is None:
        return 2
    cfg, rt = settings.settings
    started_from = resume_point(QUERY, rt.checkpoint_path, cfg.starting_offsets)
    status = StatusFile(rt.status_path, {QUERY: {**started_from, "mode": rt.mode}}, job_version())
    if rt.metrics_port:
        # Real-time Mode reports at the end of each long batch (batch_duration); micro-batches every second.
        every = job_config.seconds(rt.batch_duration) if rt.mode == "realtime" else 1.0
        app = f"{cfg.app_name}-realtime"
        job_metrics.serve(status, job_metrics.report_intervals({QUERY: every}), app, cfg.metrics_bind, rt.metrics_port)
    spark = SparkSession.builder.appName(f"{cfg.app_name}-realtime").getOrCreate()
    spark.streams.addListener(ProgressListener(status))
    query = start_query(spark, cfg, rt)
    # A Real-time Mode batch lasts batch_duration (minutes): a stop does not wait for it. The records of the
    # cut-off batch are forwarded again on the next start (the path is at least once either way).
    return int(run_until_stopped(spark, [query], status, settings.stop_file, 0.0))


if __name__ == "__main__":
    sys.exit(main())
