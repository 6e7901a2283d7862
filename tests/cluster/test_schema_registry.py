"""The Schema Registry, live: Apicurio Registry on every host of group schema_registry, serving Confluent's API over
HTTPS with a certificate of the project CA (or the operator's), its data in Kafka (kafkasql) so every instance serves
the same subjects. What it checks follows the inventory (its Kafka login on a SASL_SSL listener, none on a plain one;
the declared subjects and levels), so it runs on molecule default and on the lab alike.

- each instance runs under systemd as its own user, its settings (with its Kafka login) closed to others, HTTPS only;
- the declared subjects exist as declared, the same on every instance, with the inventory's global level (BACKWARD);
- for BACKWARD, FORWARD and FULL, a change the rule allows registers and one it forbids is refused with 409;
- subjects as code: check mode shows a new version and registers nothing, and a declared version the subject's rule
  forbids stops the run, naming subject, version and rule, before anything is registered (that a re-run changes
  nothing, the lifecycle journey's no-op site.yml proves);
- a rolling restart of the instances while a client registers and looks up schemas: no failed lookup (the client
  fails over between instances, as Confluent's clients do with several URLs), lookup p99 printed;
- SIGKILL of one instance: the other keeps serving, systemd brings the killed one back (drained until it has read
  its journal: Apicurio answers 404 for what it has not read yet) with every subject, and no lookup fails;
- every registered schema survives a restart of all instances (it lives in Kafka);
- Avro end to end: Confluent's AvroSerializer registers the schema and frames each record with its id, its
  AvroDeserializer reads every acknowledged record back (and the same records as JSON, for the measurements).

Runs against an inventory with registry hosts (molecule default, the lab); elsewhere it is skipped and says why.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster, assert_java_service_runs, read_properties
from inventory_hosts import bootstrap_protocol, ca_dir, host_variables, hosts_in, node, run_playbook
from prometheus_api import wait_until

from kafkalab import kafka_client

UNIT = "apicurio-registry"
SETTINGS = "/etc/apicurio-registry/registry.properties"
CCOMPAT = "/apis/ccompat/v7"
JSON_TYPE = "application/vnd.schemaregistry.v1+json"


def registry_hosts() -> list[str]:
    return hosts_in("schema_registry")


def url_of(host: str) -> str:
    settings = read_properties(node(host), SETTINGS)
    v = host_variables(host)
    address = v.get("firewall_address") or v.get("ansible_host") or host
    if "quarkus.http.ssl-port" in settings:
        return f"https://{address}:{settings['quarkus.http.ssl-port']}"
    return f"http://{address}:{settings['quarkus.http.port']}"


def tls() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=os.path.join(ca_dir(), "trust.pem"))


def call(base: str, method: str, path: str, body: Any = None, timeout: float = 10) -> tuple[int, Any]:
    """One request to an instance: (status, decoded JSON body or None)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": JSON_TYPE})
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


def schema(name: str, fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "kafkalab.lab", "fields": fields})


@pytest.fixture(scope="module")
def urls() -> list[str]:
    hosts = registry_hosts()
    if not hosts:
        pytest.skip("the inventory has no schema_registry hosts")
    return [url_of(h) for h in hosts]


def subjects_state(base: str) -> dict[str, list[tuple[int, int]]]:
    """subject -> [(version, id)] as one instance serves them."""
    status, names = call(base, "GET", f"{CCOMPAT}/subjects")
    assert status == 200, names
    state = {}
    for subject in sorted(names):
        quoted = urllib.parse.quote(subject, safe="")
        status, versions = call(base, "GET", f"{CCOMPAT}/subjects/{quoted}/versions")
        assert status == 200, versions
        state[subject] = [
            (v, call(base, "GET", f"{CCOMPAT}/subjects/{quoted}/versions/{v}")[1]["id"]) for v in sorted(versions)
        ]
    return state


