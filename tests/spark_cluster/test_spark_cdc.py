"""Change data capture, live: PostgreSQL (roles/postgresql) -> Debezium on a Connect worker (roles/kafka_connect) ->
Kafka -> the Spark job's archive:
- the connector's config holds the placeholder of its password, never the password; its replication slot is active,
  logged in as the Debezium user over TLS;
- every change of a workload of one-row transactions (inserts, updates, deletes, inserts again of deleted keys) is
  archived exactly once, in commit order per key (each key's events in the archive, by partition and offset, are
  the key's changes in the order PostgreSQL committed them);
- the table equals, key by key, the last archived event of the key;
- measured, printed and never asserted: commit to Debezium's event, and commit to the archive, p50 and p99;
- Prometheus scrapes the server's exporter: the slot active; with the connector stopped the slot has no consumer and
  its alert fires while rows change; resumed, the alert resolves and the changes made meanwhile are archived once.
Runs where the inventory has a postgresql host, a kafka_connect host and the job archives the change topic
(molecule spark); elsewhere it is skipped and says why.
"""

from __future__ import annotations

import base64
import json
import ssl
import statistics
import time
import urllib.request
import uuid
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from inventory_hosts import connect_rest_login, hosts_in, node
from prometheus_api import Prometheus, wait_until

from .conftest import SparkNode
from .pipeline import wait_for

TOPIC = "cdc.public.customers"
CONNECTOR = "shop-cdc"
SLOT = "kafkalab_cdc"
DATABASE = "shop"
ROWS = 300
# The workload's table, as its owner. Deletes carry the whole row (its run), so the checks tell this run's events from
# an earlier run's.
TABLE = (
    "SET ROLE shop;\n"
    "CREATE TABLE IF NOT EXISTS customers (id int PRIMARY KEY, name text NOT NULL, seq int NOT NULL, run text);\n"
    "ALTER TABLE customers REPLICA IDENTITY FULL;\n"
)


@pytest.fixture(scope="module")
def cdc(spark_node: SparkNode) -> dict[str, Any]:
    servers, workers = hosts_in("postgresql"), hosts_in("kafka_connect")
    if not servers or not workers:
        pytest.skip("the inventory has no postgresql or no kafka_connect host")
    if TOPIC not in spark_node.config["kafka"]["topics"]:
        pytest.skip(f"the job does not archive {TOPIC} (spark_consumer_topics)")
    return {"server": node(servers[0]), "worker": workers[0]}


def psql(server: Any, sql: str) -> list[list[str]]:
    """Run SQL on the server as postgres over the local socket (peer login); rows as lists of text."""
    encoded = base64.b64encode(sql.encode()).decode()
    out = server.check_output(
        f"echo {encoded} | base64 -d | runuser -u postgres -- psql -d {DATABASE} -v ON_ERROR_STOP=1 -qAt -F '|' -f -"
    )
    return [line.split("|") for line in out.splitlines() if line]


def connect_api(worker: str, path: str, method: str = "GET") -> Any:
    """One call to Connect's REST API (HTTPS, the playbooks' REST user): its decoded answer, None when empty."""
    user, password = connect_rest_login(worker)
    listener = parse_properties(node(worker).file("/etc/kafka-connect/worker.properties").content_string)["listeners"]
    context = ssl.create_default_context(cadata=node(worker).file("/etc/kafka-connect/tls/ca.pem").content_string)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    request = urllib.request.Request(
        f"{listener.strip()}{path}", method=method, headers={"Authorization": f"Basic {auth}"}
    )
    with urllib.request.urlopen(request, timeout=15, context=context) as response:
        text = response.read().decode()
    return json.loads(text) if text else None


def connector_config(worker: str) -> dict[str, str]:
    """The connector's config as Connect's REST API returns it."""
    return connect_api(worker, f"/connectors/{CONNECTOR}/config")  # type: ignore[no-any-return]


