"""The consumer job's executors are sized from the workers the inventory declares, and a cluster that cannot
hold them is refused before any host changes (plugins/filter/spark_consumer_sizing.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.kafka.plugins.filter.spark_consumer_sizing import spark_consumer_sizing
from ansible_collections.kafkalab.kafka.plugins.filter.spark_model import memory_mb, worker_resources

REALTIME = {"input_partitions": 6, "realtime": True, "realtime_mode": "realtime"}


def workers(count: int, cores: int, memory_mb: int) -> dict[str, dict[str, int]]:
    return {f"spark{i + 1}": {"cores": cores, "memory_mb": memory_mb} for i in range(count)}


def test_the_lab_gets_one_executor_of_each_application_per_worker_and_survives_losing_a_worker() -> None:
    sizing = spark_consumer_sizing(workers(2, 8, 4096), REALTIME)
    assert sizing["problems"] == []
    assert sizing["archive"] == {
        "executor_cores": 1,
        "cores_max": 2,
        "executor_memory": "768m",
        "shuffle_partitions": 2,
        "min_partitions": 0,
        # Six input partitions, two archive cores: each batch is coalesced to two tasks (two Parquet files).
        "write_partitions": 2,
    }
    assert sizing["realtime"] == {"executor_cores": 3, "cores_max": 6, "executor_memory": "1216m"}
    assert sizing["survives_worker_loss"] is True
    # Either worker alone holds both applications' executors once the other is lost: 2 x (1 + 3) cores and
    # 2 x (768 + 1216) MiB.
    assert 2 * (1 + 3) <= 8 and 2 * (768 + 1216) <= 4096


def test_workers_too_small_to_lose_one_are_sized_to_all_of_them() -> None:
    sizing = spark_consumer_sizing(workers(2, 4, 2048), REALTIME)
    assert sizing["problems"] == []
    assert sizing["survives_worker_loss"] is False
    assert (sizing["archive"]["cores_max"], sizing["realtime"]["cores_max"]) == (2, 6)
    assert "does not fit after losing a worker" in sizing["summary"]


def test_a_production_cluster_gives_the_archive_the_cores_the_low_latency_path_leaves() -> None:
    sizing = spark_consumer_sizing(workers(3, 8, 24576), REALTIME)
    # Budget without the biggest worker: 16 cores; the low-latency path holds 6; the archive 3 per worker.
    assert sizing["archive"]["executor_cores"] == 3
    assert sizing["archive"]["cores_max"] == 9
    assert sizing["archive"]["shuffle_partitions"] == 9
    # Six input partitions, nine archive cores: the Kafka source splits partitions into nine tasks.
    assert sizing["archive"]["min_partitions"] == 9
    assert sizing["archive"]["write_partitions"] == 0
    assert sizing["realtime"] == {"executor_cores": 2, "cores_max": 6, "executor_memory": "3072m"}
    assert sizing["survives_worker_loss"] is True


def test_micro_batch_mode_takes_one_core_per_worker_not_one_per_partition() -> None:
    sizing = spark_consumer_sizing(workers(2, 4, 4096), {**REALTIME, "realtime_mode": "microbatch"})
    assert sizing["realtime"]["cores_max"] == 2
    assert sizing["realtime"]["executor_cores"] == 1
    assert sizing["survives_worker_loss"] is True


def test_without_the_low_latency_path_the_archive_takes_the_whole_budget() -> None:
    sizing = spark_consumer_sizing(workers(2, 4, 4096), {**REALTIME, "realtime": False})
    assert sizing["archive"]["cores_max"] == 4
    assert sizing["archive"]["executor_memory"] == "2048m"  # two of them fill a worker after a loss


def test_values_the_inventory_sets_win_over_derived_ones() -> None:
    explicit: dict[str, Any] = {
        "archive": {"executor_cores": 2, "cores_max": 0, "executor_memory": "3g", "shuffle_partitions": 0},
        "realtime": {"executor_cores": 0, "cores_max": 0, "executor_memory": ""},
    }
    sizing = spark_consumer_sizing(workers(2, 8, 4096), {**REALTIME, "explicit": explicit})
    assert sizing["archive"]["executor_cores"] == 2
    assert sizing["archive"]["executor_memory"] == "3g"
    assert sizing["archive"]["cores_max"] == 2
    assert sizing["realtime"]["executor_memory"] == "1216m"


def test_a_cluster_the_inventory_does_not_describe_takes_the_fallback_sizes() -> None:
    fallback = {
        "archive": {"executor_cores": 4, "cores_max": 8, "executor_memory": "4g", "shuffle_partitions": 8},
        "realtime": {"executor_cores": 4, "cores_max": 6, "executor_memory": "2g"},
    }
    explicit = {"archive": {"cores_max": 12}}
    sizing = spark_consumer_sizing({}, {**REALTIME, "fallback": fallback, "explicit": explicit})
    assert sizing["archive"] == {**fallback["archive"], "cores_max": 12, "min_partitions": 0, "write_partitions": 0}
    assert sizing["realtime"] == fallback["realtime"]
    assert sizing["problems"] == []


def test_workers_without_the_cores_real_time_mode_holds_are_refused_with_the_fix() -> None:
    sizing = spark_consumer_sizing(workers(2, 3, 4096), REALTIME)
    assert sizing["problems"] == [
        "the Spark workers offer 6 cores in all (spark_worker_cores: spark1: 3, spark2: 3) but the consumer job needs "
        "at least 8: 6 for the low-latency path in Real-time Mode (one per input partition) and one per worker for "
        "the archive (2). Raise spark_worker_cores to 4 on every worker, lower spark_consumer_topic_partitions, or "
        "set spark_consumer_realtime_mode: microbatch."
    ]


def test_workers_without_the_memory_for_the_executors_are_refused_with_the_fix() -> None:
    sizing = spark_consumer_sizing(workers(1, 8, 1024), REALTIME)
    assert sizing["problems"] == [
        "the smallest Spark worker offers 1024 MiB (spark_worker_memory) but the consumer job's executors need at "
        "least 512 MiB each on it (2 archive and 6 low-latency cores per worker). Raise spark_worker_memory to at "
        "least 2g on every worker."
    ]
    # The suggested size is enough.
    assert spark_consumer_sizing(workers(1, 8, 2 * 1024), REALTIME)["problems"] == []


def test_spark_memory_strings_are_read_as_mib() -> None:
    assert [memory_mb(v) for v in ("2g", "768m", "1024", "1T", "512mb", "lots", "")] == [
        2048,
        768,
        1024,
        1024 * 1024,
        512,
        None,
        None,
    ]


def test_the_cluster_model_names_a_worker_whose_cores_or_memory_cannot_be_used() -> None:
    declared = {"spark1": {"cores": 0, "memory": "4g"}, "spark2": {"cores": 8, "memory": "lots"}}
    resources, problems = worker_resources(["spark1", "spark2"], declared)
    assert resources == {}
    assert problems == [
        "spark1: spark_worker_cores is 0: give the number of cores the worker offers to executors, a whole number "
        "of at least 1 (e.g. spark_worker_cores: 8).",
        "spark2: spark_worker_memory is 'lots': give the memory the worker offers to executors as a Spark size of "
        "at least 512m (e.g. spark_worker_memory: 24g).",
    ]


def test_an_archive_executor_fits_beside_a_low_latency_one_on_the_smallest_worker() -> None:
    uneven = {"spark1": {"cores": 8, "memory_mb": 4096}, "spark2": {"cores": 6, "memory_mb": 4096}}
    sizing = spark_consumer_sizing(uneven, REALTIME)
    assert (sizing["realtime"]["executor_cores"], sizing["archive"]["executor_cores"]) == (3, 3)
    assert sizing["archive"]["cores_max"] == 6
