"""`make bench`'s logic without a cluster: parsing the tools' output, percentiles, fractions of the physical
limits, the provisioning summary, the Spark job's latencies, the table and the plots. No figure is asserted
against a clock: every input here is a fixed sample."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties

from kafkalab import kafka_client
from kafkalab.bench import (
    kafka_perf,
    parsing,
    plots,
    report,
    runner,
    spark_job,
    spark_progress,
    stats,
    toml_writer,
)
from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.runner import TaskTime
from kafkalab.bench.spark_progress import Batch

PRODUCER_OUTPUT = """\
123877 records sent, 24770.4 records/sec (2.36 MB/sec), 1812.9 ms avg latency, 3159.0 ms max latency.
300000 records sent, 40727.667662 records/sec (3.88 MB/sec), 2457.85 ms avg latency, 3466.00 ms max latency, \
2563 ms 50th, 3366 ms 95th, 3443 ms 99th, 3466 ms 99.9th.
"""

CONSUMER_OUTPUT = """\
WARNING: option [messages] has been deprecated and will be removed in a future version.
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-22 02:56:28:386, 2026-11-22 02:56:34:099, 87.2040, 15.2641, 360000, 63014.1782, 4415, 1298, 67.1833, \
277349.7689
"""


def test_producer_perf_summary_is_the_line_with_percentiles() -> None:
    figures = parsing.parse_producer_perf(PRODUCER_OUTPUT)
    assert figures["records"] == 300_000
    assert figures["records_per_s"] == pytest.approx(40727.667662)
    assert figures["mib_per_s"] == 3.88
    assert figures["latency_ms"] == {
        "avg": 2457.85,
        "max": 3466.0,
        "p50": 2563,
        "p95": 3366,
        "p99": 3443,
        "p99.9": 3466,
    }


def test_producer_perf_without_a_summary_is_a_measurement_error() -> None:
    progress_only = PRODUCER_OUTPUT.splitlines()[0]
    with pytest.raises(MeasurementError, match="no summary line"):
        parsing.parse_producer_perf(progress_only)


def test_consumer_perf_rates_exclude_the_group_join() -> None:
    figures = parsing.parse_consumer_perf(CONSUMER_OUTPUT)
    assert figures["records"] == 360_000
    assert figures["records_per_s"] == pytest.approx(277349.7689)
    assert figures["mib_per_s"] == pytest.approx(67.1833)
    assert figures["records_per_s_with_group_join"] == pytest.approx(63014.1782)
    assert figures["group_join_ms"] == 4415


def test_consumer_perf_without_stats_is_a_measurement_error() -> None:
    with pytest.raises(MeasurementError):
        parsing.parse_consumer_perf("WARNING: something\n")


def test_dd_summary_gives_mib_per_second() -> None:
    stderr = "512+0 records in\n512+0 records out\n536870912 bytes (537 MB, 512 MiB) copied, 2 s, 268 MB/s\n"
    assert parsing.parse_dd(stderr) == {"bytes": 536870912, "seconds": 2.0, "mib_per_s": 256.0}


def test_dd_failure_is_a_measurement_error() -> None:
    with pytest.raises(MeasurementError):
        parsing.parse_dd("dd: error writing 'x': No space left on device\n")


def test_iperf3_receiver_sum_gives_mib_per_second() -> None:
    report = {"end": {"sum_received": {"bytes": 10 * 2**20 * 4, "seconds": 4.0, "bits_per_second": 0}}}
    assert parsing.parse_iperf3(report)["mib_per_s"] == 10.0


def test_iperf3_error_is_a_measurement_error() -> None:
    with pytest.raises(MeasurementError, match="unable to connect"):
        parsing.parse_iperf3({"error": "unable to connect to server"})


def test_percentile_is_kafkas_index_definition() -> None:
    values = list(range(1, 1001))  # 1..1000, given unsorted
    shuffled = values[500:] + values[:500]
    assert stats.percentile(shuffled, 0.5) == 501  # sorted[int(1000 * 0.5)]
    assert stats.percentile(shuffled, 0.99) == 991
    assert stats.percentile(shuffled, 0.999) == 1000
    assert stats.percentile([7.0], 0.999) == 7.0


def test_latency_summary_names_every_percentile() -> None:
    summary = stats.latency_summary([10.0, 20.0, 30.0, 40.0])
    assert summary == {"avg": 25.0, "max": 40.0, "p50": 30.0, "p95": 40.0, "p99": 40.0, "p99.9": 40.0}


@pytest.mark.parametrize(
    ("shared", "brokers", "copies"),
    [(True, 3, 3.0), (False, 3, 1.0), (False, 6, 0.5)],
    ids=["lab-one-machine", "three-machines", "six-machines"],
)
def test_replicated_bytes_per_measured_limit(shared: bool, brokers: int, copies: float) -> None:
    assert stats.copies_per_limit(3, brokers, shared) == copies


def test_fraction_of_limit_counts_copies() -> None:
    assert stats.fraction_of_limit(10.0, 300.0, copies=3) == pytest.approx(0.1)
    assert stats.fraction_of_limit(10.0, 100.0) == pytest.approx(0.1)


@pytest.mark.parametrize("limit", [None, 0.0])
def test_fraction_of_an_unmeasured_limit_is_none(limit: float | None) -> None:
    assert stats.fraction_of_limit(10.0, limit) is None


def playbook_doc() -> dict[str, Any]:
    def task(name: str, start: str, end: str, hosts: dict[str, Any]) -> dict[str, Any]:
        return {"task": {"name": name, "duration": {"start": start, "end": end}}, "hosts": hosts}

    return {
        "plays": [
            {
                "play": {"name": "Kafka"},
                "tasks": [
                    task(
                        "java : Install OpenJDK",
                        "2026-01-01T00:00:00.000000Z",
                        "2026-01-01T00:00:17.250000Z",
                        {"kafka1": {"changed": True}},
                    ),
                    task(
                        "kafka : Wait for ports",
                        "2026-01-01T00:00:17.300000Z",
                        "2026-01-01T00:00:26.300000Z",
                        {"kafka1": {"changed": False}},
                    ),
                    task(
                        "kafka : Probe",
                        "2026-01-01T00:00:26.300000Z",
                        "2026-01-01T00:00:26.400000Z",
                        {"kafka2": {"failed": True, "ignore_errors": True, "msg": "expected"}},
                    ),
                    {"task": {"name": "never reported", "duration": {"start": "2026-01-01T00:00:27Z"}}, "hosts": {}},
                ],
            }
        ],
        "stats": {
            "kafka1": {"changed": 2, "failures": 0, "unreachable": 0, "ok": 5},
            "kafka2": {"changed": 0, "failures": 0, "unreachable": 0, "ok": 5},
        },
    }


def test_playbook_summary_counts_changes_per_host_and_times_tasks() -> None:
    summary = runner.playbook_summary(playbook_doc())
    assert summary["changed"] == {"kafka1": 2, "kafka2": 0}
    assert summary["changed_total"] == 2
    assert summary["failed_hosts"] == []
    assert summary["failures"] == []  # an ignored failure is not one
    assert [t.name for t in summary["tasks"]] == ["java : Install OpenJDK", "kafka : Wait for ports", "kafka : Probe"]
    assert summary["tasks"][0].seconds == pytest.approx(17.25)


def test_playbook_summary_reports_real_failures() -> None:
    doc = playbook_doc()
    doc["plays"][0]["tasks"][1]["hosts"] = {"kafka3": {"failed": True, "msg": "port 9092 closed"}}
    doc["stats"]["kafka3"] = {"changed": 0, "failures": 1, "unreachable": 0}
    summary = runner.playbook_summary(doc)
    assert summary["failed_hosts"] == ["kafka3"]
    assert summary["failures"] == ["kafka3: kafka : Wait for ports: port 9092 closed"]


def test_slowest_tasks_are_ranked_and_cut() -> None:
    tasks = [TaskTime("p", f"task {i}", float(i)) for i in range(15)]
    slow = runner.slowest_tasks(tasks, 10)
    assert [t["task"] for t in slow] == [f"task {i}" for i in range(14, 4, -1)]
    assert slow[0] == {"task": "task 14", "play": "p", "seconds": 14.0}


def progress_line(batch: int, timestamp: str, ms: int, rows: int, start: dict[str, int], end: dict[str, int]) -> str:
    summary = {
        "batch_id": batch,
        "timestamp": timestamp,
        "trigger_execution_ms": ms,
        "num_input_rows": rows,
        "start_offset": {"bench": start},
        "end_offset": {"bench": end},
    }
    return f"2026-01-01 INFO kafkalab_spark: progress query=records batch={batch} progress_json={json.dumps(summary)}"


PROGRESS_LOG = "\n".join(
    [
        progress_line(0, "2026-01-01T00:00:00.000Z", 4000, 30, {}, {"0": 10, "1": 20}),
        "2026-01-01 INFO kafkalab_spark: progress query=quarantine batch=0 progress_json={}",
        progress_line(1, "2026-01-01T00:00:05.000Z", 2000, 5, {"0": 10, "1": 20}, {"0": 15, "1": 20}),
        progress_line(2, "2026-01-01T00:00:10.000Z", 100, 0, {"0": 15, "1": 20}, {"0": 15, "1": 20}),
    ]
)


def test_progress_log_gives_the_records_querys_batches() -> None:
    batches = spark_progress.parse_progress(PROGRESS_LOG, "bench")
    assert [b.batch_id for b in batches] == [0, 1, 2]
    first = batches[0]
    assert first.start_offset == {} and first.end_offset == {0: 10, 1: 20}
    assert first.committed - first.started == pytest.approx(4.0)


def test_latency_runs_from_send_to_the_commit_of_the_batch_holding_the_record() -> None:
    batches = spark_progress.parse_progress(PROGRESS_LOG, "bench")
    t0 = batches[0].started
    sent = [(0, 3, t0 - 1.0), (1, 19, t0 - 0.5), (0, 12, t0 + 4.0), (0, 99, t0)]
    latencies, unmatched = spark_progress.e2e_latencies_ms(sent, batches)
    # batch 0 commits at t0 + 4 s, batch 1 at t0 + 7 s; offset 99 is in no committed batch
    assert latencies == pytest.approx([5000.0, 4500.0, 3000.0])
    assert unmatched == 1


def test_processed_rate_counts_busy_batches_only() -> None:
    batches = spark_progress.parse_progress(PROGRESS_LOG, "bench")
    assert spark_progress.processed_rate(batches) == {
        "rows": 35,
        "batches": 2,
        "busy_s": 6.0,
        "rows_per_s": pytest.approx(35 / 6),
    }
    assert spark_progress.processed_rate([])["rows_per_s"] == 0.0


def test_end_offsets_wanted_covers_the_highest_offset_per_partition() -> None:
    assert spark_progress.end_offsets_wanted([(0, 4), (1, 0), (0, 9), (0, 2)]) == {"0": 10, "1": 1}


JOB_TOML = """\
app_name = "kafkalab-consumer"

