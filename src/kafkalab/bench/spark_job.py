"""The spark section: the deployed Spark job's code and settings run on a bench topic, its services paused meanwhile.

The archive drains a backlog (processed rows/s), then both applications read a steady stream: produce-to-Parquet
latency from the archive's progress log (the commit of the micro-batch holding each record), and, when the
low-latency path is deployed, produce-to-output latency from its output topic (the first copy of each record).
A plain kafka-python consumer reads the same topic for comparison. Everything it starts is stopped and removed
again, and the services are restarted if they were running.
"""

from __future__ import annotations

import json
import shlex
import time
import tomllib
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from kafka import KafkaConsumer, KafkaProducer

from kafkalab import kafka_client
from kafkalab.bench.cluster import Cluster, delete_bench_topics
from kafkalab.bench.measure import MeasurementError, say
from kafkalab.bench.parsing import execstart_argv, parse_systemctl_show, with_config, without_option
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
    SPARK_REALTIME_SERVICE,
    SPARK_SERVICE,
    SPARK_SUBMIT_CONF,
)
from kafkalab.bench.spark_progress import (
    commit_times,
    end_offsets_wanted,
    latency_series,
    parse_progress,
    processed_rate,
    realtime_latencies,
)
from kafkalab.bench.stats import latency_summary
from kafkalab.bench.toml_writer import to_toml
from kafkalab.e2e import create_topic, encode, produce_numbered, read_rate


def bench_dir(config: Mapping[str, Any]) -> str:
    """Where bench runs write: inside the deployed job's data dir (the parent of its checkpoints), so on the
    same storage, which every Spark host shares when the cluster has more than one, and where the workers'
    systemd sandbox lets executors write (roles/spark, spark_executor_write_paths)."""
    job_data_dir = PurePosixPath(str(config["paths"]["checkpoint"])).parent
    return str(job_data_dir / SPARK_BENCH_DIR_NAME)


def bench_job_config(original: Mapping[str, Any], topic: str, data_dir: str, app_name: str) -> dict[str, Any]:
    """The deployed job's settings, reading the bench topic and writing under data_dir (the low-latency path,
    when deployed, to the bench topic's own output and dead-letter topics)."""
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
    if "realtime" in doc:
        doc["realtime"].update(
            output_topic=f"{topic}-realtime",
            dead_letter_topic=f"{topic}-dead-letter",
            checkpoint=f"{data_dir}/checkpoints-realtime",
            status=f"{data_dir}/realtime-status.json",
        )
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
        **kafka_client.settings(),
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


def wait_forwarding(bootstrap: str, source_topic: str, output_topic: str, timeout_s: float) -> float:
    """Seconds until the low-latency path forwards a probe record: one is produced every few seconds until
    one of them reaches the output topic (a probe produced before the path resolved its start is never read)."""
    started = time.monotonic()
    producer = KafkaProducer(
        **kafka_client.settings(), bootstrap_servers=bootstrap, acks="all", client_id="kafkalab-bench"
    )
    consumer = KafkaConsumer(
        output_topic,
        **kafka_client.settings(),
        bootstrap_servers=bootstrap,
        auto_offset_reset="latest",
        enable_auto_commit=False,
        client_id="kafkalab-bench",
    )
    try:
        consumer.poll(timeout_ms=1000)  # joins the topic's end before the first probe
        while time.monotonic() - started < timeout_s:
            producer.send(source_topic, key=b"bench-probe", value=b'{"probe": true}').get(timeout=30)
            for batch in consumer.poll(timeout_ms=3000).values():
                if batch:
                    return round(time.monotonic() - started, 1)
    finally:
        producer.close(timeout=10)
        consumer.close()
    raise MeasurementError(f"the bench's low-latency path forwarded no probe record within {timeout_s:.0f} s")


def read_forwarded(
    bootstrap: str, topic: str, wanted: Collection[tuple[int, int]], timeout_s: float
) -> list[tuple[int, int, int]]:
    """(source partition, source offset, output timestamp ms) of every record in the low-latency path's output
    topic that forwards one of the `wanted` source positions, read from the beginning until each of them arrived
    or the timeout passed.

    The topic holds other records too (the probes wait_forwarding sent before the steady stream): stopping at a
    count of records read would stop short and call the unread tail never forwarded, so the reader stops on the
    positions themselves."""
    consumer = KafkaConsumer(
        topic,
        **kafka_client.settings(),
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        client_id="kafkalab-bench",
    )
    wanted = set(wanted)
    out: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while not wanted <= seen and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                for record in batch:
                    doc = json.loads(record.value)
                    position = (int(doc.get("partition", -1)), int(doc.get("offset", -1)))
                    if position in wanted:
                        out.append((*position, int(record.timestamp)))
                        seen.add(position)
    finally:
        consumer.close()
    return out


