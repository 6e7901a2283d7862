"""The spark section: the deployed Spark job's code and settings run on a bench topic, its service paused meanwhile.

It drains a backlog (processed rows/s), then reads a steady stream (produce-to-Parquet latency from the job's
progress log), next to a plain kafka-python consumer reading the same topic. Everything it starts is stopped
and removed again, and the service is restarted if it was running.
"""

from __future__ import annotations

import json
import shlex
import time
import tomllib
import uuid
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.properties import parse_properties
from kafka import KafkaConsumer, KafkaProducer

from kafkalab.bench.cluster import Cluster, delete_bench_topics
from kafkalab.bench.measure import MeasurementError, say
from kafkalab.bench.parsing import execstart_argv, parse_systemctl_show, with_config
from kafkalab.bench.runner import Ansible
from kafkalab.bench.settings import (
    BENCH_PREFIX,
    LINGER_MS,
    MIB,
    MIN_INSYNC,
    PARTITIONS,
    REPLICATION,
    SPARK_BENCH_DIR_NAME,
    SPARK_JOB_CONFIG,
    SPARK_SERVICE,
    SPARK_SUBMIT_CONF,
)
from kafkalab.bench.spark_progress import e2e_latencies_ms, end_offsets_wanted, parse_progress, processed_rate
from kafkalab.bench.stats import latency_summary
from kafkalab.bench.toml_writer import to_toml
from kafkalab.e2e import create_topic, encode, produce_numbered, read_rate


def bench_dir(config: Mapping[str, Any]) -> str:
    """Where bench runs write: beside the deployed job's data dir (the parent of its checkpoints), so on the
    same storage, which every Spark host shares when the cluster has more than one."""
    job_data_dir = PurePosixPath(str(config["paths"]["checkpoint"])).parent
    return str(job_data_dir.parent / SPARK_BENCH_DIR_NAME)


def bench_job_config(original: Mapping[str, Any], topic: str, data_dir: str, app_name: str) -> dict[str, Any]:
    """The deployed job's settings, reading the bench topic and writing under data_dir."""
    doc = json.loads(json.dumps(original))  # a deep copy of plain data
    doc["app_name"] = app_name
    doc["kafka"]["topics"] = [topic]
    doc["kafka"]["starting_offsets"] = "earliest"
    doc["paths"] = {
        "output": f"{data_dir}/records",
        "quarantine": f"{data_dir}/quarantine",
        "metrics": f"{data_dir}/metrics",
        "checkpoint": f"{data_dir}/checkpoints",
        "status": f"{data_dir}/status.json",
    }
    return dict(doc)


# The host-side wait for the bench job to commit given end offsets (reads its status file once a second),
# so the controller does not poll (and load the machine) while the job works. Gives up when the job's unit
# is no longer running (it failed) or after the time limit.
_WAIT_SCRIPT = """
import json, subprocess, sys, time
path, topic, want, limit, unit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
deadline, last = time.time() + limit, None
while time.time() < deadline:
    try:
        with open(path) as handle:
            last = json.load(handle)["queries"]["records"]["last_batch"]["end_offset"].get(topic, {})
        if all(int(last.get(p, 0)) >= int(o) for p, o in want.items()):
            print(json.dumps(last))
            sys.exit(0)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if subprocess.run(["systemctl", "is-active", "--quiet", unit]).returncode != 0:
        print(json.dumps({"job_stopped": unit, "last_end_offsets": last}))
        sys.exit(4)
    time.sleep(1)
print(json.dumps({"timed_out_after_s": limit, "last_end_offsets": last}))
sys.exit(3)
"""