[kafka]
bootstrap_servers = "10.231.0.11:9092"
topics = ["events"]
starting_offsets = "earliest"
max_offsets_per_trigger = 100000
fail_on_data_loss = true

[kafka.options]
"fetch.max.bytes" = "1048576"

[stream]
trigger_interval = "5 seconds"
window_duration = "1 minute"
watermark_delay = "1 minute"

[paths]
output = "/var/lib/spark-consumer/records"
quarantine = "/var/lib/spark-consumer/quarantine"
metrics = "/var/lib/spark-consumer/metrics"
checkpoint = "/var/lib/spark-consumer/checkpoints"
status = "/var/lib/spark-consumer/status.json"
"""


def test_bench_job_config_keeps_the_jobs_settings_and_moves_topic_and_paths() -> None:
    original = tomllib.loads(JOB_TOML)
    config = tomllib.loads(
        toml_writer.to_toml(spark_job.bench_job_config(original, "kafkalab-bench-x", "/b/x", "bench"))
    )
    assert config["app_name"] == "bench"
    assert config["kafka"]["topics"] == ["kafkalab-bench-x"]
    assert config["kafka"]["max_offsets_per_trigger"] == 100000
    assert config["kafka"]["fail_on_data_loss"] is True
    assert config["kafka"]["options"] == {"fetch.max.bytes": "1048576"}
    assert config["stream"] == original["stream"]
    assert set(config["paths"].values()) == {
        "/b/x/records",
        "/b/x/quarantine",
        "/b/x/metrics",
        "/b/x/checkpoints",
        "/b/x/status.json",
    }
    assert original["kafka"]["topics"] == ["events"], "the deployed settings are not modified"


def test_bench_runs_write_inside_the_deployed_jobs_data_dir_on_the_same_storage() -> None:
    assert spark_job.bench_dir(tomllib.loads(JOB_TOML)) == "/var/lib/spark-consumer/kafkalab-bench"
    shared = {"paths": {"checkpoint": "/srv/spark-shared/spark-consumer/checkpoints"}}
    assert spark_job.bench_dir(shared) == "/srv/spark-shared/spark-consumer/kafkalab-bench"


def test_to_toml_round_trips_through_tomllib() -> None:
    doc = {"a": 'quote " and \\ back', "n": 3, "b": False, "l": ["x", "y"], "t": {"u.w": {"v": 1.5}, "e": {}}}
    assert tomllib.loads(toml_writer.to_toml(doc)) == doc


def test_the_bench_job_runs_the_services_command_with_its_own_settings() -> None:
    show = (
        "ExecStart={ path=/opt/spark/current/bin/spark-submit ; argv[]=/opt/spark/current/bin/spark-submit "
        "--properties-file /etc/spark-consumer/spark-submit.conf /opt/spark-consumer/main.py --config "
        "/etc/spark-consumer/job.toml ; ignore_errors=no ; start_time=[Sun 2026-11-22 02:55:19 UTC] ; pid=1758 }\n"
        "Environment=SPARK_HOME=/opt/spark/current PYSPARK_PYTHON=/opt/spark/venv/bin/python\n"
        "User=spark\n"
    )
    unit = parsing.parse_systemctl_show(show)
    assert unit["User"] == "spark"
    argv = parsing.with_config(parsing.execstart_argv(unit["ExecStart"]), "/b/x/job.toml")
    assert argv == [
        "/opt/spark/current/bin/spark-submit",
        "--properties-file",
        "/etc/spark-consumer/spark-submit.conf",
        "/opt/spark-consumer/main.py",
        "--config",
        "/b/x/job.toml",
    ]


def test_a_command_without_config_cannot_run_the_bench_job() -> None:
    with pytest.raises(MeasurementError):
        parsing.with_config(["spark-submit", "main.py"], "/b/job.toml")


def test_spark_properties_file_is_key_space_value() -> None:
    text = "#\n# Ansible managed\nspark.cores.max 2\nspark.jars /opt/spark/jars-kafka/*.jar\n"
    assert parse_properties(text) == {"spark.cores.max": "2", "spark.jars": "/opt/spark/jars-kafka/*.jar"}


def test_spark_properties_values_keep_the_colons_and_equals_signs_after_the_first_space() -> None:
    text = "spark.master   spark://10.231.0.21:7077\nspark.driver.extraJavaOptions -Da=b -Dc=d:e\n"
    assert parse_properties(text) == {
        "spark.master": "spark://10.231.0.21:7077",
        "spark.driver.extraJavaOptions": "-Da=b -Dc=d:e",
    }


def test_bootstrap_is_the_inter_broker_listeners_advertised_address() -> None:
    props = parse_properties(
        "# comment\ninter.broker.listener.name=INTERNAL\n"
        "advertised.listeners=EXTERNAL://127.0.0.1:19091,INTERNAL://10.231.0.11:9092\n"
    )
    assert parsing.broker_address(props) == "10.231.0.11:9092"
    with pytest.raises(MeasurementError):
        parsing.broker_address({"advertised.listeners": "EXTERNAL://127.0.0.1:19091"})


def test_machine_facts_come_from_proc() -> None:
    assert parsing.meminfo_total_bytes("MemTotal:       24684092 kB\nMemFree: 1 kB\n") == 24684092 * 1024
    assert parsing.cpu_model("processor\t: 0\nmodel name\t: AMD EPYC\n") == "AMD EPYC"
    assert parsing.parse_loadavg("0.23 2.19 3.14 1/87 11131\n") == [0.23, 2.19, 3.14]


# What PROCESS_CPU_SCRIPT prints for a broker with the metrics agent: the comm field holds a space and a ')'.
PROCESS_CPU_OUTPUT = """\
4242
4242 (ja va) x) S 1 4242 4242 0 -1 4194560 81946 0 3 0 1234 566 0 0 20 0 71 0 3373 4433367040 107105
100
/usr/lib/jvm/java-17-openjdk-amd64/bin/java -Xmx512m \
-javaagent:/opt/jmx-exporter/jmx_prometheus_javaagent-1.0.1.jar=9404:/etc/kafka/jmx-exporter.yml kafka.Kafka x
"""


def test_process_cpu_reads_user_and_system_time_and_the_java_agents() -> None:
    reading = parsing.parse_process_cpu(PROCESS_CPU_OUTPUT)
    assert reading == parsing.ProcessCpu(pid=4242, cpu_s=18.0, java_agents=("jmx_prometheus_javaagent-1.0.1.jar",))
    bare = PROCESS_CPU_OUTPUT.replace("-javaagent:", "-Dnot-an-agent=")
    assert parsing.parse_process_cpu(bare).java_agents == ()


@pytest.mark.parametrize("text", ["0\n", "", "4242\ncat: /proc/4242/stat: No such file\n"])
def test_a_service_without_a_running_process_has_no_cpu_reading(text: str) -> None:
    with pytest.raises(MeasurementError):
        parsing.parse_process_cpu(text)


def test_cpu_used_is_per_host_summed_and_a_share_of_one_core() -> None:
    before = {h: parsing.ProcessCpu(pid=i, cpu_s=10.0, java_agents=()) for i, h in enumerate(["k1", "k2"])}
    after = {"k1": parsing.ProcessCpu(0, 13.0, ()), "k2": parsing.ProcessCpu(1, 11.0, ())}
    used = parsing.cpu_used(before, after, 20.0)
    assert used == {"seconds": 20.0, "cpu_s": {"k1": 3.0, "k2": 1.0}, "cpu_s_total": 4.0, "cores_each": 0.1}


def test_a_restarted_broker_has_no_cpu_figure() -> None:
    before = {"k1": parsing.ProcessCpu(pid=1, cpu_s=10.0, java_agents=())}
    with pytest.raises(MeasurementError, match="k1: the service restarted"):
        parsing.cpu_used(before, {"k1": parsing.ProcessCpu(pid=2, cpu_s=1.0, java_agents=())}, 5.0)


def test_adhoc_results_per_host() -> None:
    doc = {
        "plays": [
            {
                "tasks": [
                    {
                        "hosts": {
                            "kafka1": {"rc": 0, "stdout": "2", "stderr": "", "changed": True},
                            "kafka2": {"unreachable": True, "msg": "ssh: connect timed out"},
                        }
                    }
                ]
            }
        ]
    }
    results = runner.adhoc_results(doc)
    assert results["kafka1"].ok and results["kafka1"].stdout == "2"
    assert not results["kafka2"].ok and results["kafka2"].msg == "ssh: connect timed out"


def test_java_tools_get_the_settings_the_figures_name() -> None:
    producer = kafka_perf.java_producer_argv("b:9092", "t", 1000, 100, "all")
    assert producer[producer.index("--record-size") + 1] == "100"
    assert producer[producer.index("--throughput") + 1] == "-1"
    assert {"acks=all", "linger.ms=5", "batch.size=16384", "bootstrap.servers=b:9092"} <= set(producer)
    consumer = kafka_perf.java_consumer_argv("b:9092", "t", 1000, "g")
    assert consumer[consumer.index("--messages") + 1] == "1000"


def sample_doc() -> dict[str, Any]:
    producer = {
        "client": "kafka-java",
        "record_size": 100,
        "acks": "all",
        "records": 200000,
        "records_per_s": 40000.0,
        "mib_per_s": 3.81,
        "latency_ms": {"avg": 1.0, "max": 9.0, "p50": 2.0, "p95": 5.0, "p99": 7.0, "p99.9": 9.0},
        "of_disk": 0.05,
        "of_loopback": 0.006,
        "broker_cpu": {"seconds": 9.0, "cpu_s": {}, "cpu_s_total": 12.3, "cores_each": 0.45, "ms_per_mib": 645.8},
    }
    return {
        "started_at": "2026-01-01T00:00:00Z",
        "inventory": "inventories/lab",
        "duration_s": 754.0,
        "load_average": {"start": [1.0, 1.5, 2.0], "end": [3.0, 2.5, 2.0]},
        "machine": {
            "controller": {"cores": 2, "memory_bytes": 24 * 2**30, "cpu": "AMD EPYC"},
            "hosts_share_controller": True,
        },
        "provisioning": {
            "hosts": 4,
            "cold": {"skipped": "--no-cold (BENCH_COLD=0): hosts were not recreated"},
            "noop": {
                "wall_s": 41.0,
                "changed_total": 0,
                "slowest_tasks": [{"task": "kafka : Wait for ports", "play": "Kafka", "seconds": 9.0}],
            },
        },
        "physical": {
            "disk": {"mib_per_s": 300.0, "host": "kafka1", "log_dir": "/var/lib/kafka/data"},
            "loopback": {"error": "MeasurementError: iperf3: unable to connect", "host": "controller"},
        },
        "kafka": {
            "settings": {
                "replication_factor": 3,
                "partitions": 3,
                "min_insync_replicas": 2,
                "linger_ms": 5,
                "batch_size": 16384,
                "records": {"100": 200000},
                "broker_java_agents": {"kafka1": ["jmx_prometheus_javaagent-1.0.1.jar"], "kafka2": []},
            },
            "idle": {"broker_cpu": {"seconds": 61.5, "cpu_s": {}, "cpu_s_total": 3.69, "cores_each": 0.02}},
            "producers": [
                producer,
                producer | {"client": "kafka-python"},
                {"client": "kafka-python", "record_size": 1024, "acks": "1", "records": 50000, "error": "boom"},
            ],
            "consumers": [
                {
                    "client": "kafka-java",
                    "record_size": 100,
                    "records": 200000,
                    "records_per_s": 90000.0,
                    "mib_per_s": 8.6,
                    "of_loopback": 0.004,
                },
            ],
        },
        "spark": {
            "settings": {
                "trigger_interval": "1 second",
                "max_offsets_per_trigger": 100000,
                "partitions": 6,
                "replication_factor": 3,
                "cores_max": "2",
                "executor_memory": "768m",
                "realtime": {"mode": "realtime", "batch_duration": "30 seconds"},
            },
            "backlog": {
                "records": 60000,
                "rows_per_s": 21000.0,
                "batches": 1,
                "busy_s": 2.9,
                "of_raw_consumer": 0.5,
                "after_the_first_batch": {"rows_per_s": 25200.0, "of_raw_consumer": 0.6},
            },
            "steady": {
                "rate_per_s": 500,
                "seconds": 60,
                "records": 30000,
                "rows_per_s": 9000.0,
                "latency_ms": {"p50": 1200.0, "p95": 2100.0, "p99": 2600.0},
                "latency_samples_ms": [1000.0, 1200.0, 2600.0],
                "latency_over_time": [[0.0, 1000.0], [1.0, 1200.0], [2.0, 2600.0]],
            },
            "realtime": {
                "records": 30000,
                "never_forwarded": 0,
                "forwarded_more_than_once": 0,
                "latency_ms": {"p50": 150.0, "p95": 300.0, "p99": 420.0},
                "latency_over_time": [[0.0, 150.0], [1.0, 420.0]],
            },
            "raw_consumer": {"records": 90000, "records_per_s": 42000.0, "mib_per_s": 5.0},
            "trigger_sweep": [
                {
                    "trigger_interval": "1 second",
                    "latency_ms": {"p50": 1200.0, "p99": 2600.0},
                    "batches_per_min": 55.5,
                    "deployed": True,
                },
                {
                    "trigger_interval": "10 seconds",
                    "latency_ms": {"p50": 6100.0, "p99": 11800.0},
                    "batches_per_min": 6.0,
                },
            ],
        },
    }


def test_table_shows_settings_machine_and_each_figure() -> None:
    table = report.render_table(sample_doc())
    assert "took 12 min 34 s" in table
    assert "2 cores, 24.0 GiB (AMD EPYC); all hosts share it" in table
    assert "load average start 1.00/1.50/2.00, end 3.00/2.50/2.00" in table
    assert "cold converge        not measured: --no-cold (BENCH_COLD=0)" in table
    assert "changed tasks: 0" in table
    assert "9.0 s  kafka : Wait for ports  [Kafka]" in table
    assert "RF 3, 3 partitions, min.insync.replicas 2" in table
    java = next(line for line in table.splitlines() if line.strip().startswith("kafka-java      100  all"))
    assert java.split()[4:] == ["40,000", "3.81", "2", "7", "9", "5.0%", "0.6%", "12.3", "s", "646", "ms/MiB"]
    assert "java agents in the brokers: jmx_prometheus_javaagent-1.0.1.jar" in table
    assert "brokers at rest: 2.0% of a core each over 61.5 s (3.69 CPU s in all)" in table


def test_table_shows_both_spark_paths_latencies_and_the_share_of_the_raw_consumer() -> None:
    table = report.render_table(sample_doc())
    assert (
        "21,000 processed rows/s (1 batches, 2.9 s busy; 50.0% of the raw consumer); after the first batch "
        "(JVM warm-up) 25,200 rows/s, 60.0%"
    ) in table
    assert "produce-to-Parquet p50 1,200 ms, p95 2,100 ms, p99 2,600 ms" in table
    assert "low-latency path (realtime), same stream: produce-to-output p50 150 ms, p95 300 ms, p99 420 ms" in table
    assert "archive alone, trigger 1 second (deployed): p50 1,200 ms, p99 2,600 ms, 55.5 batches/min" in table
    assert "archive alone, trigger 10 seconds: p50 6,100 ms, p99 11,800 ms, 6.0 batches/min" in table


def test_the_low_latency_paths_latency_counts_the_first_copy_of_each_record() -> None:
    sent = [(0, 10, 100.0), (0, 11, 100.5), (1, 3, 101.0)]
    forwarded = [(0, 10, 100_250), (0, 10, 100_900), (1, 3, 101_100), (5, 5, 99_000)]
    pairs, missing, duplicated = spark_progress.realtime_latencies(sent, forwarded)
    assert pairs == [(100.0, 250.0), (101.0, 100.0)]
    assert (missing, duplicated) == ([(0, 11, 100.5)], 1)


def test_the_forwarded_reader_stops_on_the_steady_positions_not_on_a_count_of_records(monkeypatch: Any) -> None:
    """The output topic starts with the probes wait_forwarding sent: a reader that stopped once it had read as many
    records as the steady stream holds would stop short and call the unread tail never forwarded (issue 53)."""
    probes = [{"probe": True, "partition": 0, "offset": n} for n in range(5)]
    steady = [{"partition": 1, "offset": n} for n in range(20)]

    class Consumer:
        def __init__(self, *_args: Any, **_kwargs: Any) -> None:
            self.records = [
                SimpleNamespace(value=json.dumps(doc).encode(), timestamp=1_000 + i)
                for i, doc in enumerate(probes + steady)
            ]

        def poll(self, timeout_ms: int) -> dict[str, list[Any]]:
            batch, self.records = self.records[:4], self.records[4:]
            return {"tp": batch} if batch else {}

        def close(self) -> None:
            pass

    monkeypatch.setattr(spark_job, "KafkaConsumer", Consumer)
    wanted = [(1, n) for n in range(20)]
    found = spark_job.read_forwarded("k1:9092", "out", wanted, timeout_s=5)
    assert sorted((p, o) for p, o, _ in found) == wanted
    _pairs, missing, _duplicated = spark_progress.realtime_latencies([(p, o, 0.0) for p, o in wanted], found)
    assert missing == []


def test_latency_over_time_is_relative_sorted_and_thinned() -> None:
    pairs = [(10.0 + i, float(i)) for i in range(10)][::-1]
    assert spark_progress.latency_series(pairs, 10.0, points=5) == [
        [0.0, 0.0],
        [2.0, 2.0],
        [4.0, 4.0],
        [6.0, 6.0],
        [8.0, 8.0],
    ]


def test_a_bench_run_is_stopped_by_systemd_not_by_the_services_stop_file() -> None:
    argv = [
        "spark-submit",
        "main.py",
        "--config",
        "/c",
        "--stop-file",
        "/run/spark-consumer/stop",
        "--stop-wait",
        "105",
    ]
    assert parsing.without_option(argv, "--stop-file") == [
        "spark-submit",
        "main.py",
        "--config",
        "/c",
        "--stop-wait",
        "105",
    ]


def test_the_bench_low_latency_path_writes_to_its_own_topics_and_checkpoint() -> None:
    original = tomllib.loads(JOB_TOML) | {
        "realtime": {
            "mode": "realtime",
            "batch_duration": "30 seconds",
            "output_topic": "events-realtime",
            "dead_letter_topic": "events-dead-letter",
            "checkpoint": "/var/lib/spark-consumer/checkpoints/realtime",
            "status": "/var/lib/spark-consumer/realtime-status.json",
        }
    }
    config = spark_job.bench_job_config(original, "kafkalab-bench-x", "/b/x", "bench")
    assert config["realtime"] == {
        "mode": "realtime",
        "batch_duration": "30 seconds",
        "output_topic": "kafkalab-bench-x-realtime",
        "dead_letter_topic": "kafkalab-bench-x-dead-letter",
        "checkpoint": "/b/x/checkpoints-realtime",
        "status": "/b/x/realtime-status.json",
    }
    assert original["realtime"]["output_topic"] == "events-realtime"


def test_table_names_the_measurements_not_taken() -> None:
    table = report.render_table(sample_doc())
    assert "NOT MEASURED: boom" in table
    assert "measurements not taken: 2" in table
    assert "physical.loopback: MeasurementError: iperf3: unable to connect" in table


def test_errors_are_found_anywhere_in_the_document() -> None:
    assert report.errors_in(sample_doc()) == [
        "physical.loopback: MeasurementError: iperf3: unable to connect",
        "kafka.producers[2]: boom",
    ]
    assert report.errors_in({"kafka": {"producers": [{"records": 1}]}}) == []


def test_plots_are_written_for_the_sections_measured(tmp_path: Path) -> None:
    written = plots.write_plots(sample_doc(), tmp_path)
    assert [p.name for p in written] == ["provisioning.png", "kafka.png", "spark.png", "spark-latency.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)
    doc = sample_doc()
    doc["kafka_over"] = {"SECURE": json.loads(json.dumps(doc["kafka"]))}
    doc["kafka_over"]["SECURE"]["settings"]["listener"] = {"name": "SECURE", "protocol": "SASL_SSL"}
    assert "kafka-listeners.png" in [p.name for p in plots.write_plots(doc, tmp_path)]


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "-"), (41.04, "41.0 s"), (754, "12 min 34 s"), (60, "1 min 00 s")]
)
def test_durations_read_as_minutes_and_seconds(seconds: float | None, text: str) -> None:
    assert report.fmt_duration(seconds) == text


def test_batch_commit_is_trigger_start_plus_execution() -> None:
    batch = Batch(batch_id=0, started=100.0, duration_s=2.5, rows=1, start_offset={}, end_offset={0: 1})
    assert batch.committed == 102.5


def test_a_runs_broker_cpu_is_the_difference_of_two_readings_and_names_the_agents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = ("jmx_prometheus_javaagent-1.0.1.jar",)
    readings = iter(
        [
            {"k1": parsing.ProcessCpu(7, 10.0, agent), "k2": parsing.ProcessCpu(8, 20.0, ())},
            {"k1": parsing.ProcessCpu(7, 12.0, agent), "k2": parsing.ProcessCpu(8, 21.0, ())},
        ]
    )
    monkeypatch.setattr(kafka_perf, "process_cpu", lambda _ansible, _brokers: next(readings))
    figures = kafka_perf.with_broker_cpu(None, ["k1", "k2"], lambda: {"mib": 6.0})  # type: ignore[arg-type]
    used = figures["broker_cpu"]
    assert (used["cpu_s"], used["cpu_s_total"], used["ms_per_mib"]) == ({"k1": 2.0, "k2": 1.0}, 3.0, 500.0)
    assert used["java_agents"] == {"k1": list(agent), "k2": []}


LAB_PROPS = {
    host: parse_properties(
        "inter.broker.listener.name=INTERNAL\ncontroller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL,SECURE:SASL_SSL,CONTROLLER:SSL\n"
        f"advertised.listeners=INTERNAL://10.231.0.1{i}:9092,EXTERNAL://127.0.0.1:1909{i},"
        f"SECURE://10.231.0.1{i}:9095\n"
    )
    for i, host in enumerate(["kafka1", "kafka2", "kafka3"], start=1)
}


def test_the_kafka_section_runs_over_each_listener_on_the_cluster_network_inter_broker_first() -> None:
    """The lab: INTERNAL (PLAINTEXT), then SECURE (TLS + SCRAM); not EXTERNAL, which is advertised behind NAT
    (the perf tools on kafka1 could not reach 127.0.0.1:19091), nor the controller listener."""
    assert parsing.bench_listeners(LAB_PROPS, ["kafka1", "kafka2", "kafka3"]) == [
        ("INTERNAL", "PLAINTEXT", "10.231.0.11:9092,10.231.0.12:9092,10.231.0.13:9092"),
        ("SECURE", "SASL_SSL", "10.231.0.11:9095,10.231.0.12:9095,10.231.0.13:9095"),
    ]
    # A listener one broker lacks is not measured (it would not be the same cluster).
    uneven = LAB_PROPS | {"kafka3": {**LAB_PROPS["kafka3"], "advertised.listeners": "INTERNAL://10.231.0.13:9092"}}
    assert [n for n, _, _ in parsing.bench_listeners(uneven, ["kafka1", "kafka2", "kafka3"])] == ["INTERNAL"]


def test_a_listeners_perf_tools_and_python_clients_read_its_settings(tmp_path: Any) -> None:
    producer = kafka_perf.java_producer_argv("b:9095", "t", 1000, 100, "all", "/etc/kafka/client-secure.properties")
    assert producer[producer.index("--producer.config") + 1] == "/etc/kafka/client-secure.properties"
    consumer = kafka_perf.java_consumer_argv("b:9095", "t", 1000, "g", "/etc/kafka/client-secure.properties")
    assert consumer[consumer.index("--consumer.config") + 1] == "/etc/kafka/client-secure.properties"
    assert "--producer.config" not in kafka_perf.java_producer_argv("b:9092", "t", 1000, 100, "all")
    config = tmp_path / "client-secure.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=/x/ca.pem\n"
        "sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="admin" password="pw";\n'
    )
    os.environ.pop(kafka_client.ENV, None)
    with kafka_perf.client_settings(str(config)):
        assert kafka_client.settings()["sasl_plain_username"] == "admin"
    assert kafka_client.settings() == {}
    with kafka_perf.client_settings(""):
        assert kafka_client.settings() == {}


def test_table_shows_each_listener_and_its_rates_against_the_first() -> None:
    doc = sample_doc()
    doc["kafka"]["settings"]["listener"] = {"name": "INTERNAL", "protocol": "PLAINTEXT"}
    secure = json.loads(json.dumps(doc["kafka"]))
    secure["settings"]["listener"] = {"name": "SECURE", "protocol": "SASL_SSL"}
    secure.pop("idle")
    secure["producers"][0]["records_per_s"] = 30000.0
    doc["kafka_over"] = {"SECURE": secure}
    table = report.render_table(doc)
    assert "Kafka producers over INTERNAL (PLAINTEXT): RF 3" in table
    assert "Kafka producers over SECURE (SASL_SSL): RF 3" in table
    assert "SECURE against INTERNAL, rec/s (same client, size, acks):" in table
    assert "producers: kafka-java 100 B acks=all 75.0%, kafka-python 100 B acks=all 100.0%" in table
    assert "consumers: kafka-java 100 B 100.0%" in table
    doc["kafka_over"] = {"SECURE": {"error": "MeasurementError: no settings"}}
    assert "Kafka over another listener: NOT MEASURED: MeasurementError: no settings" in report.render_table(doc)


def test_the_reachability_probe_names_what_it_cannot_open(tmp_path: Any) -> None:
    """The probe runs as given on the tool host; here against a port that listens and one that does not."""
    import socket
    import subprocess

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        open_port = server.getsockname()[1]
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            closed_port = closed.getsockname()[1]
        argv = kafka_perf.reachability_argv(f"127.0.0.1:{open_port},127.0.0.1:{closed_port}")
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert out == [f"127.0.0.1:{closed_port}"]


class _ReadsProperties:
    """What discover() asks of Ansible: each broker's server.properties (LAB_PROPS, as text)."""

    def module(self, pattern: str, module: str, args: Any, timeout: float = 0) -> dict[str, runner.HostResult]:
        text = {h: "\n".join(f"{k}={v}" for k, v in p.items()) + "\nlog.dirs=/var/lib/kafka/data\n"
                for h, p in LAB_PROPS.items()}  # fmt: skip
        return {
            h: runner.HostResult(host=h, ok=True, rc=0, stdout=text[h], stderr="", msg="") for h in pattern.split(":")
        }