def workload(run: str) -> tuple[str, dict[int, list[tuple[str, int | None]]]]:
    """The SQL of the workload (one statement, so one transaction, per change) and each key's expected changes in
    commit order: (op, seq of the row after it, None for a delete). seq numbers every change."""
    statements: list[str] = []
    expected: dict[int, list[tuple[str, int | None]]] = {}
    seq = 0

    def change(op: str, key: int, sql: str) -> None:
        nonlocal seq
        seq += 1
        statements.append(sql.format(seq=seq, key=key, run=run))
        expected.setdefault(key, []).append((op, None if op == "d" else seq))

    for key in range(1, ROWS + 1):
        change("c", key, "INSERT INTO customers VALUES ({key}, 'name-{key}', {seq}, '{run}');")
    for key in range(1, ROWS + 1, 1):
        if key % 6 != 0:
            change("u", key, "UPDATE customers SET name = 'renamed-{key}', seq = {seq} WHERE id = {key};")
    for key in range(3, ROWS + 1, 5):
        change("d", key, "DELETE FROM customers WHERE id = {key};")
    for key in range(3, ROWS + 1, 10):
        change("c", key, "INSERT INTO customers VALUES ({key}, 'again-{key}', {seq}, '{run}');")
    for key in range(7, ROWS + 1, 13):
        if key % 5 != 3:
            change("u", key, "UPDATE customers SET seq = {seq} WHERE id = {key};")
    return "\n".join(statements), expected


def archived(spark_node: SparkNode, run: str) -> list[dict[str, Any]]:
    """This run's change events in the archive, by partition and offset: key, op, seq, commit and processing times."""
    report = spark_node.audit("--topic", TOPIC, "--records")
    events = []
    for partition, offset, key, value, processed_ms in report.get("records") or []:
        event = json.loads(value)
        row = event.get("after") or event.get("before") or {}
        if row.get("run") != run:
            continue
        events.append(
            {
                "position": (partition, offset),
                "key": json.loads(key)["id"],
                "op": event["op"],
                "seq": (event.get("after") or {}).get("seq"),
                "lsn": event["source"]["lsn"],
                "committed_ms": event["source"]["ts_ms"],
                "event_ms": event["ts_ms"],
                "archived_ms": processed_ms,
            }
        )
    return sorted(events, key=lambda e: e["position"])


def percentiles(values: list[int]) -> str:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {cuts[49]:.0f} ms, p99 {cuts[98]:.0f} ms"


def test_changes_are_archived_once_each_in_commit_order_per_key(spark_node: SparkNode, cdc: dict[str, Any]) -> None:
    server = cdc["server"]
    config = connector_config(cdc["worker"])
    assert config["database.password"].startswith("${file:"), "the connector's config holds a password"
    assert config["database.sslmode"] == "verify-full"

    def slot_active() -> list[list[str]]:
        rows = psql(
            server,
            "SELECT s.active, r.usename, l.ssl FROM pg_replication_slots s JOIN pg_stat_replication r "
            f"ON r.pid = s.active_pid JOIN pg_stat_ssl l ON l.pid = r.pid WHERE s.slot_name = '{SLOT}';",
        )
        return rows if rows and rows[0][0] == "t" else []

    (slot,) = wait_for(f"Debezium's slot {SLOT} active", slot_active, timeout=120)
    assert slot == ["t", "debezium", "t"], f"the slot's reader: {slot} (active, user, ssl)"

    run = uuid.uuid4().hex[:12]
    sql, expected = workload(run)
    changes = sum(len(v) for v in expected.values())
    psql(
        server,
        TABLE + "TRUNCATE customers;\n" + sql,
    )

    def all_archived() -> list[dict[str, Any]] | None:
        found = archived(spark_node, run)
        return found if len(found) >= changes else None

    events = wait_for(f"the {changes} changes of run {run} in the archive", all_archived, timeout=300, interval=10)
    assert len(events) == changes, f"{len(events)} events archived for {changes} changes (duplicates)"
    assert len({e["position"] for e in events}) == changes
    per_key: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        per_key.setdefault(event["key"], []).append(event)
    wrong = {
        key: [(e["op"], e["seq"]) for e in per_key.get(key, [])]
        for key, changes_of_key in expected.items()
        if [(e["op"], e["seq"]) for e in per_key.get(key, [])] != changes_of_key
    }
    assert not wrong, f"{len(wrong)} keys' archived changes differ from their commits, e.g. {list(wrong.items())[:3]}"
    for key, of_key in per_key.items():
        lsns = [e["lsn"] for e in of_key]
        assert lsns == sorted(lsns), f"key {key}: archived out of commit order"

    table = {int(r[0]): int(r[1]) for r in psql(server, "SELECT id, seq FROM customers;")}
    last = {key: of_key[-1]["seq"] for key, of_key in per_key.items() if of_key[-1]["op"] != "d"}
    assert table == last, "the table differs from the last archived event of its keys"

    print(
        f"\nCDC: {changes} changes to {ROWS} rows, each archived once in commit order per key; "
        f"commit to Debezium's event {percentiles([e['event_ms'] - e['committed_ms'] for e in events])}; "
        f"commit to archive {percentiles([e['archived_ms'] - e['committed_ms'] for e in events])}"
    )


