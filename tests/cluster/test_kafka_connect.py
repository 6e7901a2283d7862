"""Kafka Connect, live: distributed workers on every host of group kafka_connect (molecule default: kafka4 and kmon),
from the verified distribution plus the locked Connect jars, one group reaching Kafka as their own user.

- each worker runs under systemd as its own user, its settings (with its Kafka login and the REST stores' password)
  and the REST credentials closed to others, and no password in its journal;
- the REST API answers HTTPS only, with the project CA's certificate, and only to a known user (401 otherwise);
- the workers form one cluster, with their internal topics made by the role (compacted, RF 3, min ISR 2, the config
  topic one partition) and the declared connector running;
- the declared connector plugins (Debezium's PostgreSQL source) are loaded by every worker, from directories that
  carry the sha512 of their locked archive; a plugin directory no entry names goes;
- connectors as code: invalid connector configs (a sink without topics, a Debezium source whose database does not
  answer, a class no plugin has) stop the run in preflight, naming connector and key, before any host or connector
  changes; check mode shows a new connector and creates nothing; a declared change updates the
  connector in place (its sink group keeps its offsets); a connector is deleted only when declared absent (that a
  re-run changes nothing, the lifecycle journey's no-op site.yml proves);
- under change, while a producer writes with acks=all and the declared FileStreamSink copies the topic into a file:
  a rolling restart of the workers (each gated on every connector and task running again), then SIGKILL of the
  worker running the task, kept down: the task moves to the other worker. Every acknowledged record is in the
  sink's files (0 lost); the duplicates an at-least-once sink writes after a restart are counted and reported.

Runs against an inventory with Connect workers (molecule default; the lab's one worker, which runs Debezium, all but
the roll and kill, which need two workers and the roll-sink); elsewhere it is skipped and says why.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from acked_producer import AckedProducer
from conftest import Cluster, assert_java_service_runs, read_properties
from inventory_hosts import bootstrap_protocol, ca_dir, connect_rest_login, host_variables, hosts_in, node, run_playbook
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError
from prometheus_api import wait_until

from kafkalab import kafka_client

UNIT = "kafka-connect"
SETTINGS = "/etc/kafka-connect/worker.properties"
CREDENTIALS = "/etc/kafka-connect/rest-credentials.properties"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
ROLL_TOPIC = "connect-roll"
ROLL_FILE = "/var/lib/kafka-connect/roll-sink.txt"
PROBE = "probe-sink"
KEEP = "keep-sink"


def workers() -> list[str]:
    return hosts_in("kafka_connect")


def settings_of() -> dict[str, Any]:
    return host_variables(workers()[0])


def declared_names() -> list[str]:
    """The connectors the inventory declares present (kafka_connect_connectors), sorted."""
    connectors = settings_of()["kafka_connect_connectors"]
    return sorted(c["name"] for c in connectors if c.get("state", "present") == "present")


def url_of(host: str) -> str:
    props = read_properties(node(host), SETTINGS)
    return props["listeners"]


def tls() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=os.path.join(ca_dir(), "trust.pem"))


@cache
def login() -> tuple[str, str]:
    return connect_rest_login(workers()[0])


def call(
    base: str, method: str, path: str, body: Any = None, auth: tuple[str, str] | None = None, timeout: float = 15
) -> tuple[int, Any]:
    """One request to a worker (as the playbooks' REST user unless `auth` says otherwise): (status, decoded body)."""
    user, password = auth or login()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if user:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls()) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        text = exc.read().decode()
        try:
            return exc.code, json.loads(text)
        except ValueError:
            return exc.code, text


@pytest.fixture(scope="module")
def urls() -> list[str]:
    if not workers():
        pytest.skip("the inventory has no kafka_connect hosts")
    return [url_of(h) for h in workers()]


@pytest.fixture(scope="module")
def admin(cluster: Cluster, urls: list[str]) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="verify-connect"
    )
    yield client
    client.close()


def status(base: str, name: str) -> dict[str, Any]:
    code, body = call(base, "GET", f"/connectors/{name}/status")
    return body if code == 200 else {}


def running(base: str, name: str) -> bool:
    s = status(base, name)
    tasks = s.get("tasks") or []
    return (
        (s.get("connector") or {}).get("state") == "RUNNING"
        and bool(tasks)
        and all(t["state"] == "RUNNING" for t in tasks)
    )