def test_discover_gives_each_listener_after_the_first_the_settings_the_kafka_role_wrote_for_it() -> None:
    from kafkalab.bench.cluster import discover

    cluster = discover(_ReadsProperties(), ["kafka1", "kafka2", "kafka3"], None, "/inv/.pki")  # type: ignore[arg-type]
    assert cluster.bootstrap == "10.231.0.11:9092,10.231.0.12:9092,10.231.0.13:9092"
    first, secure = cluster.listeners
    assert (first.name, first.controller_config, first.node_config) == ("INTERNAL", "", "")
    assert (secure.name, secure.protocol) == ("SECURE", "SASL_SSL")
    assert secure.controller_config == "/inv/.pki/client-secure.properties"
    assert secure.node_config == "/etc/kafka/client-secure.properties"
    # Bootstrap servers of the caller's own: one run over them, in the caller's settings.
    own = discover(_ReadsProperties(), ["kafka1", "kafka2", "kafka3"], "lb:9092", "/inv/.pki")  # type: ignore[arg-type]
    assert [(li.name, li.bootstrap) for li in own.listeners] == [("bootstrap", "lb:9092")]
    assert own.bootstrap == "lb:9092"


RECAP_TAIL = "unreachable=0    failed=0    skipped=2    rescued=0    ignored=0"
ANSIBLE_LOG = [
    f"2026-12-05 16:15:{stamp} p={pid} u=root n=ansible INFO| {text}"
    for stamp, pid, text in (
        ("36,000", 11, "PLAY [Preflight on the controller] *****"),
        ("36,500", 11, "TASK [kafkalab.kafka.kafka : Validating arguments against arg spec 'preflight' - x] ***"),
        ("36,600", 11, "ok: [localhost]"),
        ("36,700", 11, "TASK [kafkalab.kafka.kafka : Build the model] ***"),
        ("38,700", 11, "TASK [Say so] ***"),
        ("39,000", 12, "PLAY [Another run] ***"),
        ("39,200", 11, "RUNNING HANDLER [kafkalab.kafka.java : Restart] ***"),
        ("40,200", 11, "PLAY RECAP ********"),
        ("40,200", 11, f"kafka1                     : ok=4    changed=1    {RECAP_TAIL}"),
        ("40,200", 11, f"kafka2                     : ok=4    changed=0    {RECAP_TAIL}"),
    )
] + ["not a log line"]


def test_the_ansible_log_reader_splits_runs_and_times_each_task_to_the_next_banner() -> None:
    from kafkalab.bench import ansible_log

    runs = ansible_log.read_runs(ANSIBLE_LOG)
    assert [r.pid for r in runs] == ["11", "12"]
    first = runs[0]
    assert first.seconds == pytest.approx(4.2)
    assert [(name, round(s, 1)) for name, s in first.tasks] == [
        ("kafkalab.kafka.kafka : Validating arguments against arg spec 'preflight' - x", 0.2),
        ("kafkalab.kafka.kafka : Build the model", 2.0),
        ("Say so", 0.5),
        ("kafkalab.kafka.java : Restart", 1.0),
    ]
    assert first.recap == {"kafka1": (4, 1, 2), "kafka2": (4, 0, 2)} and first.changed == 1
    text = "\n".join(ansible_log.summary(first, top=2))
    assert "argument-spec validations: 1 tasks, 0.2 s" in text
    assert "by role: kafkalab.kafka.kafka 2.2 s, kafkalab.kafka.java 1.0 s, (playbook) 0.5 s" in text
