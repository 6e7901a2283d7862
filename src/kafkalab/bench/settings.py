"""The bench's fixed settings: what every Kafka figure is measured with, and where the roles put the files it reads."""

from __future__ import annotations

BENCH_PREFIX = "kafkalab-bench-"
SECTIONS = ("provisioning", "physical", "kafka", "spark")
# Record sizes (bytes) and how many records each producer run sends: about 20 MB and 50 MB, a few seconds
# to twenty at the rates a 2-core lab reaches, long enough that the JVM's start-up is not the figure.
RECORD_COUNTS = {100: 200_000, 1024: 50_000}
ACKS = ("1", "all")
CLIENTS = ("kafka-java", "kafka-python")
REPLICATION = 3
PARTITIONS = 3
MIN_INSYNC = 2
# Producer settings both clients get, so their figures compare (Kafka 4's defaults for linger and batch).
LINGER_MS = 5
BATCH_SIZE = 16_384
DD_MIB = 512
IPERF_SECONDS = 5
# Where the roles put things (the defaults; tests/cluster and tests/spark_cluster read the same paths).
SERVER_PROPERTIES = "/etc/kafka/server.properties"
KAFKA_SERVICE = "kafka"
# How long the brokers' CPU is read with no bench traffic: what Kafka costs at rest, the metrics agent (and
# Prometheus scraping it) included when it runs; long enough for several scrapes at any interval up to 15 s.
IDLE_SECONDS = 60
SPARK_JOB_CONFIG = "/etc/spark-consumer/job.toml"
SPARK_SUBMIT_CONF = "/etc/spark-consumer/spark-submit.conf"
SPARK_SERVICE = "spark-consumer"
SPARK_REALTIME_SERVICE = "spark-consumer-realtime"
# The bench run's own output and checkpoints go in a folder of this name beside the deployed job's data dir:
# on storage every Spark host shares when the cluster has several (executors on each write there).
SPARK_BENCH_DIR_NAME = "kafkalab-bench"
MIB = 1024 * 1024