# ---- the workers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", hosts_in("kafka_connect"))
def test_worker_runs_under_systemd_as_its_own_user_with_its_secrets_closed(host: str) -> None:
    target = node(host)
    assert_java_service_runs(target, UNIT, "kafka-connect", MAIN_CLASS)
    for path in (SETTINGS, CREDENTIALS, "/etc/kafka-connect/tls/rest-keystore.p12"):
        f = target.file(path)
        assert (f.user, f.group, f.mode) == ("root", "kafka-connect", 0o640), path
    props = read_properties(target, SETTINGS)
    user = host_variables(host).get("kafka_connect_kafka_user", "connect")
    protocol = bootstrap_protocol()
    for prefix in ("", "producer.", "consumer.", "admin."):
        assert props.get(prefix + "security.protocol", "PLAINTEXT") == protocol, prefix
        if protocol.startswith("SASL"):
            assert f'username="{user}"' in props[prefix + "sasl.jaas.config"], prefix
        if protocol.endswith("SSL"):
            assert props[prefix + "ssl.endpoint.identification.algorithm"] == "https", prefix
    assert props["listeners"].startswith("https://")
    assert props["connector.client.config.override.policy"] == "None"
    journal = target.check_output(f"journalctl -u {UNIT} --no-pager -n 500")
    log = target.check_output("tail -n 3000 /var/log/kafka-connect/connect.log")
    for text in (journal, log):
        assert "C0nnect-scenario-pass" not in text and login()[1] not in text


def test_rest_answers_https_only_and_only_to_a_known_user(urls: list[str]) -> None:
    base = urls[0]
    assert call(base, "GET", "/connectors")[0] == 200
    assert call(base, "GET", "/connectors", auth=("", ""))[0] == 401
    assert call(base, "GET", "/connectors", auth=(login()[0], "wrong-password"))[0] == 401
    assert call(base, "GET", "/health", auth=("nobody", "x"))[0] == 401
    plain = base.replace("https://", "http://")
    try:
        with urllib.request.urlopen(plain + "/connectors", timeout=5) as response:
            answered: int | None = response.status
    except urllib.error.HTTPError as exc:
        answered = exc.code
    except (OSError, http.client.HTTPException):  # a TLS alert is no HTTP answer
        answered = None
    assert answered is None or answered >= 400


def test_workers_form_one_cluster_with_the_topics_the_role_made(urls: list[str], admin: KafkaAdminClient) -> None:
    roots = [call(u, "GET", "/")[1] for u in urls]
    assert len({r["kafka_cluster_id"] for r in roots}) == 1, roots
    assert {r["version"] for r in roots} == {settings_of().get("kafka_connect_version", "4.3.1")}
    # Every worker serves the connectors the group runs (a follower forwards to the leader): the declared ones.
    assert [sorted(call(u, "GET", "/connectors")[1]) for u in urls] == [declared_names()] * len(urls)
    names = ["connect-configs", "connect-offsets", "connect-status"]
    described = {n: admin.describe_topics([n])[0] for n in names}
    assert len(described["connect-configs"]["partitions"]) == 1
    assert {len(p["replica_nodes"]) for t in described.values() for p in t["partitions"]} == {3}
    described_configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
    for name in names:
        configs = described_configs["topic"][name]
        assert configs["cleanup.policy"]["value"] == "compact", name
        assert configs["min.insync.replicas"]["value"] == "2", name
    for connector in declared_names():
        wait_until(lambda c=connector: running(urls[0], c), 180, f"{connector} running")


def plugin_locks() -> dict[str, dict[str, Any]]:
    root = os.path.join(os.path.dirname(__file__), "..", "..", "artifacts", "locks")
    names = settings_of().get("kafka_connect_plugins", [])
    return {n: json.loads(open(os.path.join(root, f"{n}.json"), encoding="utf-8").read()) for n in names}


def test_every_worker_loads_the_declared_plugins_from_their_locked_files(urls: list[str]) -> None:
    locks = plugin_locks()
    if not locks:
        pytest.skip("the inventory declares no connector plugin (kafka_connect_plugins)")
    versions = {a["version"] for lock in locks.values() for a in lock["artifacts"]}
    for host, base in zip(workers(), urls, strict=True):
        code, plugins = call(base, "GET", "/connector-plugins?connectorsOnly=true")
        assert code == 200, plugins
        loaded = {p["class"]: p["version"] for p in plugins}
        # Debezium's PostgreSQL source, from the locked archive (the file connectors come with the Connect jars).
        assert loaded.get("io.debezium.connector.postgresql.PostgresConnector") in versions, (host, loaded)
        assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in loaded, (host, loaded)
        target = node(host)
        for name, lock in locks.items():
            stamp = target.file(f"/opt/kafka-connect/plugins/{name}/.kafkalab-plugin.sha512")
            assert stamp.content_string == "".join(a["sha512"] + "\n" for a in lock["artifacts"]), (host, name)
            assert (stamp.user, stamp.mode) == ("root", 0o644)
        assert not target.run("ls -a /opt/kafka-connect/plugins | grep partial").stdout, host