UNIT_PROPERTIES = ("ExecStart", "Environment", "User", "Group", "ActiveState", "LoadState")


def spark_section(
    ansible: Ansible,
    cluster: Cluster,
    master: str,
    run: str,
    backlog_records: int,
    rate: float,
    seconds: float,
    other_triggers: Sequence[str] = (),
) -> dict[str, Any]:
    config = tomllib.loads(ansible.run(master, ["cat", SPARK_JOB_CONFIG]).stdout)
    submit = parse_properties(ansible.run(master, ["cat", SPARK_SUBMIT_CONF]).stdout)

    def unit_of(service: str) -> dict[str, str]:
        args = ["systemctl", "show", service, *(a for p in UNIT_PROPERTIES for a in ("-p", p))]
        return parse_systemctl_show(ansible.run(master, args).stdout)

    units = {SPARK_SERVICE: unit_of(SPARK_SERVICE)}
    if "realtime" in config:
        units[SPARK_REALTIME_SERVICE] = unit_of(SPARK_REALTIME_SERVICE)
    job_topic = config["kafka"]["topics"][0]
    probe = KafkaConsumer(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-bench")
    try:
        partitions = len(probe.partitions_for_topic(job_topic) or []) or PARTITIONS
    finally:
        probe.close()
    topic = f"{BENCH_PREFIX}{run}-spark"
    bench_units = {SPARK_SERVICE: f"kafkalab-bench-spark-{run}"}
    if SPARK_REALTIME_SERVICE in units:
        bench_units[SPARK_REALTIME_SERVICE] = f"kafkalab-bench-spark-{run}-realtime"
    bench_unit = bench_units[SPARK_SERVICE]
    bench_root = bench_dir(config)
    data_dir = f"{bench_root}/{run}"
    bench_config = f"{data_dir}/job.toml"
    job_config = bench_job_config(config, topic, data_dir, "kafkalab-bench")
    result: dict[str, Any] = {
        "settings": {
            "job": f"{SPARK_SERVICE}'s code and settings ({SPARK_JOB_CONFIG}) on topic {topic}, as unit {bench_unit}",
            "trigger_interval": config["stream"]["trigger_interval"],
            "max_offsets_per_trigger": config["kafka"]["max_offsets_per_trigger"],
            "partitions": partitions,
            "replication_factor": REPLICATION,
            "cores_max": submit.get("spark.cores.max"),
            "executor_cores": submit.get("spark.executor.cores"),
            "executor_memory": submit.get("spark.executor.memory"),
            "driver_memory": submit.get("spark.driver.memory"),
            "master": submit.get("spark.master"),
            "realtime": (
                {k: config["realtime"][k] for k in ("mode", "batch_duration")}
                | {"unit": bench_units[SPARK_REALTIME_SERVICE]}
                if SPARK_REALTIME_SERVICE in bench_units
                else None
            ),
            "producer": "kafka-python on the controller, acks=all, idempotent, JSON events (kafkalab.e2e)",
            "latency": "send time on the controller to the commit of the micro-batch holding the record "
            "(trigger start + triggerExecution, from the job's progress log); for the low-latency path, to the "
            "timestamp of the first output record of it",
            "service_paused": f"{', '.join(units)} stopped while the bench applications hold the workers' cores",
        }
    }
    active = [service for service, unit in units.items() if unit.get("ActiveState") == "active"]
    user, group = units[SPARK_SERVICE].get("User") or "root", units[SPARK_SERVICE].get("Group") or "root"

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

    def start_bench_unit(service: str) -> None:
        unit = units[service]
        env = shlex.split(unit.get("Environment", ""))
        argv = without_option(with_config(execstart_argv(unit.get("ExecStart", "")), bench_config), "--stop-file")
        ansible.run(
            master,
            [
                "systemd-run",
                f"--unit={bench_units[service]}",
                "--collect",
                f"--uid={user}",
                f"--gid={group}",
                f"--working-directory={data_dir}",
                *(f"--setenv={e}" for e in env),
                "--",
                *argv,
            ],
        )

    def write_config() -> None:
        copied = ansible.module(
            master,
            "ansible.builtin.copy",
            {"dest": bench_config, "content": to_toml(job_config), "owner": user, "group": group, "mode": "0644"},
        ).get(master)
        if copied is None or not copied.ok:
            raise MeasurementError(f"cannot write {bench_config}: {copied.msg if copied else 'no result'}")

    def wait_reported(status: str, key: str, limit: int) -> None:
        script = f"for i in $(seq {limit}); do grep -q {key} {status} 2>/dev/null && exit 0; sleep 1; done; exit 3"
        waited = ansible.run(master, ["sh", "-c", script], timeout=limit + 60, check=False)
        if not waited.ok:
            raise MeasurementError(f"{status} on {master} did not show {key} within {limit} s ({tail_log()})")

    def progress_batches() -> list[Any]:
        log = ansible.run(
            master,
            [
                "sh",
                "-c",
                f"journalctl -u {shlex.quote(bench_unit)} --no-pager -o cat | grep -F 'progress query=records'",
            ],
        ).stdout
        return parse_progress(log, topic)

    try:
        create_topic(cluster.bootstrap, topic, partitions, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)})
        if "realtime" in job_config:
            for out_topic in (job_config["realtime"]["output_topic"], job_config["realtime"]["dead_letter_topic"]):
                create_topic(
                    cluster.bootstrap, out_topic, partitions, REPLICATION, {"min.insync.replicas": str(MIN_INSYNC)}
                )
        say(f"spark: producing a backlog of {backlog_records} events into {topic}")
        _, backlog, failed = produce_numbered(cluster.bootstrap, topic, backlog_records, client_id="kafkalab-bench")
        if failed:
            raise MeasurementError(f"{len(failed)} backlog events were not acknowledged")
        say(f"spark: pausing {', '.join(units)}, starting the archive on {topic} as {bench_unit}")
        for service in units:
            ansible.run(master, ["systemctl", "stop", service], timeout=300)
        ansible.run(master, ["install", "-d", "-o", user, "-g", group, "-m", "0755", data_dir])
        write_config()
        start_bench_unit(SPARK_SERVICE)
        say("spark: waiting for the archive to drain the backlog")
        wait_committed(((r.partition, r.offset) for r in backlog), 600)
        drained_at = time.time()
        if SPARK_REALTIME_SERVICE in bench_units:
            # Started once the backlog is archived, and from the end of the topic's history, as a deployed
            # low-latency path would be: its latency is measured on the steady stream only.
            job_config["kafka"]["starting_offsets"] = "latest"
            write_config()
            say(f"spark: starting the low-latency path on {topic} as {bench_units[SPARK_REALTIME_SERVICE]}")
            start_bench_unit(SPARK_REALTIME_SERVICE)
            wait_reported(f"{data_dir}/realtime-status.json", "started_at", 180)
            # "Started" is not yet reading: Real-time Mode plans its first batch (and resolves `latest`) a while
            # after. The steady stream starts once a probe record comes out the other end.
            result["settings"]["realtime"]["ready_after_s"] = wait_forwarding(
                cluster.bootstrap, topic, job_config["realtime"]["output_topic"], 240
            )
        steady_started = time.time()
        say(f"spark: producing {rate:g} events/s for {seconds:g} s")
        steady = produce_at_rate(cluster.bootstrap, topic, rate, seconds)
        wait_committed(((p, o) for p, o, _ in steady), 300)
        batches = progress_batches()
        # The drain's batches only: the low-latency path's probes come after, one record a batch.
        backlog_batches = [b for b in batches if b.started < drained_at]
        steady_batches = [b for b in batches if b.started >= steady_started]
        archive_pairs = [
            (sent, (done - sent) * 1000) for sent, done in commit_times(steady, batches) if done is not None
        ]
        if not archive_pairs:
            raise MeasurementError("no steady record was found in a committed batch of the job's progress log")
        latencies = [ms for _, ms in archive_pairs]
        result["batches"] = [
            {"batch_id": b.batch_id, "started": b.started, "duration_s": b.duration_s, "rows": b.rows}
            for b in batches
            if b.rows
        ]
        result["backlog"] = {
            "records": len(backlog),
            # The first batch also starts the executors' JVMs up (class loading, JIT, Kafka consumers): the
            # batches after it are the sustained rate.
            "after_the_first_batch": processed_rate(backlog_batches[1:]),
        } | processed_rate(backlog_batches)
        result["steady"] = {
            "rate_per_s": rate,
            "seconds": seconds,
            "records": len(steady),
            "records_without_batch": len(steady) - len(archive_pairs),
            "latency_ms": latency_summary(latencies),
            "latency_samples_ms": [round(v, 1) for v in latencies],
            "latency_over_time": latency_series(archive_pairs, steady_started),
        } | {k: v for k, v in processed_rate(steady_batches).items() if k in ("rows_per_s", "batches", "busy_s")}
        if SPARK_REALTIME_SERVICE in bench_units:
            rt_pairs, missing, duplicated = realtime_latencies(
                steady,
                read_forwarded(
                    cluster.bootstrap, job_config["realtime"]["output_topic"], [(p, o) for p, o, _ in steady], 180
                ),
            )
            result["realtime"] = {
                "rate_per_s": rate,
                "seconds": seconds,
                "records": len(steady),
                "never_forwarded": len(missing),
                # Each one named: where it was in the source topic and when it was produced (epoch seconds).
                "never_forwarded_records": [
                    {"partition": p, "offset": o, "produced_at": round(at, 3)} for p, o, at in missing[:100]
                ],
                "forwarded_more_than_once": duplicated,
                "latency_ms": latency_summary([ms for _, ms in rt_pairs]) if rt_pairs else None,
                "latency_over_time": latency_series(rt_pairs, steady_started),
            }
            if not rt_pairs:
                raise MeasurementError("the bench's low-latency path forwarded none of the steady records")
        # The archive alone at the deployed and other trigger intervals: the same steady stream, the latency each
        # gives and how many batches (each Parquet files and checkpoint writes) it costs per minute.
        sweep = []
        if SPARK_REALTIME_SERVICE in bench_units:
            # The sweep measures the archive alone: what each trigger gives it, not what it shares with.
            ansible.run(master, ["systemctl", "stop", bench_units[SPARK_REALTIME_SERVICE]], timeout=300)
        for trigger in dict.fromkeys([config["stream"]["trigger_interval"], *other_triggers]):
            say(f"spark: the archive alone with a {trigger} trigger")
            ansible.run(master, ["systemctl", "stop", bench_unit], timeout=300)
            job_config["stream"]["trigger_interval"] = trigger
            write_config()
            ansible.run(master, ["systemctl", "reset-failed", bench_unit], check=False)
            ansible.run(master, ["rm", "-f", f"{data_dir}/status.json"])
            start_bench_unit(SPARK_SERVICE)
            wait_reported(f"{data_dir}/status.json", "idle_since", 300)
            started = time.time()
            again = produce_at_rate(cluster.bootstrap, topic, rate, seconds)
            wait_committed(((p, o) for p, o, _ in again), 300)
            batches = [b for b in progress_batches() if b.started >= started]
            pairs = [(sent, (done - sent) * 1000) for sent, done in commit_times(again, batches) if done is not None]
            sweep.append(
                {
                    "trigger_interval": trigger,
                    "records": len(again),
                    "latency_ms": latency_summary([ms for _, ms in pairs]) if pairs else None,
                    "batches_per_min": round(len([b for b in batches if b.rows]) / (seconds / 60), 1),
                }
            )
        for point in sweep:
            point["deployed"] = point["trigger_interval"] == config["stream"]["trigger_interval"]
        result["trigger_sweep"] = sweep
        count, size, took = read_rate(cluster.bootstrap, topic)
        result["raw_consumer"] = {
            "client": "kafka-python, no group, no decoding",
            "records": count,
            "records_per_s": count / took,
            "mib_per_s": size / took / MIB,
        }
        raw_rate = result["raw_consumer"]["records_per_s"]
        if raw_rate:
            result["backlog"]["of_raw_consumer"] = result["backlog"]["rows_per_s"] / raw_rate
            sustained = result["backlog"]["after_the_first_batch"]
            sustained["of_raw_consumer"] = sustained["rows_per_s"] / raw_rate
    finally:
        cleanup: list[str] = []
        for argv in (
            *(["systemctl", "stop", unit] for unit in bench_units.values()),
            ["rm", "-rf", "--one-file-system", data_dir],
            ["rmdir", "--ignore-fail-on-non-empty", bench_root],
            *(["systemctl", "start", service] for service in active),
        ):
            r = ansible.run(master, argv, timeout=300, check=False)
            if not r.ok and "not loaded" not in r.stderr:
                cleanup.append(f"{shlex.join(argv)}: {(r.stderr or r.msg).strip()[-200:]}")
        try:
            bench_topics = [topic]
            if "realtime" in job_config:
                bench_topics += [job_config["realtime"]["output_topic"], job_config["realtime"]["dead_letter_topic"]]
            delete_bench_topics(cluster.bootstrap, bench_topics)
        except Exception as exc:  # reported; the next run removes kafkalab-bench-* leftovers
            cleanup.append(f"deleting {topic}: {exc}")
        if cleanup:
            result["cleanup_error"] = "; ".join(cleanup)
    return result
