"""Client quotas as code (roles/kafka: kafka_quotas, applied by playbooks/topics.yml through kafka_access).

On the wire: a producer logged in as a user with a producer_byte_rate quota is acknowledged at that rate (within
20 %), while a user without a quota, writing at the same time to the same partition, is not slowed to it. In the
cluster: the declared quotas are what the brokers describe. In check mode a changed quota is shown, with its
before and after, and the cluster keeps the old one. Runs where the inventory declares a producer_byte_rate for a
user (the default scenario: user throttled, 20480 bytes/s).

Kafka enforces producer_byte_rate per broker, so the measured topic has one partition: one leader takes all of a
producer's writes and its rate is the whole quota, never a multiple of it.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from bisect import bisect_left
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import Cluster, kafka_nodes
from inventory_hosts import ca_dir, group, run_playbook, runner
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

from kafkalab import kafka_client

# The scenario's users may write topics with this prefix (molecule/default: kafka_acls).
TOPIC_PREFIX = "quota-"
RECORD_BYTES = 1024
# Kafka holds a user to its quota over a sliding window (quota.window.num 11 x quota.window.size.seconds 1): a
# producer that writes as fast as it may is let through in a burst of about ten seconds' worth of its quota, then
# held back until that burst leaves the window, then bursts again (measured on Kafka 4.3.1: ~170 KB at 20 KB/s every
# ~11.5 s, ~3 KB/s between). Its rate is therefore measured over whole cycles, from the start of its first burst to
# the start of its last one, which a 40 s run holds at least two of; a count over any other span would be off by up
# to one burst (half the quota over 20 s).
RUN_SECONDS = 40.0
# A burst: a second with more than twice the quota's records acknowledged; bursts closer than this are one burst.
BURST_GAP_SECONDS = 5.0
# Without two bursts (a producer Kafka never held back, or a smooth throttle) the rate is counted after this much.
WARMUP_SECONDS = 12.0
# Records a producer may have sent and not yet had acknowledged: four batches in flight, and less than a second of the
# quota, so the burst before the first throttle (which the warm-up leaves out) costs the measured seconds little.
IN_FLIGHT_RECORDS = 16
# The unthrottled user is not slowed to the quota: it gets well above it on the same partition at the same time.
UNTHROTTLED_FACTOR = 3


def _inventory() -> dict[str, Any]:
    nodes = kafka_nodes()
    return runner().get_variables(nodes[0]) if nodes else {}


def _throttled() -> tuple[str, int] | None:
    """The first user (not '<default>', no client id) whose declared quota sets producer_byte_rate."""
    for quota in _inventory().get("kafka_quotas") or []:
        user = quota.get("user")
        own = user and user != "<default>" and not quota.get("client_id")
        if own and quota.get("state", "present") == "present" and quota.get("producer_byte_rate"):
            return str(user), int(quota["producer_byte_rate"])
    return None


def _unthrottled(throttled: str) -> str | None:
    """A present user of kafka_users with no user quota of its own, other than the admin, the brokers' user and the
    throttled one, and with a write ACL on the quota topics' prefix."""
    variables = _inventory()
    quoted = {q.get("user") for q in variables.get("kafka_quotas") or []}
    skip = {throttled, variables.get("kafka_admin_user", "admin"), variables.get("kafka_broker_user", "broker")}
    writers = {
        str(a["principal"]).partition(":")[2]
        for a in variables.get("kafka_acls") or []
        if a.get("resource_type") == "topic" and a.get("operation") in ("write", "all")
        and a.get("pattern_type") == "prefixed" and TOPIC_PREFIX.startswith(str(a.get("name")))
    }  # fmt: skip
    for user in variables.get("kafka_users") or []:
        name = str(user["name"])
        if user.get("state", "present") == "present" and name in writers and name not in quoted | skip:
            return name
    return None


THROTTLED = _throttled()
pytestmark = pytest.mark.skipif(
    THROTTLED is None, reason="the inventory declares no producer_byte_rate quota for a user (kafka_quotas)"
)


def _as(user: str) -> dict[str, Any]:
    """kafka-python settings of the bootstrap listener, logged in as `user`."""
    password = next(str(u["password"]) for u in _inventory()["kafka_users"] if u["name"] == user)
    return {
        **kafka_client.settings(os.path.join(ca_dir(), "client.properties")),
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


def held_quotas(admin: KafkaAdminClient) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """Every quota entity the brokers describe, read with Kafka's DescribeClientQuotas (as the module reads them,
    but written here on its own so the test does not trust the module's reading)."""
    request = DescribeClientQuotasRequest(components=[], strict=False)
    response = admin._manager.run(admin._manager.send, request)
    assert response.error_code == 0, response.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {v.key: v.value for v in entry.values}
        for entry in response.entries or []
    }