# ---- the instances ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", hosts_in("schema_registry"))
def test_instance_runs_under_systemd_as_its_own_user_with_its_settings_closed(host: str) -> None:
    target = node(host)
    assert_java_service_runs(target, UNIT, "apicurio", "-Dquarkus.config.locations=" + SETTINGS)
    settings = target.file(SETTINGS)
    assert (settings.user, settings.group, settings.mode) == ("root", "apicurio", 0o640)
    props = read_properties(target, SETTINGS)
    # Its own Kafka login where the bootstrap listener runs SASL_SSL, checking the brokers' names against the CA; on a
    # plain listener (the lab's INTERNAL) no Kafka security settings at all.
    protocol = props.get("apicurio.kafka.common.security.protocol", "PLAINTEXT")
    assert protocol == bootstrap_protocol(), props
    if protocol == "SASL_SSL":
        user = host_variables(host).get("schema_registry_kafka_user", "schema-registry")
        assert f'username="{user}"' in props["apicurio.kafka.common.sasl.jaas.config"]
    if protocol in ("SSL", "SASL_SSL"):
        assert props["apicurio.kafka.common.ssl.endpoint.identification.algorithm"] == "https"
    assert props["apicurio.kafkasql.topic.auto-create"] == "false"
    # HTTPS only: nothing answers in plain HTTP.
    assert props["quarkus.http.insecure-requests"] == "disabled"
    assert "password=" not in target.check_output(f"journalctl -u {UNIT} --no-pager -n 500")


def test_every_instance_serves_the_declared_subjects_the_same(urls: list[str]) -> None:
    states = [subjects_state(u) for u in urls]
    assert all(s == states[0] for s in states), states
    settings = host_variables(registry_hosts()[0])
    for declared in settings.get("schema_registry_subjects") or []:
        present = declared.get("state", "present") == "present"
        assert (declared["name"] in states[0]) == present, (declared["name"], sorted(states[0]))
        if present and declared.get("compatibility"):
            config = call(urls[0], "GET", f"{CCOMPAT}/config/{urllib.parse.quote(declared['name'], safe='')}")[1]
            assert config["compatibilityLevel"] == declared["compatibility"].upper(), (declared, config)
    level = str(settings.get("schema_registry_compatibility", "BACKWARD")).upper()
    levels = {u: call(u, "GET", f"{CCOMPAT}/config")[1]["compatibilityLevel"] for u in urls}
    assert set(levels.values()) == {level}, levels


def test_plain_http_is_not_served(urls: list[str]) -> None:
    """Nothing listens on Quarkus's plain port, and plain HTTP on the API's port gets no answer."""
    # Quarkus's plain port (8080) is closed. The registry's own sockets cannot be told from others' here (its sandbox
    # hides its process from ss), so a host where the Spark master's UI holds 8080 (the lab's spark1) is left out.
    spark_masters = set(hosts_in("spark_master"))
    for host in registry_hosts():
        if host not in spark_masters:
            assert not node(host).socket("tcp://0.0.0.0:8080").is_listening, host
    base = urls[0].replace("https://", "http://")
    try:
        with urllib.request.urlopen(base + "/apis/ccompat/v7/subjects", timeout=5) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = None
    assert status is None or status >= 400


# ---- compatibility: Confluent's three rules, through the registry's own check ----------------------------------

