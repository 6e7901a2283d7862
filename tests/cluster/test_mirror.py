"""MirrorMaker 2 to a second site, live: a DR site (one combined KRaft node with its own CA, users and firewall, and a
Connect worker running MirrorMaker 2 from this cluster as connectors, kafka_connect_mirrors; molecule default's
molecule/default/inventory-dr, or the lab's inventories/lab-dr, which KAFKALAB_DR_INVENTORY names) converged by
playbooks/site.yml, then, while a producer writes to mirrored.orders on the primary with acks=all:

- every acknowledged record is copied to primary.mirrored.orders on the DR site (0 lost; duplicates counted), with
  the topic's own settings; the time from ack to the copy being readable on the DR site is measured (p50, p99);
- a consumer group that read part of the topic on the primary, stopped, is failed over (playbooks/mirror_failover.yml):
  it resumes on the copies with nothing skipped, and reads again at most what the playbook says;
- the group, stopped again on the DR site, is failed back (playbooks/mirror_failback.yml): it resumes on the primary
  with nothing skipped of what it had not read.

Runs where the inventory has the DR machine (molecule default) or KAFKALAB_DR_INVENTORY names a DR site (`make verify`
on the lab); elsewhere it is skipped and says why.
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from acked_producer import AckedProducer
from conftest import Cluster
from inventory_hosts import ROOT, ca_dir, inventory_listing, playbook_env
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError
from prometheus_api import wait_until

from kafkalab import kafka_client
from kafkalab.ansible_driver import group_hosts, list_inventory

# The DR site's inventory: the one KAFKALAB_DR_INVENTORY names (the lab's), else molecule default's, whose DR machine
# is a platform of the scenario.
NAMED_DR = os.environ.get("KAFKALAB_DR_INVENTORY", "")
DR_INVENTORY = ROOT / NAMED_DR if NAMED_DR else ROOT / "molecule" / "default" / "inventory-dr"
# Names of this run's own (the mirror covers mirrored.* and mirrored-*): a second run on the same sites starts clean.
RUN = uuid.uuid4().hex[:6]
TOPIC = f"mirrored.orders-{RUN}"
COPY = f"primary.{TOPIC}"
GROUP = f"mirrored-app-{RUN}"
RETENTION = "604800123"  # an unusual value, to see the copy take the topic's own settings

pytestmark = pytest.mark.skipif(
    not NAMED_DR and "dr1" not in inventory_listing().get("_meta", {}).get("hostvars", {}),
    reason="no DR site: KAFKALAB_DR_INVENTORY names none (make verify names the lab's) and the inventory has no DR "
    "machine (molecule default has one, dr1)",
)


@cache
def dr_listing() -> dict[str, Any]:
    return list_inventory(str(DR_INVENTORY))


def dr_host() -> str:
    """The DR site's Kafka node (one)."""
    (host,) = sorted(group_hosts(dr_listing(), "kafka_broker"))
    return host


def dr_bootstrap() -> str:
    """Its bootstrap listener: the advertised address (else the host's) and the first listener's port."""
    variables = dr_listing()["_meta"]["hostvars"][dr_host()]
    address = variables.get("kafka_advertised_host") or variables["ansible_host"]
    return f"{address}:{variables['kafka_listeners'][0]['port']}"


def dr_env() -> dict[str, str]:
    """Under molecule, where the DR site keeps its CA (beside the primary's, in the scenario's inventory) and the
    primary's CA; a named DR inventory (the lab's) keeps its own .pki and names the primary's CA itself."""
    if NAMED_DR:
        return {}
    return {
        "KAFKALAB_DR_PKI": os.path.join(os.path.dirname(ca_dir()), ".pki-dr"),
        "KAFKALAB_PRIMARY_CA": os.path.join(ca_dir(), "trust.pem"),
    }


def dr_pki() -> str:
    return dr_env().get("KAFKALAB_DR_PKI") or str(DR_INVENTORY / ".pki")