# ---- connectors as code --------------------------------------------------------------------------------------------


def declared(*extra: dict[str, Any]) -> list[str]:
    connectors = [*settings_of()["kafka_connect_connectors"], *extra]
    return ["-e", json.dumps({"kafka_connect_connectors": connectors})]


def probe(**config: Any) -> dict[str, Any]:
    base = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": 1,
        "topics": ROLL_TOPIC,
        "file": "/var/lib/kafka-connect/probe-a.txt",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    return {"name": PROBE, "config": {k: v for k, v in {**base, **config}.items() if v is not None}}


def cdc_probe() -> dict[str, Any]:
    """Debezium's PostgreSQL source aimed at a port where no database listens (its validation tries to connect)."""
    config = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": 5432,
        "database.user": "cdc",
        "database.dbname": "shop",
        "topic.prefix": "shop",
        "plugin.name": "pgoutput",
    }
    return {"name": "cdc-probe", "config": config, "writes": ["shop.*"]}


def typo_probe() -> dict[str, Any]:
    return {"name": "typo-probe", "config": {**probe()["config"], "connector.class": "org.example.NoSuchConnector"}}


def committed_offsets(admin: KafkaAdminClient, group: str) -> dict[Any, Any]:
    return dict(admin.list_group_offsets({group: None}).get(group, {}))


def connect_playbook(*args: str) -> Any:
    return run_playbook("kafka_connect.yml", ["--limit", "kafka_connect:localhost", *args], timeout=900)


@pytest.mark.changes_cluster
def test_connectors_as_code(urls: list[str], cluster: Cluster, admin: KafkaAdminClient) -> None:
    ensure_topic(admin)
    # Invalid configs, refused by the workers' own validation in preflight, naming connector and key, before any host
    # or connector changed: a sink with neither topics nor topics.regex; a Debezium source whose database does not
    # answer (its plugin's own check); a class no plugin has.
    result = connect_playbook(*declared(probe(topics=None), cdc_probe(), typo_probe()))
    assert result.returncode != 0
    assert "Invalid connector config; no connector was changed" in result.stdout, result.stdout[-3000:]
    assert f"connector {PROBE}: topics" in result.stdout, result.stdout[-3000:]
    if plugin_locks():
        assert "connector cdc-probe: database.hostname: Error while validating" in result.stdout, result.stdout[-3000:]
    assert "connector typo-probe: connector.class org.example.NoSuchConnector: Failed to find" in result.stdout
    assert "(the workers have: " in result.stdout
    assert "Preflight" in result.stdout and "Create the service account" not in result.stdout
    assert call(urls[0], "GET", f"/connectors/{PROBE}")[0] == 404

    # Check mode: the new connector in the diff, nothing created.
    result = connect_playbook("--check", "--diff", *declared(probe()))
    assert result.returncode == 0, result.stdout[-3000:]
    assert '"created": [' in result.stdout or f"'{PROBE}'" in result.stdout or PROBE in result.stdout
    assert call(urls[0], "GET", f"/connectors/{PROBE}")[0] == 404

    # Created, running (with a second one, KEEP, that the last run leaves out); then a declared change updates the
    # probe in place, keeping its sink group's offsets.
    keep = {"name": KEEP, "config": {**probe()["config"], "file": "/var/lib/kafka-connect/keep.txt"}}
    result = connect_playbook(*declared(probe(), keep))
    assert result.returncode == 0, result.stdout[-3000:]
    wait_until(lambda: running(urls[0], PROBE) and running(urls[0], KEEP), 120, f"{PROBE} and {KEEP} running")
    # Records the probe copies (not numbers: the roll test's sink counts only numbered lines), so its group commits.
    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(20):
        producer.send(ROLL_TOPIC, f"probe-{i}".encode())
    producer.flush()
    producer.close()
    wait_until(lambda: bool(committed_offsets(admin, f"connect-{PROBE}")), 60, f"{PROBE} committed")
    committed = committed_offsets(admin, f"connect-{PROBE}")
    result = connect_playbook(*declared(probe(file="/var/lib/kafka-connect/probe-b.txt"), keep))
    assert result.returncode == 0, result.stdout[-3000:]
    code, config = call(urls[0], "GET", f"/connectors/{PROBE}/config")
    assert code == 200 and config["file"] == "/var/lib/kafka-connect/probe-b.txt"
    after = committed_offsets(admin, f"connect-{PROBE}")
    assert all(after[tp].offset >= committed[tp].offset for tp in committed), (committed, after)

    # Declared absent, the probe goes; left out of the declaration, KEEP stays. A plugin directory no entry names goes
    # (and an unpack a dead run left).
    stray = ["/opt/kafka-connect/plugins/stray-0.1", "/opt/kafka-connect/plugins/.stray-0.1.partial"]
    node(workers()[0]).run(f"mkdir -p {' '.join(stray)}")
    result = connect_playbook(*declared({"name": PROBE, "state": "absent"}))
    assert result.returncode == 0, result.stdout[-3000:]
    assert call(urls[0], "GET", f"/connectors/{PROBE}")[0] == 404
    assert call(urls[0], "GET", f"/connectors/{KEEP}")[0] == 200
    assert not any(node(workers()[0]).file(path).exists for path in stray)
    assert all(running(urls[0], name) for name in declared_names())
    # The test's own clean-up, through the API (the inventory never declared it).
    assert call(urls[0], "DELETE", f"/connectors/{KEEP}")[0] == 204