def produce_at_rate(bootstrap: str, topic: str, rate: float, seconds: float) -> list[tuple[int, int, float]]:
    """Numbered JSON events (kafkalab.e2e's format) at a steady rate; (partition, offset, sent_at) of each ack."""
    run_id = uuid.uuid4().hex
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=LINGER_MS,
        client_id="kafkalab-bench",
    )
    acked: list[tuple[int, int, float]] = []
    failed: list[BaseException] = []
    total = int(rate * seconds)
    try:
        producer.partitions_for(topic)
        started = time.time()
        for seq in range(total):
            delay = started + seq / rate - time.time()
            if delay > 0:
                time.sleep(delay)
            sent = time.time()
            future = producer.send(topic, key=f"key-{seq % 64}".encode(), value=encode(run_id, seq))
            future.add_callback(lambda md, sent=sent: acked.append((md.partition, md.offset, sent)))
            future.add_errback(failed.append)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=30)
    if failed or len(acked) != total:
        raise MeasurementError(f"{len(failed)} of {total} steady sends failed ({failed[:1]})")
    return acked


def spark_section(
    ansible: Ansible, cluster: Cluster, master: str, run: str, backlog_records: int, rate: float, seconds: float
) -> dict[str, Any]:
    config = tomllib.loads(ansible.run(master, ["cat", SPARK_JOB_CONFIG]).stdout)
    submit = parse_properties(ansible.run(master, ["cat", SPARK_SUBMIT_CONF]).stdout)
    unit = parse_systemctl_show(
        ansible.run(
            master,
            [
                "systemctl",
                "show",
                SPARK_SERVICE,
                "-p",
                "ExecStart",
                "-p",
                "Environment",
                "-p",
                "User",
                "-p",
                "Group",
                "-p",
                "ActiveState",
            ],
        ).stdout
    )
    job_topic = config["kafka"]["topics"][0]
    probe = KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="kafkalab-bench")
    try:
        partitions = len(probe.partitions_for_topic(job_topic) or []) or PARTITIONS
    finally:
        probe.close()
    topic = f"{BENCH_PREFIX}{run}-spark"
    bench_unit = f"kafkalab-bench-spark-{run}"
    bench_root = bench_dir(config)
    data_dir = f"{bench_root}/{run}"
    bench_config = f"{data_dir}/job.toml"
    result: dict[str, Any] = {
        "settings": {
            "job": f"{SPARK_SERVICE}'s code and settings ({SPARK_JOB_CONFIG}) on topic {topic}, as unit {bench_unit}",
            "trigger_interval": config["stream"]["trigger_interval"],
            "max_offsets_per_trigger": config["kafka"]["max_offsets_per_trigger"],
            "partitions": partitions,
            "replication_factor": REPLICATION,
            "cores_max": submit.get("spark.cores.max"),
            "executor_memory": submit.get("spark.executor.memory"),
            "driver_memory": submit.get("spark.driver.memory"),
            "master": submit.get("spark.master"),
            "producer": "kafka-python on the controller, acks=all, idempotent, JSON events (kafkalab.e2e)",
            "latency": "send time on the controller to the commit of the micro-batch holding the record "
            "(trigger start + triggerExecution, from the job's progress log)",
            "service_paused": f"{SPARK_SERVICE} is stopped while the bench job holds the workers' cores",
        }
    }
    was_active = unit.get("ActiveState") == "active"
    user, group = unit.get("User") or "root", unit.get("Group") or "root"

    def tail_log() -> str:
        r = ansible.run(master, ["journalctl", "-u", bench_unit, "--no-pager", "-o", "cat", "-n", "5"], check=False)
        return " | ".join(r.stdout.splitlines())[-600:]

    def wait_committed(records: Iterable[tuple[int, int]], limit: float) -> None:
        wanted = end_offsets_wanted(records)
        r = ansible.run(
            master,
            [
                "python3",
                "-c",
                _WAIT_SCRIPT,
                f"{data_dir}/status.json",
                topic,
                json.dumps(wanted),
                str(limit),
                bench_unit,
            ],
            timeout=limit + 120,
            check=False,
        )
        if not r.ok:
            raise MeasurementError(
                f"the bench job did not commit up to {wanted}: {r.stdout.strip()} "
                f"(journalctl -u {bench_unit} on {master}: {tail_log()})"
            )

    try:
        create_topic(cluster.bootstrap, topic, partitions, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)})
        say(f"spark: producing a backlog of {backlog_records} events into {topic}")
        _, backlog, failed = produce_numbered(cluster.bootstrap, topic, backlog_records, client_id="kafkalab-bench")
        if failed:
            raise MeasurementError(f"{len(failed)} backlog events were not acknowledged")
        say(f"spark: pausing {SPARK_SERVICE}, starting the job on {topic} as {bench_unit}")
        ansible.run(master, ["systemctl", "stop", SPARK_SERVICE], timeout=180)
        ansible.run(master, ["install", "-d", "-o", user, "-g", group, "-m", "0755", data_dir])
        copied = ansible.module(
            master,
            "ansible.builtin.copy",
            {
                "dest": bench_config,
                "content": to_toml(bench_job_config(config, topic, data_dir, "kafkalab-bench")),
                "owner": user,
                "group": group,
                "mode": "0644",
            },
        ).get(master)
        if copied is None or not copied.ok:
            raise MeasurementError(f"cannot write {bench_config}: {copied.msg if copied else 'no result'}")
        env = shlex.split(unit.get("Environment", ""))
        argv = with_config(execstart_argv(unit.get("ExecStart", "")), bench_config)
        ansible.run(
            master,
            [
                "systemd-run",
                f"--unit={bench_unit}",
                "--collect",
                f"--uid={user}",
                f"--gid={group}",
                f"--working-directory={data_dir}",
                *(f"--setenv={e}" for e in env),
                "--",
                *argv,
            ],
        )
        say("spark: waiting for the job to drain the backlog")
        wait_committed(((r.partition, r.offset) for r in backlog), 600)
        steady_started = time.time()
        say(f"spark: producing {rate:g} events/s for {seconds:g} s")
        steady = produce_at_rate(cluster.bootstrap, topic, rate, seconds)
        wait_committed(((p, o) for p, o, _ in steady), 300)
        log = ansible.run(
            master,
            [
                "sh",
                "-c",
                f"journalctl -u {shlex.quote(bench_unit)} --no-pager -o cat | grep -F 'progress query=records'",
            ],
        ).stdout
        batches = parse_progress(log, topic)
        backlog_batches = [b for b in batches if b.started < steady_started]
        steady_batches = [b for b in batches if b.started >= steady_started]
        latencies, unmatched = e2e_latencies_ms(steady, batches)
        if not latencies:
            raise MeasurementError("no steady record was found in a committed batch of the job's progress log")
        result["batches"] = [
            {"batch_id": b.batch_id, "started": b.started, "duration_s": b.duration_s, "rows": b.rows}
            for b in batches
            if b.rows
        ]
        result["backlog"] = {"records": len(backlog)} | processed_rate(backlog_batches)
        result["steady"] = {
            "rate_per_s": rate,
            "seconds": seconds,
            "records": len(steady),
            "records_without_batch": unmatched,
            "latency_ms": latency_summary(latencies),
            "latency_samples_ms": [round(v, 1) for v in latencies],
        } | {k: v for k, v in processed_rate(steady_batches).items() if k in ("rows_per_s", "batches", "busy_s")}
        count, size, took = read_rate(cluster.bootstrap, topic)
        result["raw_consumer"] = {
            "client": "kafka-python, no group, no decoding",
            "records": count,
            "records_per_s": count / took,
            "mib_per_s": size / took / MIB,
        }
    finally:
        cleanup: list[str] = []
        for argv in (
            ["systemctl", "stop", bench_unit],
            ["rm", "-rf", "--one-file-system", data_dir],
            ["rmdir", "--ignore-fail-on-non-empty", bench_root],
            *([["systemctl", "start", SPARK_SERVICE]] if was_active else []),
        ):
            r = ansible.run(master, argv, timeout=300, check=False)
            if not r.ok and "not loaded" not in r.stderr:
                cleanup.append(f"{shlex.join(argv)}: {(r.stderr or r.msg).strip()[-200:]}")
        try:
            delete_bench_topics(cluster.bootstrap, [topic])
        except Exception as exc:  # reported; the next run removes kafkalab-bench-* leftovers
            cleanup.append(f"deleting {topic}: {exc}")
        if cleanup:
            result["cleanup_error"] = "; ".join(cleanup)
    return result