def slot_state(server: Any) -> str:
    """'t' while a consumer streams from the slot, 'f' when none does."""
    rows = psql(server, f"SELECT active FROM pg_replication_slots WHERE slot_name = '{SLOT}';")
    return rows[0][0] if rows else ""


def test_the_slot_is_watched_and_a_stopped_connector_loses_nothing(spark_node: SparkNode, cdc: dict[str, Any]) -> None:
    """Prometheus scrapes the server's exporter (roles/postgresql): the slot is active; Debezium's connector stopped,
    the slot has no consumer and PostgresqlReplicationSlotInactive fires while rows change; resumed, the alert
    resolves and every change made meanwhile is archived once."""
    monitoring = hosts_in("monitoring")
    if not monitoring:
        pytest.skip("the inventory has no monitoring host")
    prometheus = Prometheus(monitoring[0])
    server, worker, name = cdc["server"], cdc["worker"], hosts_in("postgresql")[0]
    labels = {"job": "postgresql", "node": name, "slot_name": SLOT}
    series = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    wait_until(lambda: prometheus.query(f"pg_slot_active{{{series}}} == 1"), 120, f"{SLOT} scraped as active")
    assert prometheus.query(f'pg_up{{job="postgresql", node="{name}"}} == 1'), "the exporter does not reach PostgreSQL"
    assert prometheus.state("PostgresqlReplicationSlotInactive", **labels) == "inactive"
    # The alert's `for`, and a few scrapes and evaluations for Prometheus to see the change.
    alert_s = prometheus.interval("prometheus_alert_slot_for", "5m") + 4 * (
        prometheus.interval("prometheus_scrape_interval", "15s")
        + prometheus.interval("prometheus_evaluation_interval", "15s")
    )
    run = uuid.uuid4().hex[:12]
    keys = range(ROWS + 1, ROWS + 51)
    psql(server, TABLE + f"DELETE FROM customers WHERE id > {ROWS};")
    connect_api(worker, f"/connectors/{CONNECTOR}/stop", method="PUT")
    try:
        wait_for(f"{SLOT} without its consumer", lambda: slot_state(server) == "f", timeout=120)
        # Changes while nobody reads the slot: 50 inserts and 50 updates, one transaction each.
        psql(
            server,
            TABLE
            + "\n".join(f"INSERT INTO customers VALUES ({k}, 'stopped-{k}', {k}, '{run}');" for k in keys)
            + "\n"
            + "\n".join(f"UPDATE customers SET seq = {k + 1000} WHERE id = {k};" for k in keys),
        )
        started = time.monotonic()
        wait_until(
            lambda: prometheus.state("PostgresqlReplicationSlotInactive", **labels) == "firing",
            alert_s,
            "PostgresqlReplicationSlotInactive firing",
            every_s=2,
        )
        fired_s = time.monotonic() - started
        (retained,) = prometheus.query(f"pg_slot_retained_bytes{{{series}}}")
    finally:
        connect_api(worker, f"/connectors/{CONNECTOR}/resume", method="PUT")
    wait_for(f"{SLOT} read again", lambda: slot_state(server) == "t", timeout=180)
    wait_until(
        lambda: prometheus.state("PostgresqlReplicationSlotInactive", **labels) == "inactive",
        alert_s,
        "PostgresqlReplicationSlotInactive resolved",
        every_s=2,
    )

    def all_archived() -> list[dict[str, Any]] | None:
        found = archived(spark_node, run)
        return found if len(found) >= 2 * len(keys) else None

    events = wait_for(f"the {2 * len(keys)} changes made while stopped", all_archived, timeout=300, interval=10)
    assert len(events) == 2 * len(keys), f"{len(events)} events archived for {2 * len(keys)} changes (duplicates)"
    assert sorted((e["key"], e["op"], e["seq"]) for e in events) == sorted(
        [(k, "c", k) for k in keys] + [(k, "u", k + 1000) for k in keys]
    )
    print(
        f"\nslot watch: PostgresqlReplicationSlotInactive fired {fired_s:.0f} s after the changes while stopped "
        f"(its for: {prometheus.settings.get('prometheus_alert_slot_for', '5m')}); the slot held back "
        f"{int(float(retained['value'][1]))} bytes of WAL; {len(events)} changes archived once after the resume"
    )
