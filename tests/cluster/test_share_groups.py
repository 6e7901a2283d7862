"""Share groups (KIP-932, queues on Kafka) on the cluster, with Kafka's own share consumer of the release under test
(kafkalab/clients/ShareMember.java, explicit acknowledgement): records go to whichever member asks, each is accepted
once; the records a SIGKILLed member held go to the others; a record every member releases ends archived after the
group's delivery count limit (kafka_share_group_delivery_count_limit), and the group's lag, as kafka-share-groups
shows it, falls to 0."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster
from inventory_hosts import host_variables, node, run_playbook
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from kafkalab import kafka_client
from kafkalab.java_clients import ShareMember

pytestmark = pytest.mark.kraft

ROOT = Path(__file__).resolve().parents[2]
POISON = "poison"
BEFORE = 300  # written before the members start: the first member takes a batch of them and holds it
AFTER = 700  # written once the members run
BURST = 5000  # then written as fast as acks=all allows, for the group's throughput


def settings(cluster: Cluster) -> dict[str, Any]:
    return host_variables(cluster.brokers[0])


def share_groups_run(cluster: Cluster) -> bool:
    version = tuple(int(part) for part in str(settings(cluster)["kafka_version"]).split(".")[:2])
    return version >= (4, 2)


@pytest.fixture
def share_topic(cluster: Cluster) -> Iterator[str]:
    if not share_groups_run(cluster):
        pytest.skip("share groups are generally available from Kafka 4.2")
    topic = f"share-{uuid.uuid4().hex[:8]}"
    rf = min(3, len(cluster.brokers))
    admin = KafkaAdminClient(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap)
    try:
        configs = {"min.insync.replicas": "2"} if rf == 3 else {}
        admin.create_topics([NewTopic(topic, 3, rf, topic_configs=configs)], timeout_ms=60_000)
        yield topic
        admin.delete_topics([topic], timeout_ms=60_000)
    finally:
        admin.close()


def write(producer: KafkaProducer, topic: str, values: list[str]) -> None:
    for value in values:
        producer.send(topic, value.encode())
    producer.flush(timeout=120)


def share_group_lag(cluster: Cluster, group: str) -> dict[str, int]:
    """kafka-share-groups --describe on a broker: LAG per partition (GROUP TOPIC PARTITION START-OFFSET LAG)."""
    name = cluster.brokers[0]
    said = node(name).check_output(
        f"kafka-share-groups --bootstrap-server {cluster.broker_address(name)} --describe --group {group}"
    )
    lag = {}
    for line in said.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == group and fields[2].isdigit():
            lag[f"{fields[1]}-{fields[2]}"] = int(fields[-1]) if re.fullmatch(r"\d+", fields[-1]) else -1
    return lag


def test_a_share_group_accepts_every_record_once_and_hands_a_killed_members_records_on(
    cluster: Cluster, share_topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    limit = int(settings(cluster).get("kafka_share_group_delivery_count_limit", 5))
    version = str(settings(cluster)["kafka_version"])
    scala = str(settings(cluster).get("kafka_scala_version", "2.13"))
    group = f"{share_topic}-group"
    config = os.environ.get(kafka_client.ENV)

    def member(name: str, mode: str = "accept") -> ShareMember:
        started = ShareMember(version, scala, cluster.bootstrap, config, share_topic, group, name, mode)
        started.start()
        return started

    producer = KafkaProducer(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=5)
    members: list[ShareMember] = []
    try:
        write(producer, share_topic, [str(n) for n in range(BEFORE)] + [POISON])
        holder = member("holder", "hold")
        members.append(holder)
        holder.wait_line("HELD", 180)
        held = {at for at, _count, _value, _action in holder.deliveries()}
        members += [member("member-1"), member("member-2")]
        for started in members[1:]:
            started.wait_line("SUBSCRIBED", 120)
        write(producer, share_topic, [str(n) for n in range(BEFORE, BEFORE + AFTER)])
        holder.kill()
        killed = time.monotonic()

        def accepted() -> Counter[str]:
            return Counter(v for m in members[1:] for _at, _c, v, action in m.deliveries() if action == "ACCEPT")

        redelivered_after = None
        deadline = killed + 240
        while len(accepted()) < BEFORE + AFTER:
            assert time.monotonic() < deadline, (
                f"{BEFORE + AFTER - len(accepted())} records never accepted; "
                + " | ".join(m.tail(3) for m in members[1:])
            )
            seen = {at for m in members[1:] for at, _c, _v, _a in m.deliveries()}
            if redelivered_after is None and held <= seen:
                redelivered_after = time.monotonic() - killed
            time.sleep(0.5)
        if redelivered_after is None:
            redelivered_after = time.monotonic() - killed

        # Throughput: a burst written with acks=all, accepted by the two members.
        burst_from = time.monotonic()
        write(producer, share_topic, [f"b{n}" for n in range(BURST)])
        while len(accepted()) < BEFORE + AFTER + BURST:
            assert time.monotonic() < burst_from + 240, f"the burst was not accepted: {len(accepted())}"
            time.sleep(0.2)
        burst_s = time.monotonic() - burst_from

        # The poison record: delivered `limit` times in all (the holder's included), released each time, then
        # archived: no member gets it again, and the group's lag goes to 0 (it would stay 1 on its partition).
        lag: dict[str, int] = {}
        deadline = time.monotonic() + 120
        while True:
            lag = share_group_lag(cluster, group)
            if lag and all(n == 0 for n in lag.values()):
                break
            assert time.monotonic() < deadline, f"the share group's lag did not fall to 0: {lag}"
            time.sleep(2)
        poison = sorted(c for m in members for _at, c, v, _a in m.deliveries() if v == POISON)
        # The cluster report shows the group and its lag (playbooks/report.yml, the same tool on a broker).
        run_playbook("report.yml", [], timeout=300)
        report = (ROOT / ".cache" / "report" / "report.txt").read_text()
        rows = [r for r in (line.split() for line in report.splitlines()) if r[:2] == [group, share_topic]]
        assert f"{group} " not in report.split("# BEGIN share groups")[0], "a share group listed as a consumer group"
        assert sorted(r[2] for r in rows) == ["0", "1", "2"] and {r[-1] for r in rows} == {"0"}, report[-3000:]
        for started in members[1:]:
            started.stop()
    finally:
        producer.close()
        for started in members:
            started.kill()

    counts = accepted()
    twice = {v: n for v, n in counts.items() if n > 1}
    again = sorted(c for m in members[1:] for at, c, _v, _a in m.deliveries() if at in held)
    figures = {
        "members": len(members),
        "records": BEFORE + AFTER + BURST,
        "held_by_the_killed_member": len(held),
        "redelivered_after_kill_s": round(redelivered_after, 1),
        "burst_records_per_s": round(BURST / burst_s),
        "poison_delivery_counts": poison,
        "delivery_count_limit": limit,
        "lag": lag,
    }
    (ROOT / ".cache" / "lifecycle").mkdir(parents=True, exist_ok=True)
    (ROOT / ".cache" / "lifecycle" / "share-groups.json").write_text(json.dumps(figures, indent=1))
    with capsys.disabled():
        print(f"\nshare group: {figures}")
    assert twice == {}, f"records accepted more than once: {dict(list(twice.items())[:10])}"
    assert set(counts) == {str(n) for n in range(BEFORE + AFTER)} | {f"b{n}" for n in range(BURST)}
    assert held and again and min(again) >= 2, f"the killed member's {len(held)} records were not redelivered"
    # A member's client acquires records ahead of what it hands over (its fetch buffer): the killed holder can have
    # taken the poison record without printing it, and that delivery counts too (molecule default, 2026-12-08: seen
    # at 2 and 3 only). What must hold: the deliveries the members saw run without a gap up to the limit, and none
    # goes beyond it (then the record is archived, and the lag above is 0).
    assert poison and poison == list(range(poison[0], limit + 1)), (
        f"the poison record's deliveries the members saw: {poison}, limit {limit}"
    )
