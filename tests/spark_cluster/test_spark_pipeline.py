"""The Spark consumer job end to end: the job's executors run on every worker and write to storage every
Spark host shares; every acknowledged event lands in Parquet exactly once, also when the driver is
SIGKILLed mid-stream; malformed records go to the quarantine; progress is visible; and the low-latency
path forwards every acknowledged event to Kafka and dead-letters the malformed ones. (The job's throughput
next to a plain kafka-python reader is `make bench`'s to measure.)

The tests run in file order and build on each other's data only through the topic and the job's output;
each run's events carry their own run id, so earlier runs (or `make lab` demos) never count.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from acl_probe import read_error, write_error
from inventory_hosts import bootstrap_protocol, ca_dir, group, node, runner
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from kafkalab import kafka_client
from kafkalab.e2e import Record, produce_numbered

from .conftest import CONFIG, REALTIME_SERVICE, SERVICE, SparkNode
from .pipeline import (
    PacedProducer,
    archive_report,
    committed,
    driver_executors,
    master_state,
    read_forwarded,
    realtime_start,
    wait_for,
    worker_executors,
)

N_BEFORE_KILL = 12_000
N_DURING_KILL = 12_000  # produced while the driver is killed and restarted


def test_master_worker_and_job_are_running(spark_node: SparkNode) -> None:
    for unit in ("spark-master", "spark-worker", SERVICE):
        assert spark_node.host.service(unit).is_running, unit
        assert spark_node.host.service(unit).is_enabled, unit
    state = master_state(spark_node)
    assert state["workers"] and all(w["state"] == "ALIVE" for w in state["workers"]), state["workers"]
    # The archive, and the low-latency path when the settings have its table (the role renders it when enabled).
    app = spark_node.config["app_name"]
    expected = [app, f"{app}-realtime"] if "realtime" in spark_node.config else [app]
    assert sorted(a["name"] for a in state["activeapps"]) == expected


def test_the_job_reads_kafka_over_tls_when_its_bootstrap_listener_runs_tls(spark_node: SparkNode) -> None:
    """The job's Kafka options follow the brokers' listener: TLS trusting the CA (the spark scenario's is the
    operator's own, kafka_tls_own_ca), whose certificate goes
    in the options themselves (ssl.truststore.certificates), so executors on every worker have it; with SASL_SSL
    also the SCRAM login of spark_consumer_kafka_user. The other tests of this file then prove records flow
    through it."""
    protocol = bootstrap_protocol()
    options = spark_node.config["kafka"].get("options", {})
    if protocol not in ("SSL", "SASL_SSL"):
        assert options.get("security.protocol", "PLAINTEXT") == "PLAINTEXT", options
        pytest.skip(f"the brokers' bootstrap listener runs {protocol or 'PLAINTEXT'}")
    assert options["security.protocol"] == protocol
    assert options["ssl.truststore.type"] == "PEM"
    # trust.pem: what the controller machine's clients trust (the project CA, or the operator's own CA).
    with open(os.path.join(ca_dir(), "trust.pem")) as handle:
        assert options["ssl.truststore.certificates"].strip() == handle.read().strip()
    if protocol == "SASL_SSL":
        login = spark_node.kafka_login()
        assert login["sasl_mechanism"] == "SCRAM-SHA-512"
        user = runner().get_variables(spark_node.name).get("spark_consumer_kafka_user", "spark")
        assert login["sasl_plain_username"] == user, "the job does not log in as spark_consumer_kafka_user"


def test_the_jobs_kafka_user_may_read_its_topic_and_nothing_more(spark_node: SparkNode) -> None:
    """With SASL_SSL, the job's own login (read from its settings, as the executors get it) fetches its topic
    but is refused writing to it and reading the topic it only writes: the job runs with the ACLs the inventory
    gives its user, not as the admin. Real requests to the brokers, kafka-python as the client."""
    if bootstrap_protocol() != "SASL_SSL":
        pytest.skip("the brokers' bootstrap listener takes no logins")
    login = {**spark_node.kafka_login(), "ssl_cafile": os.path.join(ca_dir(), "trust.pem")}
    topic = spark_node.config["kafka"]["topics"][0]
    # The journey (tests/journeys/test_spark.py) wrote the job's events to its topic. The low-latency path's output
    # topic is one it may write and so see, but not read: the fetch is refused. (A topic it has no ACL for at all, it
    # cannot even see: the brokers leave it out of the metadata they give it, and kafka-python then never fetches.)
    assert read_error(login, spark_node.bootstrap, topic) is None, f"the job's user may not read {topic}"
    if "realtime" in spark_node.config:
        output = spark_node.config["realtime"]["output_topic"]
        assert isinstance(read_error(login, spark_node.bootstrap, output), TopicAuthorizationFailedError)
    assert isinstance(
        write_error(login, spark_node.bootstrap, topic, b"not the job's to write"), TopicAuthorizationFailedError
    )


def test_every_spark_host_runs_a_worker() -> None:
    for name in group("spark_worker"):
        service = node(name).service("spark-worker")
        assert service.is_running and service.is_enabled, name


def test_sparks_and_the_jobs_settings_and_data_are_closed_to_other_users(spark_node: SparkNode) -> None:
    """The settings (which will hold the job's credentials) and the job's data: no access for other users."""
    host = spark_node.host
    config_dir = str(Path(CONFIG).parent)
    data_dir = str(Path(spark_node.config["paths"]["status"]).parent)
    listed = host.check_output(f"find /etc/spark {config_dir} -maxdepth 1").split()
    for path in [*listed, data_dir]:
        mode = host.file(path).mode
        assert mode & 0o007 == 0, f"{spark_node.name}:{path} is open to other users ({oct(mode)})"


def test_the_jobs_executors_run_on_every_worker(spark_node: SparkNode) -> None:
    """Not assumed from the settings: each worker, found through the master's API, lists an executor of each
    of the job's applications among the processes it runs."""
    state = master_state(spark_node)
    workers = [w for w in state["workers"] if w["state"] == "ALIVE"]
    assert len(workers) == len(group("spark_worker")), state["workers"]
    for app in state["activeapps"]:
        for worker in workers:
            running = worker_executors(worker)
            assert [e for e in running if e["appid"] == app["id"]], (app["name"], worker["host"], running)


def test_every_worker_ran_tasks_of_the_archive(spark_node: SparkNode) -> None:
    """The driver's own account (its REST API): the archive's executors on each worker completed tasks, so
    the work is really spread, not only the executors."""
    workers = {w["host"] for w in master_state(spark_node)["workers"] if w["state"] == "ALIVE"}

    def tasks_per_worker() -> dict[str, int]:
        done: dict[str, int] = dict.fromkeys(workers, 0)
        for executor in driver_executors(spark_node, spark_node.ui_port("spark-submit.conf")):
            host = executor["hostPort"].rsplit(":", 1)[0]
            done[host] = done.get(host, 0) + int(executor["completedTasks"])
        return done

    wait_for("tasks completed on every worker", lambda: min(tasks_per_worker().values()) > 0, 120, 3)
    assert set(tasks_per_worker()) == workers


def test_every_spark_host_sees_the_jobs_storage_as_one(spark_node: SparkNode) -> None:
    """The job's output and checkpoints are on storage every Spark host shares: a file the driver's host
    writes there is read back, the same, on every other Spark host."""
    shared = str(Path(spark_node.config["paths"]["checkpoint"]).parent)
    token = uuid.uuid4().hex
    marker = f"{shared}/.shared-check-{token}"
    spark_node.host.check_output(f"echo {token} > {marker}")
    try:
        for name in group("spark_worker"):
            assert node(name).file(marker).content_string.strip() == token, name
    finally:
        spark_node.host.check_output(f"rm -f {marker}")


@pytest.fixture(scope="module")
def killed_run(spark_node: SparkNode) -> dict[str, Any]:
    """Produce numbered events, SIGKILL the driver while more are produced, let systemd restart it."""
    run_id, acked, failed = produce_numbered(spark_node.bootstrap, spark_node.topic, N_BEFORE_KILL)
    assert not failed
    # Make sure the job is mid-stream: some of this run is committed, not all of it.
    wait_for("the job to commit part of the run", lambda: committed(spark_node, "records", acked, fully=False), 300, 1)
    pid_before, restarts_before = spark_node.main_pid(), spark_node.restarts()
    producer = PacedProducer(spark_node, run_id, N_BEFORE_KILL, N_DURING_KILL, 6)
    time.sleep(4)
    spark_node.host.check_output(f"kill -KILL {pid_before}")
    killed_at = time.time()
    wait_for(
        "systemd to restart the job",
        lambda: spark_node.restarts() > restarts_before and spark_node.main_pid() not in (0, pid_before),
        120,
        2,
    )
    more = producer.join()
    return {"run_id": run_id, "acked": acked, "more": more, "killed_at": killed_at, "pid_before": pid_before}


def test_every_event_lands_exactly_once_after_a_sigkill(spark_node: SparkNode, killed_run: dict[str, Any]) -> None:
    run_id = killed_run["run_id"]
    acked = killed_run["acked"] + killed_run["more"]
    total = len(acked)
    assert total >= 20_000
    wait_for(f"the job to commit all {total} events", lambda: committed(spark_node, "records", acked), 600, 5)
    delivery, report = archive_report(spark_node, run_id, acked)
    rows = report["run"]["records"]
    assert len(rows) == total, f"{len(rows)} rows for {total} acknowledged events"
    assert len({(t, p, o) for t, p, o, _, _ in rows}) == total, "some (topic, partition, offset) was written twice"
    assert {t for t, _, _, _, _ in rows} == {spark_node.topic}
    assert report["rows"] == report["distinct_positions"], "duplicates in the whole output"
    # The values are the ones acknowledged: same key and sequence number at the same partition and offset.
    assert delivery.ok and not delivery.unacked_extra, delivery.summary()
    assert len({p for _, p, _, _, _ in rows}) > 1, "the run should spread over several partitions"


def test_the_restarted_job_resumed_from_its_checkpoint(spark_node: SparkNode, killed_run: dict[str, Any]) -> None:
    status = spark_node.status()
    assert status["pid"] != killed_run["pid_before"]
    resumed = status["started_from"]["records"]["checkpoint"]
    assert resumed is not None, f"the restarted job did not find its checkpoint: {status['started_from']}"
    first = status["queries"]["records"]["first_batch"]
    # startingOffsets is `earliest`: starting from it would begin at offset 0 of every partition. The first
    # batch after the restart starts exactly where the last committed batch ended.
    assert spark_node.config["kafka"]["starting_offsets"] == "earliest"
    assert first["start_offset"] == resumed["offsets"], (first["start_offset"], resumed)
    assert sum(o for parts in first["start_offset"].values() for o in parts.values()) > 0
    since = int(killed_run["killed_at"])
    log = spark_node.host.check_output(
        f"journalctl -u {SERVICE} --since=@{since} --no-pager -o cat"
        " | grep -c 'query records: resuming from checkpoint' || true"
    )
    assert int(log or 0) >= 1


def test_malformed_records_go_to_quarantine_with_their_reason(spark_node: SparkNode) -> None:
    tag = uuid.uuid4().hex[:8]
    bad = {f"bad-json-{tag}": b'{"run": "truncated", "seq": ', f"bad-utf8-{tag}": b"\xff\xfe not text"}
    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=spark_node.bootstrap, acks="all")
    futures = {key: producer.send(spark_node.topic, key=key.encode(), value=value) for key, value in bad.items()}
    producer.flush(30)
    sent = [Record(f.get(30).partition, f.get(30).offset, key, 0) for key, f in futures.items()]
    producer.close()
    wait_for(
        "the quarantine to commit the malformed records", lambda: committed(spark_node, "quarantine", sent), 300, 5
    )
    args = [arg for key in bad for arg in ("--quarantine-key", key)]
    assert spark_node.audit(*args)["quarantine_by_key"] == {
        f"bad-json-{tag}": "value looks like JSON but is not a valid JSON object",
        f"bad-utf8-{tag}": "value is not valid UTF-8",
    }
    assert spark_node.host.service(SERVICE).is_running, "a malformed record must not crash the job"


def test_progress_is_visible_on_the_node(spark_node: SparkNode) -> None:
    last = spark_node.status()["queries"]["records"]["last_batch"]
    for key in ("input_rows_per_second", "processed_rows_per_second", "offsets_behind_latest", "end_offset"):
        assert key in last, key
    lines = spark_node.host.check_output(
        f"journalctl -u {SERVICE} --no-pager -o cat -n 2000 | grep -c 'progress query=records' || true"
    )
    assert int(lines or 0) > 0


N_REALTIME = 3_000
REALTIME_RESULTS = Path(__file__).resolve().parents[2] / ".cache" / "spark-realtime-results.json"


def percentiles(values: list[int]) -> dict[str, int | None]:
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else None  # noqa: E731
    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": ordered[-1] if ordered else None}


def test_the_realtime_path_forwards_every_acked_event_and_dead_letters_the_malformed(spark_node: SparkNode) -> None:
    """The low-latency application (Real-time Mode, unless the inventory falls back to micro-batches): every
    acknowledged event of a run reaches the output topic, enriched, at least once (duplicates counted);
    malformed records reach the dead-letter topic with their reason. The produce-to-output latency (the input
    record's timestamp to the output record's, both set by their producers) is recorded, never asserted."""
    rt = spark_node.config["realtime"]
    service = spark_node.host.service(REALTIME_SERVICE)
    assert service.is_running and service.is_enabled
    status = json.loads(spark_node.host.file(rt["status"]).content_string)
    assert "started_at" in status["queries"]["realtime"], status
    start = realtime_start(spark_node)
    _run_id, acked, failed = produce_numbered(spark_node.bootstrap, spark_node.topic, N_REALTIME)
    assert not failed
    tag = uuid.uuid4().hex[:8]
    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=spark_node.bootstrap, acks="all")
    bad = [producer.send(spark_node.topic, key=f"rt-bad-{tag}-{i}".encode(), value=b'{"seq": ') for i in range(5)]
    producer.flush(30)
    bad_positions = {(f.get(30).partition, f.get(30).offset) for f in bad}
    producer.close()
    wanted = {(r.partition, r.offset) for r in acked}
    found = read_forwarded(spark_node, start, wanted, bad_positions)
    results = {
        "mode": rt["mode"],
        "batch_duration": rt["batch_duration"],
        "acked": len(wanted),
        "forwarded": len(found.good),
        "duplicated": sum(n - 1 for n in found.good.values()),
        "dead_lettered": len(found.dead),
        "latency_ms": percentiles(found.latencies_ms),
    }
    REALTIME_RESULTS.parent.mkdir(parents=True, exist_ok=True)
    REALTIME_RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results))
    assert sorted(wanted - set(found.good)) == [], "acknowledged events the low-latency path never forwarded"
    assert set(found.dead.values()) == {"value looks like JSON but is not a valid JSON object"}, found.dead
    assert len(found.dead) == len(bad_positions)
    assert service.is_running, "a malformed record must not crash the low-latency path"


def test_the_windowed_counts_count_each_archived_record_once(spark_node: SparkNode) -> None:
    """The metrics query reads the archive's committed files: each closed window counts exactly the archived
    records of its topic and time. A window is written once the watermark (the latest event time seen, less
    the delay) passes its end, so a few events keep arriving meanwhile, as they would in production. Last in
    this file: by now the windows of the first runs have closed, or nearly (in molecule's spark scenario the
    journey produced events minutes apart, so two windows closed before the verify step began)."""

    def windows_closed() -> dict[str, Any] | None:
        produce_numbered(spark_node.bootstrap, spark_node.topic, 20)
        report = spark_node.audit("--check-metrics")
        return report if report["metric_windows"] >= 2 else None

    report = wait_for("the windowed counts to close two windows", windows_closed, 420, 10)
    check = report["metrics_against_archive"]
    assert check["windows"] >= 2, report
    assert check["differing"] == [], check