def whole_cycles_rate(acked: list[float], quota: int, start: float, end: float) -> float:
    """Bytes per second over the whole burst cycles in a run (acked: acknowledgement times, in order)."""
    burst_records = 2 * quota / RECORD_BYTES
    bursts: list[float] = []
    for index, at in enumerate(acked):
        if (not bursts or at - bursts[-1] > BURST_GAP_SECONDS) and bisect_left(acked, at + 1.0) - index > burst_records:
            bursts.append(at)
    first, last = (bursts[0], bursts[-1]) if len(bursts) >= 2 else (start + WARMUP_SECONDS, end)
    counted = bisect_left(acked, last) - bisect_left(acked, first)
    return counted * RECORD_BYTES / (last - first)


def acked_rate(settings: dict[str, Any], bootstrap: str, topic: str, client_id: str, quota: int) -> float:
    """Bytes per second the brokers acknowledged (acks=all) to one producer writing 1 KB records as fast as it may
    for RUN_SECONDS, from its own acknowledgements (whole_cycles_rate)."""
    producer = KafkaProducer(
        **settings,
        bootstrap_servers=bootstrap,
        client_id=client_id,
        acks="all",
        enable_idempotence=False,
        linger_ms=5,
        # Small batches: acknowledgements come often, so the count is fine-grained.
        batch_size=4 * RECORD_BYTES,
    )
    acked: list[float] = []
    # kafka-python 3.0 has no buffer_memory: without a bound of its own a throttled producer would queue minutes of
    # records it could never deliver in the run. As fast as it may = as soon as one of these is acknowledged.
    room = threading.BoundedSemaphore(IN_FLIGHT_RECORDS)

    def count(_metadata: Any) -> None:
        acked.append(time.monotonic())  # on the producer's one I/O thread: in order
        room.release()

    def failed(_error: Any) -> None:
        room.release()

    value = os.urandom(RECORD_BYTES)
    start = time.monotonic()
    end = start + RUN_SECONDS
    try:
        while time.monotonic() < end:
            if room.acquire(timeout=0.1):
                producer.send(topic, value).add_callback(count).add_errback(failed)
    finally:
        # The few records still in flight are delivered (acknowledgements after the run are not counted): a close
        # that gave up on them would leave the producer to fail its flush again when it is collected.
        producer.close(timeout=30)
    return whole_cycles_rate([at for at in acked if at <= end], quota, start, end)


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-verify-quotas"
    )
    yield client
    client.close()


def test_the_declared_quotas_are_what_the_brokers_describe(admin: KafkaAdminClient) -> None:
    held = held_quotas(admin)
    for quota in _inventory().get("kafka_quotas") or []:
        entity = tuple(
            sorted(
                (kind, None if quota[field] == "<default>" else str(quota[field]))
                for field, kind in (("user", "user"), ("client_id", "client-id"))
                if quota.get(field)
            )
        )
        keys = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
        wanted = {k: float(quota[k]) for k in keys if k in quota}
        if quota.get("state", "present") == "absent":
            wanted = {}
        assert held.get(entity, {}) == wanted, entity


@pytest.mark.changes_cluster
def test_a_throttled_producer_is_held_to_its_quota_while_an_unthrottled_one_is_not(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    """Marked changes_cluster: it creates (and deletes) a topic and writes to it."""
    assert THROTTLED is not None
    user, quota = THROTTLED
    other = _unthrottled(user)
    if other is None:
        pytest.skip(f"no user without a quota may write topics {TOPIC_PREFIX}* (kafka_acls) to compare {user} with")
    topic = f"{TOPIC_PREFIX}verify-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, min(3, len(group("kafka_broker"))))])
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            throttled = pool.submit(acked_rate, _as(user), cluster.bootstrap, topic, "verify-quota-throttled", quota)
            free = pool.submit(acked_rate, _as(other), cluster.bootstrap, topic, "verify-quota-unthrottled", quota)
            throttled_rate, free_rate = throttled.result(), free.result()
    finally:
        admin.delete_topics([topic])
    # For docs/measurements: what the run measured.
    print(
        f"quota {quota} B/s: {user} acked {throttled_rate:.0f} B/s ({throttled_rate / quota:.0%} of it), "
        f"{other} (no quota) acked {free_rate:.0f} B/s at the same time"
    )
    assert 0.8 * quota <= throttled_rate <= 1.2 * quota, (user, throttled_rate, quota)
    assert free_rate > UNTHROTTLED_FACTOR * quota, (other, free_rate, quota)


@pytest.mark.changes_cluster
def test_check_mode_shows_a_changed_quota_and_the_cluster_keeps_the_old_one(admin: KafkaAdminClient) -> None:
    assert THROTTLED is not None
    user, quota = THROTTLED
    declared = [
        {**q, "producer_byte_rate": 2 * quota} if q.get("user") == user and not q.get("client_id") else q
        for q in _inventory().get("kafka_quotas") or []
    ]
    before = held_quotas(admin)
    result = run_playbook("topics.yml", ["-e", json.dumps({"kafka_quotas": declared}), "--check", "--diff"], 600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"set quota user={user}: producer_byte_rate={2 * quota} (was {quota})" in result.stdout
    assert f"-user={user}: producer_byte_rate={quota}" in result.stdout  # the diff
    assert f"+user={user}: producer_byte_rate={2 * quota}" in result.stdout
    assert held_quotas(admin) == before
    assert before[(("user", user),)]["producer_byte_rate"] == quota