ORDER = [{"name": "id", "type": "long"}, {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"}]
CUSTOMER = [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None},
]
PAYMENT = [
    {"name": "id", "type": "long"},
    {"name": "order", "type": "long"},
    {"name": "amount", "type": "double"},
    {"name": "currency", "type": "string", "default": "EUR"},
]
OPTIONAL_NOTE = {"name": "note", "type": ["null", "string"], "default": None}
REQUIRED_QTY = {"name": "qty", "type": "int"}

# Each record's first version, by name.
ORDER_OF = {"Order": ORDER, "Payment": PAYMENT, "Customer": CUSTOMER}

# (rule, subject, record, allowed change, forbidden change): each registered on a fresh copy of the subject.
CASES = [
    # BACKWARD: new readers read old data. A new field needs a default; a required one breaks it.
    ("BACKWARD", "orders-value", "Order", [*ORDER, OPTIONAL_NOTE], [*ORDER, REQUIRED_QTY]),
    # FORWARD: old readers read new data. A new required field is fine; dropping one old readers need is not.
    ("FORWARD", "payments-value", "Payment", [*PAYMENT, REQUIRED_QTY], [f for f in PAYMENT if f["name"] != "amount"]),
    # FULL: both. An optional field passes; a required one breaks the backward half.
    ("FULL", "customers-value", "Customer", [*CUSTOMER, OPTIONAL_NOTE], [*CUSTOMER, REQUIRED_QTY]),
]


@pytest.mark.parametrize(("rule", "subject", "record", "allowed", "forbidden"), CASES, ids=[c[0] for c in CASES])
def test_a_rule_registers_what_it_allows_and_refuses_what_it_forbids(
    urls: list[str], rule: str, subject: str, record: str, allowed: list[Any], forbidden: list[Any]
) -> None:
    # A copy of the declared subject, so the declared ones stay as the inventory says.
    copy = f"verify-{rule.lower()}-{uuid.uuid4().hex[:6]}"
    first, other = urls[0], urls[-1]
    status, body = call(
        first, "POST", f"{CCOMPAT}/subjects/{copy}/versions", {"schema": schema(record, ORDER_OF[record])}
    )
    assert status == 200, body
    status, body = call(first, "PUT", f"{CCOMPAT}/config/{copy}", {"compatibility": rule})
    assert status == 200, body
    status, refused = call(first, "POST", f"{CCOMPAT}/subjects/{copy}/versions", {"schema": schema(record, forbidden)})
    assert status == 409, refused
    status, body = call(other, "POST", f"{CCOMPAT}/subjects/{copy}/versions", {"schema": schema(record, allowed)})
    assert status == 200, body
    # Registered through one instance, served by every one (the journal in Kafka).
    for base in urls:
        versions = wait_until(
            lambda b=base: (
                (r := call(b, "GET", f"{CCOMPAT}/subjects/{copy}/versions"))[0] == 200 and len(r[1]) == 2 and r[1]
            ),
            30,
            f"{copy} with two versions on {base}",
        )
        assert versions == [1, 2]
    print(f"{rule}: {copy} refused {refused.get('message', refused)!r}")
    call(first, "DELETE", f"{CCOMPAT}/subjects/{copy}")
    call(first, "DELETE", f"{CCOMPAT}/subjects/{copy}?permanent=true")


# ---- Avro end to end: Confluent's serializer, the schema id in each record ------------------------------------


def librdkafka_settings(cluster: Cluster) -> dict[str, Any]:
    """confluent-kafka's settings for the bootstrap listener, from the kafka role's client settings (the admin)."""
    client = os.path.join(ca_dir(), "client.properties")
    return kafka_client.librdkafka_settings(cluster.bootstrap, client if os.path.exists(client) else None)


RECORDS = 5000


def round_trip(cluster: Cluster, topic: str, encode: Any, decode: Any) -> tuple[float, float, list[Any]]:
    """Produce RECORDS records with acks=all, then consume them back: (produced/s, consumed/s, decoded values)."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    conf = librdkafka_settings(cluster)
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(60)
    producer = Producer({**conf, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
    acked: list[int] = []
    started = time.monotonic()
    for i in range(RECORDS):
        producer.produce(
            topic, key=str(i).encode(), value=encode(i), on_delivery=lambda e, m: acked.append(0 if e else 1)
        )
        producer.poll(0)
    producer.flush(60)
    produced = RECORDS / (time.monotonic() - started)
    assert sum(acked) == RECORDS, f"{RECORDS - sum(acked)} records not acknowledged"
    consumer = Consumer({**conf, "group.id": f"verify-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[Any] = []
    started = time.monotonic()
    deadline = started + 120
    while len(values) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            values.append(decode(message.value()))
    consumed = len(values) / (time.monotonic() - started)
    consumer.close()
    admin.delete_topics([topic])
    return produced, consumed, values


def test_avro_records_round_trip_with_the_schema_id_from_the_registry_in_each(
    urls: list[str], cluster: Cluster
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = f"verify-avro-{uuid.uuid4().hex[:8]}"
    # Confluent's clients take the API's base: Apicurio serves it at /apis/ccompat/v7 (schema.registry.url).
    base = ",".join(f"{u}{CCOMPAT}" for u in urls)
    registry = SchemaRegistryClient({"url": base, "ssl.ca.location": os.path.join(ca_dir(), "trust.pem")})
    serializer = AvroSerializer(registry, schema("Order", ORDER))
    deserializer = AvroDeserializer(registry)
    context = SerializationContext(topic, MessageField.VALUE)

    def order(i: int) -> dict[str, Any]:
        return {"id": i, "customer": f"c{i % 97}", "amount": i / 100}

    avro_out, avro_in, avro = round_trip(
        cluster, topic, lambda i: serializer(order(i), context), lambda v: (v[:5], deserializer(v, context))
    )
    # Confluent's framing: magic byte 0, then the 4-byte id the registry gave the subject's schema.
    status, registered = call(urls[0], "GET", f"{CCOMPAT}/subjects/{topic}-value/versions/latest")
    assert status == 200, registered
    assert {frame for frame, _value in avro} == {b"\x00" + registered["id"].to_bytes(4, "big")}
    assert sorted(value["id"] for _frame, value in avro) == list(range(RECORDS))
    assert all(value == order(value["id"]) for _frame, value in avro)
    # The same records as JSON, through the same client, for the measurements.
    json_out, json_in, plain = round_trip(
        cluster, topic + "-json", lambda i: json.dumps(order(i)).encode(), lambda v: json.loads(v)
    )
    assert sorted(value["id"] for value in plain) == list(range(RECORDS))
    print(
        f"avro vs json, {RECORDS} records (acks=all): produce {avro_out:.0f} vs {json_out:.0f} records/s, "
        f"consume {avro_in:.0f} vs {json_in:.0f} records/s"
    )
    for subject in (f"{topic}-value",):
        call(urls[0], "DELETE", f"{CCOMPAT}/subjects/{subject}")
        call(urls[0], "DELETE", f"{CCOMPAT}/subjects/{subject}?permanent=true")


# ---- subjects as code ------------------------------------------------------------------------------------------


def recap_changed(output: str) -> int:
    return sum(int(n) for n in re.findall(r"changed=(\d+)", output.split("PLAY RECAP")[-1]))


def run_registry(extra: dict[str, Any] | None = None, check: bool = False) -> Any:
    args = ["-e", json.dumps(extra)] if extra else []
    return run_playbook("schema_registry.yml", [*args, *(["--check", "--diff"] if check else [])], timeout=900)


@pytest.mark.changes_cluster
def test_subjects_as_code_plans_in_check_mode_and_refuses_a_version_its_rule_forbids(
    urls: list[str], tmp_path: Path
) -> None:
    base = urls[0]
    # A subject of the test's own, registered through the API (version 1), next to the inventory's declared ones,
    # which are declared again unchanged: only the test's subject may show in the plan.
    subject = f"verify-code-{uuid.uuid4().hex[:6]}-value"
    status, body = call(base, "POST", f"{CCOMPAT}/subjects/{subject}/versions", {"schema": schema("Order", ORDER)})
    assert status == 200, body
    inventory = list(host_variables(registry_hosts()[0]).get("schema_registry_subjects") or [])
    level = str(host_variables(registry_hosts()[0]).get("schema_registry_compatibility", "BACKWARD")).upper()
    (tmp_path / "order-v2.avsc").write_text(schema("Order", [*ORDER, OPTIONAL_NOTE]))
    (tmp_path / "order-bad.avsc").write_text(schema("Order", [*ORDER, REQUIRED_QTY]))
    try:
        before = subjects_state(base)
        # Check mode: the new version is in the plan, and nothing is registered.
        declared = [*inventory, {"name": subject, "schema_file": str(tmp_path / "order-v2.avsc")}]
        planned = run_registry({"schema_registry_subjects": declared}, check=True)
        assert planned.returncode == 0, planned.stdout[-4000:]
        assert subject in planned.stdout and recap_changed(planned.stdout) > 0, planned.stdout[-4000:]
        assert subjects_state(base) == before
        # A version the subject's rule forbids (a required field under BACKWARD): the run stops, naming subject,
        # version and rule; nothing registered.
        refused = run_registry(
            {
                "schema_registry_subjects": [
                    *inventory,
                    {"name": subject, "schema_file": str(tmp_path / "order-bad.avsc")},
                ]
            }
        )
        assert refused.returncode != 0
        assert subject in refused.stdout and level in refused.stdout, refused.stdout[-4000:]
        assert re.search(r"version\s+2", refused.stdout), refused.stdout[-4000:]
        assert "Traceback" not in refused.stdout
        assert subjects_state(base) == before
    finally:
        call(base, "DELETE", f"{CCOMPAT}/subjects/{subject}")
        call(base, "DELETE", f"{CCOMPAT}/subjects/{subject}?permanent=true")
    # A re-run of the inventory's own declarations changes nothing: the lifecycle journey's no-op site.yml proves it.


# ---- under change ----------------------------------------------------------------------------------------------


class Client(threading.Thread):
    """Registers a new subject and looks schemas up by id, over and over, failing over between the instances the way
    Confluent's clients do with several URLs: a lookup fails only when no instance answers it."""

    def __init__(self, urls: list[str]) -> None:
        super().__init__(daemon=True)
        self.urls = urls
        self.stop = threading.Event()
        self.lookups: list[float] = []
        self.failed: list[str] = []
        self.registered: dict[str, int] = {}

    def ask(self, method: str, path: str, body: Any = None) -> tuple[int, Any, str]:
        """(status, answer, the instance that answered), trying the instances in turn from a rotating start."""
        last: Any = None
        start = len(self.lookups) % len(self.urls)
        for base in self.urls[start:] + self.urls[:start]:
            try:
                status, answer = call(base, method, path, body, timeout=5)
            except OSError as exc:
                last = exc
                continue
            if status < 500:
                return status, answer, base
            last = (status, answer)
        raise OSError(f"no instance answered {method} {path}: {last!r}")

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            subject = f"verify-load-{uuid.uuid4().hex[:8]}"
            try:
                if n % 5 == 1:
                    status, body, _base = self.ask(
                        "POST", f"{CCOMPAT}/subjects/{subject}/versions", {"schema": schema("Load", ORDER)}
                    )
                    assert status == 200, body
                    self.registered[subject] = body["id"]
                for known in list(self.registered.values())[-3:]:
                    start = time.monotonic()
                    status, body, base = self.ask("GET", f"{CCOMPAT}/schemas/ids/{known}")
                    self.lookups.append(time.monotonic() - start)
                    if status != 200:
                        self.failed.append(f"{base} id {known}: {status} {body}")
            except (OSError, AssertionError) as exc:
                self.failed.append(str(exc))
            time.sleep(0.05)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


@pytest.fixture
def client(urls: list[str]) -> Iterator[Client]:
    running = Client(urls)
    running.start()
    wait_until(lambda: len(running.lookups) > 20, 60, "the client's first lookups")
    yield running
    running.stop.set()
    running.join(30)
    for subject in running.registered:
        call(urls[0], "DELETE", f"{CCOMPAT}/subjects/{subject}")
        call(urls[0], "DELETE", f"{CCOMPAT}/subjects/{subject}?permanent=true")


@pytest.mark.changes_cluster
def test_rolling_restart_keeps_every_lookup_answered(urls: list[str], client: Client) -> None:
    started = time.monotonic()
    result = run_playbook(
        "rolling_restart.yml",
        ["--limit", "schema_registry", "-e", '{"rolling_restart_services": ["schema_registry"]}'],
        timeout=900,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-4000:]
    assert result.stdout.count("Restart the instance, for what changed") >= 1
    time.sleep(2)
    print(
        f"registry rolling restart: {took:.1f} s, {len(client.lookups)} lookups, p99 {p99(client.lookups) * 1000:.0f}"
        f" ms, max {max(client.lookups) * 1000:.0f} ms, {len(client.registered)} subjects registered, "
        f"{len(client.failed)} failed"
    )
    assert client.failed == []


@pytest.mark.changes_cluster
def test_sigkill_of_one_instance_the_other_serves_and_it_comes_back(urls: list[str], client: Client) -> None:
    victim = registry_hosts()[0]
    before = len(client.lookups)
    node(victim).run(f"systemctl kill --signal=SIGKILL {UNIT}")
    # systemd starts it again (Restart=on-failure); until then the other instance answers.
    victim_url = url_of(victim)
    wait_until(lambda: call(victim_url, "GET", "/health/ready")[0] == 200, 180, f"{victim} ready again after SIGKILL")
    wait_until(lambda: len(client.lookups) > before + 20, 60, "more lookups")
    meanwhile = len(client.lookups) - before
    print(f"registry SIGKILL of {victim}: {meanwhile} lookups meanwhile, {len(client.failed)} failed")
    # systemd starts it again drained (the unit's ExecStartPre), so no client reaches it before it has read its
    # journal; the other instance answers meanwhile.
    assert client.failed == []
    client.stop.set()
    client.join(30)
    time.sleep(1)
    assert subjects_state(victim_url) == subjects_state(urls[-1])


@pytest.mark.changes_cluster
def test_every_schema_survives_a_restart_of_all_instances(urls: list[str]) -> None:
    before = subjects_state(urls[0])
    for host in registry_hosts():
        node(host).run(f"systemctl stop {UNIT}")
    started = time.monotonic()
    for host in registry_hosts():
        node(host).run(f"systemctl start {UNIT}")
    for base in urls:
        wait_until(lambda b=base: call(b, "GET", "/health/ready")[0] == 200, 180, f"{base} ready")
    print(f"registry cold start of every instance: ready in {time.monotonic() - started:.1f} s")
    for base in urls:
        assert subjects_state(base) == before