def dr_playbook(playbook: str, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(DR_INVENTORY), f"playbooks/{playbook}"]
    return subprocess.run(
        [*command, *args],
        cwd=ROOT,
        env=playbook_env(**dr_env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def dr_settings() -> dict[str, Any]:
    return kafka_client.settings(os.path.join(dr_pki(), "client.properties"))


@pytest.fixture(scope="module")
def dr_site() -> Iterator[dict[str, Any]]:
    started = time.monotonic()
    result = dr_playbook("site.yml")
    assert result.returncode == 0, result.stdout[-6000:]
    print(f"\nDR site converged in {time.monotonic() - started:.0f} s")
    yield dr_settings()
    # Under molecule the DR site is the scenario's throwaway machine, and nothing after this module uses it: its two
    # JVMs (and MirrorMaker's polling of the primary) stop, and leave the two cores to the rest of the suite. A second
    # verify converges it again (site.yml starts them). A lab's DR site keeps running.
    if os.environ.get("MOLECULE_INVENTORY_FILE"):
        ansible = str(Path(sys.executable).parent / "ansible")
        stop = "systemctl stop kafka-connect kafka"
        subprocess.run(
            [ansible, "-i", str(DR_INVENTORY), dr_host(), "-b", "-m", "ansible.builtin.command", "-a", stop],
            cwd=ROOT,
            env=playbook_env(**dr_env()),
            stdout=subprocess.DEVNULL,
            check=False,
            timeout=300,
        )


def ensure_topic(cluster: Cluster) -> None:
    admin = KafkaAdminClient(**kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="verify-mirror")
    try:
        with contextlib.suppress(TopicAlreadyExistsError):
            configs = {"min.insync.replicas": "2", "retention.ms": RETENTION}
            admin.create_topics([NewTopic(TOPIC, 3, 3, topic_configs=configs)], validate_only=False)
    finally:
        admin.close()


def consumer(bootstrap: str, settings: dict[str, Any], group: str | None, **extra: Any) -> KafkaConsumer:
    return KafkaConsumer(
        **settings,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        client_id="verify-mirror",
        **extra,
    )


def read_as_group(bootstrap: str, settings: dict[str, Any], topic: str, limit: int | None) -> list[tuple[int, int]]:
    """The group's records from its committed offsets, as (partition, number): `limit` of them (then it commits and
    stops), or all there are."""
    c = consumer(bootstrap, settings, GROUP)
    c.subscribe([topic])
    seen: list[tuple[int, int]] = []
    idle_until = time.monotonic() + 15
    try:
        while (limit is None or len(seen) < limit) and time.monotonic() < idle_until:
            polled = c.poll(timeout_ms=1000, max_records=100 if limit is None else min(100, limit - len(seen)))
            for batch in polled.values():
                seen += [(r.partition, int(r.value)) for r in batch]
                idle_until = time.monotonic() + 15
        c.commit()
    finally:
        c.close()
    return seen


class CopyWatch(threading.Thread):
    """Reads the copy on the DR site as records arrive, noting when each number was first seen."""

    def __init__(self, settings: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.settings = settings
        self.seen: Counter[int] = Counter()
        self.first_seen: dict[int, float] = {}
        # Each partition's numbers in order (a copied partition keeps the source partition's order).
        self.order: dict[int, list[int]] = {}
        self.stop = threading.Event()
        # When it began reading the copy: only records acknowledged after it count for the latency.
        self.reading_since = float("inf")

    def run(self) -> None:
        c = consumer(dr_bootstrap(), self.settings, None)
        try:
            wait_until(lambda: c.partitions_for_topic(COPY), 180, f"{COPY} on the DR site", every_s=2)
            partitions = [TopicPartition(COPY, p) for p in sorted(c.partitions_for_topic(COPY))]
            c.assign(partitions)
            c.seek_to_beginning(*partitions)
            c.poll(timeout_ms=0)
            self.reading_since = time.monotonic()
            while not self.stop.is_set():
                for batch in c.poll(timeout_ms=500).values():
                    now = time.monotonic()
                    for record in batch:
                        n = int(record.value)
                        self.seen[n] += 1
                        if n not in self.first_seen:
                            self.first_seen[n] = now
                            self.order.setdefault(record.partition, []).append(n)
        finally:
            c.close()


Read = list[tuple[int, int]]


def resumed(order: dict[int, list[int]], before: Read, after: Read) -> tuple[int, int]:
    """(skipped, read again) where a group resumed: per partition, the records between the last one it read before
    the move and the first one after it that it never read, or that it read twice."""
    skipped = reread = 0
    for partition, numbers in order.items():
        index = {n: i for i, n in enumerate(numbers)}
        last = max((index[n] for p, n in before if p == partition), default=-1)
        first = next((index[n] for p, n in after if p == partition), None)
        if first is not None:
            skipped += max(0, first - (last + 1))
            reread += max(0, last + 1 - first)
    return skipped, reread


@pytest.mark.changes_cluster
def test_mirror_copies_every_acked_record_and_a_group_fails_over_and_back(
    dr_site: dict[str, Any], cluster: Cluster
) -> None:
    ensure_topic(cluster)
    watch = CopyWatch(dr_site)
    producer = AckedProducer(cluster.bootstrap, TOPIC)
    producer.start()
    wait_until(lambda: len(producer.acked) > 300, 60, "the producer's first acks")
    watch.start()
    # The group reads a part on the primary, commits, and stops (its consumers are "moved").
    on_primary = read_as_group(cluster.bootstrap, kafka_client.settings(), TOPIC, limit=200)
    time.sleep(5)
    producer.stop.set()
    producer.join(120)
    acked = set(producer.acked)
    try:
        wait_until(lambda: acked <= set(watch.seen), 180, "every acknowledged record on the DR site")
    finally:
        watch.stop.set()
        watch.join(30)
    lost = sorted(acked - set(watch.seen))
    duplicated = sum(n - 1 for n in watch.seen.values() if n > 1)
    ack_time = dict(zip(producer.acked, producer.times, strict=True))
    latencies = sorted(
        watch.first_seen[n] - ack_time[n] for n in acked if n in watch.first_seen and ack_time[n] > watch.reading_since
    )
    p50 = statistics.median(latencies)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(
        f"\nmirror: {len(acked)} acked on the primary, {len(acked & set(watch.seen))} on the DR site, {len(lost)} lost,"
        f" {duplicated} duplicated; ack to readable on the DR site p50 {p50:.3f} s, p99 {p99:.3f} s (of "
        f"{len(latencies)} acked while the copy was read); longest gap "
        f"between acks {producer.longest_gap():.3f} s"
    )
    assert lost == [], lost[:20]
    admin = KafkaAdminClient(**dr_site, bootstrap_servers=dr_bootstrap(), client_id="verify-mirror")
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, COPY)])
        assert described["topic"][COPY]["retention.ms"]["value"] == RETENTION
    finally:
        admin.close()

    # Failover: the group resumes on the copies where the primary's checkpoints put it.
    started = time.monotonic()
    result = dr_playbook("mirror_failover.yml", "-e", f"mirror_group={GROUP}", "-e", "mirror_source=primary")
    failover_s = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-5000:]
    said = re.search(r"it reads at most (\d+) records again", result.stdout)
    assert said, result.stdout[-3000:]
    on_dr = read_as_group(dr_bootstrap(), dr_site, COPY, limit=len(acked) // 2)
    skipped, reread = resumed(watch.order, on_primary, on_dr)
    print(
        f"failover: {failover_s:.1f} s (playbook), the group read {len(on_primary)} on the primary, then "
        f"{len(on_dr)} on the DR site: {skipped} skipped, {reread} read again (the playbook said at most "
        f"{said.group(1)})"
    )
    assert on_dr and skipped == 0 and reread <= int(said.group(1))
    bound, reread_before = int(said.group(1)), reread

    # Failback: the group resumes on the primary where the offset syncs put it back.
    result = dr_playbook("mirror_failback.yml", "-e", f"mirror_group={GROUP}", "-e", "mirror_source=primary")
    assert result.returncode == 0, result.stdout[-5000:]
    said = re.search(r"it reads at most (\d+) records again", result.stdout)
    assert said, result.stdout[-3000:]
    back = read_as_group(cluster.bootstrap, kafka_client.settings(), TOPIC, limit=None)
    skipped, reread = resumed(watch.order, on_primary + on_dr, back)
    everything = {n for _, n in on_primary + on_dr + back}
    print(
        f"failback: the group read {len(back)} more on the primary: {skipped} skipped, {reread} read again (the "
        f"playbook said at most {said.group(1)}); {len(acked - everything)} acknowledged records never read"
    )
    # A group that read nothing on a partition between the moves is taken back to where the failover put it: what it
    # had read on the primary before the failover, beyond the failover's bound, it reads again. Both moves' bounds
    # together hold what it reads again.
    assert skipped == 0 and reread_before + reread <= bound + int(said.group(1))
    assert acked <= everything, sorted(acked - everything)[:20]
