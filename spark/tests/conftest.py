"""One local SparkSession for the whole test run: starting Spark costs seconds, a query milliseconds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

# Spark's Avro support (from_avro) is a jar of its own, which the spark role pushes from the controller's
# verified cache (make artifacts fetches it: artifacts/locks/spark-kafka-<version>.json).
ROOT = Path(__file__).resolve().parents[2]
AVRO_JARS = sorted(str(p) for p in ROOT.glob(".cache/artifacts/spark-kafka-*/spark-avro_*.jar"))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    if not AVRO_JARS:
        pytest.fail("no spark-avro jar in .cache/artifacts/spark-kafka-*: run make artifacts first")
    session = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars", ",".join(AVRO_JARS))
        .appName("kafkalab-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