# ---- under change --------------------------------------------------------------------------------------------------


def ensure_topic(admin: KafkaAdminClient) -> None:
    with contextlib.suppress(TopicAlreadyExistsError):
        admin.create_topics(
            [NewTopic(ROLL_TOPIC, 3, 3, topic_configs={"min.insync.replicas": "2"})], validate_only=False
        )


def sink_lines() -> list[int]:
    lines: list[int] = []
    for host in workers():
        f = node(host).file(ROLL_FILE)
        if f.exists:
            lines += [int(x) for x in f.content_string.split() if x.isdigit()]
    return lines


@pytest.mark.changes_cluster
def test_worker_roll_and_kill_under_load_lose_nothing(
    urls: list[str], cluster: Cluster, admin: KafkaAdminClient
) -> None:
    if len(workers()) < 2 or "roll-sink" not in declared_names():
        pytest.skip("needs two workers and the roll-sink connector (molecule default declares them), one to move to")
    ensure_topic(admin)
    wait_until(lambda: running(urls[0], "roll-sink"), 120, "roll-sink running")
    start_lines = Counter(sink_lines())
    producer = AckedProducer(cluster.bootstrap, ROLL_TOPIC)
    producer.start()
    wait_until(lambda: len(producer.acked) > 50, 60, "the producer's first acks")

    started = time.monotonic()
    result = run_playbook(
        "rolling_restart.yml",
        ["--limit", "kafka_connect:localhost", "-e", '{"rolling_restart_services": ["kafka_connect"]}'],
        timeout=900,
    )
    roll = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-4000:]
    restarts = result.stdout.count("TASK [kafkalab.kafka.kafka_connect : Restart the worker, for what changed")
    assert restarts == len(workers()), result.stdout[-4000:]

    # SIGKILL of the worker that runs the task, kept down (a host that is gone): the task moves to another worker.
    (task,) = status(urls[0], "roll-sink")["tasks"]
    by_address = {url_of(h).split("://")[1]: h for h in workers()}
    victim = by_address[task["worker_id"]]
    survivor = next(u for h, u in zip(workers(), urls, strict=False) if h != victim)
    killed = time.monotonic()
    node(victim).run(f"systemctl kill --signal=SIGKILL {UNIT} && systemctl stop {UNIT}")
    wait_until(
        lambda: (
            running(survivor, "roll-sink")
            and status(survivor, "roll-sink")["tasks"][0]["worker_id"] != task["worker_id"]
        ),
        180,
        "the task running on another worker",
    )
    moved = time.monotonic() - killed
    node(victim).run(f"systemctl start {UNIT}")
    wait_until(lambda: call(url_of(victim), "GET", "/health")[0] == 200, 180, f"{victim} back")

    time.sleep(3)
    producer.stop.set()
    producer.join(120)
    acked = set(producer.acked)
    # Lines written since the test started: an earlier run on this cluster left the same numbers in the files.
    wait_until(
        lambda: acked <= set(Counter(sink_lines()) - start_lines), 180, "every acknowledged record in the sink's files"
    )
    delivered = Counter(sink_lines()) - start_lines
    lost = sorted(acked - set(delivered))
    duplicates = sum(n - 1 for seq, n in delivered.items() if n > 1 and seq in acked)
    print(
        f"connect worker roll {roll:.1f} s ({len(workers())} workers) and SIGKILL (task moved in {moved:.1f} s): "
        f"{len(acked)} acked, {len(set(delivered) & acked)} in the sink's files, {len(lost)} lost, {duplicates} "
        f"duplicated (at-least-once sink), longest gap between acks {producer.longest_gap():.3f} s, "
        f"{len(producer.errors)} sends not acknowledged"
    )
    assert lost == [], lost[:20]
