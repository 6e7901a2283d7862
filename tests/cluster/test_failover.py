"""Failover, modelled on Kafka's own system tests (replication with broker failure, end-to-end validation).

For each case a producer (acks=all, idempotent) writes a numbered stream to an RF 3,
min.insync.replicas 2 topic while one broker is disrupted: its partition leader is killed with
SIGKILL or stopped cleanly, the active controller is killed, a broker is paused with SIGSTOP, or a
broker is cut off from its peers by firewall rules. When the node is a broker, replication must be seen
disturbed (an ISR shrink, or a leader epoch rise when the shrink is too short to sample) and then
every ISR back to the full replica set; when it is a dedicated controller (no replicas), the quorum's
epoch must rise and no ISR shrink. Acknowledgements must keep coming while a cleanly stopped node is
down, and while a paused or isolated one is out past the timeout that drops it; after a SIGKILL they
must flow again once the cluster is whole (see Disruption); every send must be acknowledged.
Afterwards a consumer reads everything back: every acknowledged message exactly once, in order
within each partition. Each case's numbers, the longest gap between acks among them, go to
.cache/test-artifacts/failover-<scenario>.jsonl.
Each case starts on a fully healthy cluster.

Also: an RF 1 partition goes offline with its broker and comes back with its data, and consumer
groups split partitions and keep independent offsets, as the cluster report shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster
from inventory_hosts import kafka_unit, machine_mates, node
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kafka.errors import CommitFailedError, RebalanceInProgressError, for_code
from kafka.protocol.admin import DescribeTopicPartitionsRequest
from kafka.protocol.metadata import MetadataRequest

from kafkalab import e2e, kafka_client, report
from kafkalab.load.accounting import longest_gap

RECOVERY_TIMEOUT_S = 180
# Each case's numbers (acked, consumed, lost, duplicated, the longest gap between acks), one JSON object a line,
# for the stop notes and docs/measurements.md: pytest shows a passing test's print only with -s.
RESULTS = Path(__file__).resolve().parents[2] / ".cache" / "test-artifacts"


def record_failover(**numbers: Any) -> None:
    """Append a case's numbers to the scenario's JSON lines, and show them (with -s) as one line."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    scenario = os.environ.get("MOLECULE_SCENARIO_NAME", "lab")
    with (RESULTS / f"failover-{scenario}.jsonl").open("a") as out:
        out.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S"), **numbers}) + "\n")
    print("\n" + " ".join(f"{key}={value}" for key, value in numbers.items() if value is not None))


# Disruptive and slow (minutes): `make verify` leaves them out, `make failover` and molecule run them.
pytestmark = pytest.mark.failover


class IsrWatcher:
    """Polls partition state in a thread: the smallest ISR seen, whether any leader epoch went up, and
    when replication was first seen disturbed and then whole again.

    A sampler can miss a short shrink (ZooKeeper mode: an ISR back to 3 within 1 s of the shrink, seen
    in CI), so a leader epoch above the first sample's also counts as disturbed: it records, in the
    partition state itself, that a leader lost its place or the controller took a replica out of the ISR.
    """

    def __init__(self, bootstrap: str, topic: str, replicas: int) -> None:
        # A short request timeout: a call that lands on a paused broker must not blind the watcher for
        # longer than the few seconds the ISR stays shrunk (seen: a 15 s timeout missed a whole shrink).
        self._admin = KafkaAdminClient(
            **kafka_client.settings(),
            bootstrap_servers=bootstrap,
            client_id="kafkalab-isr-watch",
            request_timeout_ms=3000,
        )
        self._topic, self._replicas = topic, replicas
        self._stop = threading.Event()
        self.min_isr = replicas
        self.first_epochs: dict[int, int] | None = None
        self.epochs_moved = False
        self.shrunk_at: float | None = None
        self.full_again_at: float | None = None  # first full ISR after a seen shrink
        self.disturbed_at: float | None = None  # first shrink or leader-epoch rise seen
        self.last_full_at: float | None = None  # latest sample with every ISR full
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> tuple[list[int], dict[int, int]]:
        partitions = self._admin.describe_topics([self._topic])[0]["partitions"]
        sizes = [len(p["isr_nodes"]) for p in partitions]
        return sizes, {p["partition_index"]: int(p["leader_epoch"]) for p in partitions}

    def _observe(self, sizes: list[int], epochs: dict[int, int], now: float) -> None:
        full = min(sizes) == self._replicas
        if self.first_epochs is None:
            self.first_epochs = epochs
        elif any(epochs.get(p, -1) > e for p, e in self.first_epochs.items()):
            self.epochs_moved = True
        self.min_isr = min(self.min_isr, *sizes)
        if not full and self.shrunk_at is None:
            self.shrunk_at = now
        if full and self.shrunk_at is not None and self.full_again_at is None:
            self.full_again_at = now
        if self.disturbed_at is None and (not full or self.epochs_moved):
            self.disturbed_at = now
        if full:
            self.last_full_at = now

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a metadata call may fail while a broker is down; poll again
                sizes, epochs = self._sample()
                self._observe(sizes, epochs, time.monotonic())
            self._stop.wait(0.25)

    def start(self) -> IsrWatcher:
        self._thread.start()
        return self

    def wait_recovered(self, since: float, timeout_s: float, disturbed_elsewhere: bool = False) -> bool:
        """Wait until replication was seen disturbed and every ISR was full again in a sample taken after
        both the disturbance and `since` (when the disrupted node was given back). disturbed_elsewhere: the
        disruption was proven otherwise (a ZooKeeper registration replaced), so a full ISR after `since` will do."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            disturbed, full = self.disturbed_at, self.last_full_at
            if disturbed is None and disturbed_elsewhere:
                disturbed = since
            if disturbed is not None and full is not None and full >= max(disturbed, since):
                return True
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._admin.close()


def zk_registrations(cluster: Cluster, names: Sequence[str] = ()) -> dict[str, str]:
    """ZooKeeper mode: the registration znode (/brokers/ids/<id>) of each broker of `names` (default: all) as
    created, its cZxid, read with zookeeper-shell (a client only) on a broker's host. A broker whose ZooKeeper
    session ended and that registered again has a new one. {} in KRaft mode."""
    if cluster.mode != "zookeeper":
        return {}
    connect = cluster.properties[cluster.brokers[0]]["zookeeper.connect"]
    shell = node(cluster.brokers[-1])
    created: dict[str, str] = {}
    for name in names or cluster.brokers:
        out = shell.run(f"zookeeper-shell {connect} stat /brokers/ids/{cluster.node_id(name)}").stdout
        created[name] = next(
            (line.split("=", 1)[1].strip() for line in out.splitlines() if line.startswith("cZxid")), ""
        )
    return created


def registration_replaced(
    cluster: Cluster, name: str, before: dict[str, str], timeout_s: float, unless: Callable[[], bool]
) -> bool:
    """ZooKeeper mode: wait until `name` has registered again under a new session (its old one lapses only after
    zookeeper.session.timeout.ms), or until `unless()` says the question no longer matters."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not unless():
        now = zk_registrations(cluster, [name]).get(name, "")
        if now and now != before.get(name):
            return True
        time.sleep(1)
    return False


def broker_host(cluster: Cluster, broker_id: int) -> str:
    return next(name for name in cluster.properties if cluster.node_id(name) == broker_id)


def partition_leader(admin: KafkaAdminClient, topic: str, partition: int = 0) -> int:
    partitions = admin.describe_topics([topic])[0]["partitions"]
    return int(next(p["leader_id"] for p in partitions if p["partition_index"] == partition))


def active_controller(admin: KafkaAdminClient) -> int:
    """The KRaft quorum leader, or in ZooKeeper mode the controller broker."""
    controller, _ = report._active_controller(admin, admin.describe_cluster().get("controller_id"))
    return -1 if controller is None else controller


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the cluster may refuse calls mid-recovery
            if predicate():
                return
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def node_state(name: str) -> str:
    """The node's Kafka service as systemd sees it and its latest journal lines (Kafka's warnings and errors go
    there), for a failure message: whether it came back, restarted again, or is stuck starting."""
    host = node(name)
    unit = kafka_unit(name)
    show = host.run(f"systemctl show {unit} --property=ActiveState,SubState,NRestarts,ExecMainStartTimestamp")
    journal = host.run(f"journalctl -u {unit} --no-pager -n 12 -o short-monotonic")
    return f"{name}: {' '.join(show.stdout.split())}; journal: {journal.stdout.strip()[-2500:]}"


def service_running(host: Any, name: str) -> bool:
    return bool(host.run(f"systemctl is-active {kafka_unit(name)}").stdout.strip() == "active")


def accepts_connections(address: str) -> bool:
    """A TCP connect to host:port succeeds: the broker's acceptor is up, not only its registration."""
    hostname, port = address.rsplit(":", 1)
    with socket.create_connection((hostname, int(port)), timeout=3):
        return True


def ask(admin: KafkaAdminClient, request: Any, node_id: int | None = None) -> tuple[int, Any]:
    """Send one request to one broker (node_id, else the one kafka-python would pick) and say which broker it
    was: admin.describe_topics() and the like do not."""
    manager = admin._manager

    async def send() -> tuple[int, Any]:
        node = manager.least_loaded_node() if node_id is None else node_id
        return node, await manager.send(request, node_id=node)

    node, response = manager.run(send)
    return int(node), response


def all_topics(admin: KafkaAdminClient) -> tuple[int, list[dict[str, Any]]]:
    """Every topic (internal ones too) with its partitions, as admin.describe_topics() gives them, and the
    broker that answered."""
    node, response = ask(admin, MetadataRequest(topics=None, allow_auto_topic_creation=False))
    return node, list(response.to_dict()["topics"])


def unhealthy(cluster: Cluster, admin: KafkaAdminClient, topics: list[dict[str, Any]]) -> list[str]:
    """What keeps the cluster from full health: brokers not serving, partitions (internal ones too) without
    a leader or with a short ISR. Empty when every broker serves and every replica is in sync."""
    addresses = {name: cluster.broker_address(name) for name in cluster.brokers}
    problems = [f"{n} refuses {a}" for n, a in addresses.items() if not _quietly(accepts_connections, a)]
    registered = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    problems += [f"{n} not registered" for n in cluster.brokers if cluster.node_id(n) not in registered]
    for topic in topics:
        for p in topic["partitions"]:
            if p["leader_id"] < 0 or len(p["isr_nodes"]) < len(p["replica_nodes"]):
                problems.append(f"{topic['name']}-{p['partition_index']} leader={p['leader_id']} isr={p['isr_nodes']}")
    return problems


def off_preferred_leader(topics: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Partitions (internal ones too) whose leader is not the first replica of their assignment, by topic."""
    off: dict[str, list[dict[str, Any]]] = {}
    for topic in topics:
        for p in topic["partitions"]:
            if p["replica_nodes"] and p["leader_id"] != p["replica_nodes"][0]:
                off.setdefault(topic["name"], []).append(p)
    return off


def elect_preferred(bootstrap: str, partitions: dict[str, list[int]]) -> list[str]:
    """A preferred leader election for these partitions; the response, one entry a partition.

    Through a new admin client each time. KafkaAdminClient sends it to the broker it took for the controller
    at its first such call and keeps that id for its life (admin/client.py, _send_request_to_controller); in
    KRaft that is any live broker (it forwards the request), and the connection to it comes from the
    client's broker list, refreshed only every metadata_max_age_ms (5 min). A broker stopped cleanly is fenced
    before it closes its connections; the refresh its closing triggers leaves it out of that list, and every
    election then fails with UnknownBrokerIdError, long after the broker is back.
    """
    with KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=bootstrap, client_id="kafkalab-failover-elect"
    ) as client:
        response = client.elect_leaders(0, partitions, raise_errors=False)  # 0: preferred replica
    top = int(getattr(response, "error_code", 0))  # ElectLeaders v1+
    results = [f"request: {top} {for_code(top).__name__}"] if top else []
    for r in response.replica_election_results:
        for p in r.partition_result:
            error = f"{p.error_code} {for_code(p.error_code).__name__} {p.error_message or ''}".strip()
            results.append(f"{r.topic}-{p.partition_id}: {error}")
    return results


def eligible_leaders(admin: KafkaAdminClient, node: int, topics: list[str]) -> dict[tuple[str, int], str]:
    """Each partition's eligible leader replicas (KRaft, KIP-966) as one broker describes them: only
    DescribeTopicPartitions has them, and ZooKeeper-mode brokers do not serve it."""
    topic_request = DescribeTopicPartitionsRequest.TopicRequest
    request = DescribeTopicPartitionsRequest(
        topics=[topic_request(name=t) for t in topics], response_partition_limit=2000, cursor=None
    )
    _, response = ask(admin, request, node)
    return {
        (t.name, p.partition_index): f"elr={list(p.eligible_leader_replicas or [])} "
        f"last_known_elr={list(p.last_known_elr or [])}"
        for t in response.topics
        for p in t.partitions
    }


@dataclass
class HealthLook:
    """What healthy_start saw at its latest look, for its failure message."""

    problems: list[str] = field(default_factory=list)
    broker: int | None = None  # the broker whose metadata the look used
    off: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # partitions off their preferred leader
    election: list[str] = field(default_factory=list)  # the latest ElectLeaders response
    errors: Counter[str] = field(default_factory=Counter)  # exceptions from the look or the election, counted

    def report(self, admin: KafkaAdminClient) -> str:
        parts = [f"still wrong: {self.problems[:10]}", f"metadata from broker {self.broker}"]
        if self.off and self.broker is not None:
            elr: dict[tuple[str, int], str] = {}
            with contextlib.suppress(Exception):  # ZooKeeper mode has no ELR; this is only a report
                elr = eligible_leaders(admin, self.broker, sorted(self.off))
            parts.append(
                "off their preferred leader: "
                + ", ".join(
                    f"{t}-{p['partition_index']} leader={p['leader_id']} epoch={p['leader_epoch']} "
                    f"replicas={p['replica_nodes']} isr={p['isr_nodes']} {elr.get((t, p['partition_index']), 'elr=?')}"
                    for t, ps in sorted(self.off.items())
                    for p in ps
                )
            )
        if self.election:
            parts.append(f"latest ElectLeaders response: {self.election}")
        if self.errors:
            parts.append(f"exceptions (times seen): {dict(self.errors.most_common(5))}")
        return "; ".join(parts)


def _quietly(check: Callable[[str], bool], arg: str) -> bool:
    try:
        return check(arg)
    except OSError:
        return False


@dataclass
class Disruption:
    """The node a case disrupted, and when the cluster had to go on acknowledging writes without it.

    A clean stop hands the node's leaderships over before the process exits: writes go on for the whole
    time it is down. A pause or an isolation lasts past the timeout that drops the node (stall_seconds):
    writes go on from that timeout to the node's return. A SIGKILLed node is back within seconds (systemd),
    often before the cluster noticed; with acks=all every partition waits for it until then (in ZooKeeper mode
    until its session lapses; seen in CI: no ack in the 6 s to a SIGKILLed controller's restart), so there
    is no such stretch (None): the stream must only flow again once the cluster is whole.
    """

    victim: str
    writes: tuple[float, float] | None = None  # (from, until), time.monotonic()
    how: str = ""


# Each disruption gets the node, the cluster and the admin client and returns when the node has been
# restored (or is being restored by systemd); recovery is then awaited through the ISR.
def kill_leader(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> Disruption:
    name = broker_host(cluster, partition_leader(admin, topic))
    host = node(name)
    assert host.run(f"systemctl kill --signal=SIGKILL {kafka_unit(name)}").rc == 0
    # systemd (Restart=on-failure) brings it back; make sure it did.
    wait_for(lambda: service_running(host, name), 60, f"systemd to restart {kafka_unit(name)} on {name}")
    return Disruption(name)


# How long a cleanly stopped partition leader stays down.
CLEAN_STOP_S = 10


def stop_leader_cleanly(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> Disruption:
    name = broker_host(cluster, partition_leader(admin, topic))
    host = node(name)
    assert host.run(f"systemctl stop {kafka_unit(name)}").rc == 0
    stopped = time.monotonic()
    time.sleep(CLEAN_STOP_S)
    back = time.monotonic()
    assert host.run(f"systemctl start {kafka_unit(name)}").rc == 0
    return Disruption(name, (stopped, back), "stopped (its leaderships handed over as it stopped)")


def kill_active_controller(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> Disruption:
    name = broker_host(cluster, active_controller(admin))
    host = node(name)
    assert host.run(f"systemctl kill --signal=SIGKILL {kafka_unit(name)}").rc == 0
    wait_for(lambda: service_running(host, name), 60, f"systemd to restart {kafka_unit(name)} on {name}")
    if cluster.mode == "kraft":
        # DescribeQuorum itself, not active_controller(): its fallback, describe_cluster's controller_id, is
        # any live broker in KRaft, even while the quorum has no leader.
        wait_for(lambda: report.quorum_leader(admin)[0] >= 0, 60, "the metadata quorum to have a leader again")
    else:
        wait_for(lambda: active_controller(admin) >= 0, 60, "a new active controller")
    return Disruption(name)


# ZooKeeper mode: how long a killed broker may take to register again (its old session lapses after
# zookeeper.session.timeout.ms, 18 s by default; systemd restarts it every 5 s until then).
REREGISTER_TIMEOUT_S = 90
# Kafka's defaults for the two timeouts that decide when a stalled or cut-off broker leaves the ISRs.
BROKER_SESSION_TIMEOUT_MS = 9000
REPLICA_LAG_TIME_MAX_MS = 30000
# Past the timeout, time for the ISR to stay shrunk while the watcher (0.25 s samples) looks; KRaft
# fences a little after its session timeout, so it gets more.
STALL_MARGIN_S = {"kraft": 15, "zookeeper": 10}


def drop_seconds(cluster: Cluster, name: str) -> float:
    """After how long a silent broker leaves the ISRs, read from its config.

    KRaft: the controller fences a broker that misses heartbeats for broker.session.timeout.ms and
    shrinks its ISRs at once. ZooKeeper mode has no fencing: the leaders drop a silent follower only
    after replica.lag.time.max.ms (a 20 s pause there shrank nothing; a 20 s isolation shrank nothing
    in one CI run).
    """
    props = cluster.properties[name]
    if cluster.mode == "kraft":
        return int(props.get("broker.session.timeout.ms", BROKER_SESSION_TIMEOUT_MS)) / 1000
    return int(props.get("replica.lag.time.max.ms", REPLICA_LAG_TIME_MAX_MS)) / 1000


def stall_seconds(cluster: Cluster, name: str) -> float:
    """How long to pause or isolate a broker so that replication really notices: past the timeout that drops
    it, a margin, so the ISR stays shrunk long enough for the watcher to see it."""
    return drop_seconds(cluster, name) + STALL_MARGIN_S[cluster.mode]


def pause_broker(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> Disruption:
    name = broker_host(cluster, partition_leader(admin, topic))
    host = node(name)
    pid = host.run(f"systemctl show {kafka_unit(name)} --property=MainPID --value").stdout.strip()
    assert host.run(f"kill -STOP {pid}").rc == 0
    paused = time.monotonic()
    try:
        time.sleep(stall_seconds(cluster, name))
    finally:
        back = time.monotonic()
        assert host.run(f"kill -CONT {pid}").rc == 0
    return Disruption(name, (paused + drop_seconds(cluster, name), back), "paused, past the timeout that drops it")


def node_addresses(cluster: Cluster) -> dict[str, str]:
    """Each Kafka node's own address: its advertised broker address, or its quorum voter entry."""
    out = {name: cluster.broker_address(name).rsplit(":", 1)[0] for name in cluster.brokers}
    voters = next(iter(cluster.properties.values())).get("controller.quorum.voters", "")
    by_id = dict(v.split("@", 1) for v in voters.split(",") if v)
    for name, props in cluster.properties.items():
        if name in out:
            continue
        if by_id:
            out[name] = by_id[str(cluster.node_id(name))].rsplit(":", 1)[0]
        else:
            # A dynamic quorum's controller advertises its controller endpoint (no voter list in any file).
            endpoint = props["advertised.listeners"].split(",")[0].split("://", 1)[1]
            out[name] = endpoint.rsplit(":", 1)[0]
    return out


def isolate_broker(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> Disruption:
    controller = active_controller(admin)
    name = next(n for n in cluster.brokers if cluster.node_id(n) != controller)
    if len(machine_mates(name, list(cluster.properties))) > 1:
        pytest.skip(
            f"{name} shares its machine with other instances (kafka_instance): they reach each other over its own "
            "address, through loopback, so no packet filter can cut one off"
        )
    host = node(name)
    addresses = node_addresses(cluster)
    peers = sorted(ip for n, ip in addresses.items() if n != name)
    # Only the cluster's own members are cut off; the controller (tests, clients) still reaches the node.
    rules = [f"INPUT -s {ip} -j DROP" for ip in peers] + [f"OUTPUT -d {ip} -j DROP" for ip in peers]
    for rule in rules:
        assert host.run(f"iptables -I {rule}").rc == 0
    cut = time.monotonic()
    try:
        time.sleep(stall_seconds(cluster, name))
    finally:
        back = time.monotonic()
        for rule in rules:
            host.run(f"iptables -D {rule}")
    return Disruption(name, (cut + drop_seconds(cluster, name), back), "cut off, past the timeout that drops it")


CASES: dict[str, Callable[[Cluster, KafkaAdminClient, str], Disruption]] = {
    "sigkill-partition-leader": kill_leader,
    "clean-stop-partition-leader": stop_leader_cleanly,
    "sigkill-active-controller": kill_active_controller,
    "sigstop-broker": pause_broker,
    "firewall-isolated-broker": isolate_broker,
}


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=cluster.bootstrap, client_id="kafkalab-failover"
    )
    yield client
    client.close()


@pytest.fixture(autouse=True)
def healthy_start(cluster: Cluster, admin: KafkaAdminClient) -> None:
    """Every case starts on a fully healthy cluster, every partition on its preferred leader. A broker that
    a previous case disrupted may still be rejoining (in ZooKeeper mode a broker is leader again before its
    listener accepts connections); a case started then would measure the previous case's recovery, not its
    own."""
    look = HealthLook()

    def healthy() -> bool:
        try:
            broker, topics = all_topics(admin)
            problems = unhealthy(cluster, admin, topics)
            look.broker, look.problems, look.off = broker, problems, {} if problems else off_preferred_leader(topics)
            if look.off:
                # A restarted broker gets its leaderships back only at the controller's next automatic
                # rebalance (leader.imbalance.check.interval.seconds, 300 s), which would then move partition
                # leaders, and the group coordinators with __consumer_offsets, in the middle of the next case.
                # Do now what an operator does after a restart: a preferred leader election. Every ISR is
                # full here, so each preferred replica is in sync and eligible (the controller admits no
                # fenced or shutting-down broker to an ISR).
                look.problems = [
                    f"{t}-{p['partition_index']} not on its preferred leader" for t in look.off for p in look.off[t]
                ]
                chosen = {t: sorted(p["partition_index"] for p in ps) for t, ps in look.off.items()}
                look.election = elect_preferred(cluster.bootstrap, chosen)
        except Exception as exc:  # the cluster may refuse calls mid-recovery; kept for the failure message
            look.errors[f"{type(exc).__name__}: {exc}"[:300]] += 1
            return False
        return not look.problems

    try:
        wait_for(healthy, RECOVERY_TIMEOUT_S, "the cluster to be fully healthy before the case")
    except AssertionError as err:
        raise AssertionError(f"{err}; {look.report(admin)}") from None


@pytest.fixture
def replicated_topic(cluster: Cluster) -> Iterator[str]:
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    rf = min(3, len(cluster.brokers))
    e2e.create_topic(cluster.bootstrap, topic, partitions=3, replication=rf, configs={"min.insync.replicas": "2"})
    yield topic
    e2e.delete_topic(cluster.bootstrap, topic)


# A paused or isolated broker is the same broker-side story in both modes; in ZooKeeper mode it also
# loses its ZooKeeper session. Both were proven in ZooKeeper mode (docs/measurements.md, 2026-11-23) and
# run in KRaft mode only since the ZooKeeper scenario carries the migration journey within CI's time.
KRAFT_ONLY = {"sigstop-broker", "firewall-isolated-broker"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.kraft) if c in KRAFT_ONLY else c for c in CASES])
def test_acked_messages_survive(case: str, cluster: Cluster, admin: KafkaAdminClient, replicated_topic: str) -> None:
    if len(cluster.brokers) < 3:
        pytest.fail("failover cases need 3 brokers (RF 3, min.insync.replicas 2)")
    topic = replicated_topic
    quorum_epoch = report.quorum_leader(admin)[1] if cluster.mode == "kraft" else None
    registered = zk_registrations(cluster)
    producer = e2e.BackgroundProducer(cluster.bootstrap, topic).start()
    watcher = IsrWatcher(cluster.bootstrap, topic, replicas=3).start()
    try:
        time.sleep(3)  # a steady stream before the disruption
        began = time.monotonic()
        disruption = CASES[case](cluster, admin, topic)
        victim = disruption.victim
        restored = time.monotonic()
        # What to expect follows the topology: a node that is a broker holds replicas, so losing it must
        # show in replication; a dedicated controller holds none, so losing it moves only the quorum's
        # leadership (to another voter, or, with one controller, back to itself once systemd restarted it).
        # In ZooKeeper mode a SIGKILLed broker that systemd restarts can register again the moment its old
        # session lapses, before any controller has handled its loss (seen in CI: no ISR shrink, no leader
        # epoch rise): its registration replaced (a new cZxid) proves the cluster lost it all the same.
        holds_replicas = victim in cluster.brokers
        re_registered = (
            holds_replicas
            and bool(registered)
            and registration_replaced(
                cluster, victim, registered, REREGISTER_TIMEOUT_S, unless=lambda: watcher.disturbed_at is not None
            )
        )
        recovered = (
            watcher.wait_recovered(restored, RECOVERY_TIMEOUT_S, disturbed_elsewhere=re_registered)
            if holds_replicas
            else True
        )
        recovered_at = time.monotonic()
        # The stream flows again once the cluster is whole: an ack of a later send than any before it.
        resumed = producer.wait_for_ack_after(recovered_at, RECOVERY_TIMEOUT_S)
        time.sleep(2)  # and a steady stream after it
    finally:
        unresolved = producer.stop()
        watcher.stop()
    if unresolved or (holds_replicas and not recovered):
        # Say why, with what the client believed and what the node did: a bare flush timeout says neither.
        what = [f"ISR of {topic} not back to 3 within {RECOVERY_TIMEOUT_S} s"] if not recovered else []
        what.append(f"{unresolved} sends neither acked nor failed by the end of the producer's flush")
        pytest.fail(f"{case}: {'; '.join(what)}; {producer.diagnosis()}; {node_state(victim)}")
    if holds_replicas:
        assert watcher.disturbed_at is not None or re_registered, (
            f"{case}: no ISR shrink and no leader-epoch rise seen on {topic} (and, in ZooKeeper mode, {victim}'s "
            "registration not replaced): the disruption never reached the cluster"
        )
    else:
        assert quorum_epoch is not None and report.quorum_leader(admin)[1] > quorum_epoch, (
            f"{case}: the metadata quorum's epoch did not rise: losing controller {victim} never reached the quorum"
        )
        assert watcher.min_isr == 3, (
            f"{case}: the ISR of {topic} shrank to {watcher.min_isr} though {victim} holds no replica"
        )
    if watcher.shrunk_at is not None and watcher.full_again_at is not None:
        isr_recovery = f"{watcher.full_again_at - watcher.shrunk_at:.1f}"
    else:
        isr_recovery = "shrink-not-sampled"
    acked_during = producer.acks_between(began, restored)
    written_through = None if disruption.writes is None else producer.acks_between(*disruption.writes)
    gap = longest_gap(producer.ack_times)

    consumed = e2e.consume_run(cluster.bootstrap, topic, producer.run_id)
    result = e2e.compare(producer.acked, consumed)
    record_failover(
        case=case,
        victim=victim,
        mode=cluster.mode,
        sent=producer.sent,
        acked=len(producer.acked),
        consumed=result.consumed,
        lost=len(result.lost),
        duplicated=len(result.duplicated),
        failed_sends=len(producer.failed),
        acked_during_disruption=acked_during,
        acked_while_written_through=written_through,
        disruption_to_recovery_s=round(recovered_at - began, 1),
        longest_ack_gap_s=round(gap, 3),
        min_isr=watcher.min_isr,
        leader_epochs_rose=watcher.epochs_moved,
        isr_recovery_s=isr_recovery,
        zookeeper_registration_replaced=re_registered if registered else None,
    )
    assert resumed, f"{case}: no acknowledgement within {RECOVERY_TIMEOUT_S} s of the cluster's recovery"
    if disruption.writes is not None:
        span = disruption.writes[1] - disruption.writes[0]
        assert written_through > 0, f"{case}: no acknowledgement in the {span:.0f} s {victim} was {disruption.how}"
    assert result.lost == [], f"{case}: lost {len(result.lost)} acknowledged messages"
    assert result.duplicated == [], f"{case}: {len(result.duplicated)} duplicated"
    assert result.moved == []
    assert result.out_of_order_partitions == []
    assert producer.failed == [], f"{case}: {len(producer.failed)} sends failed"


def test_rf1_partition_goes_offline_with_its_broker_and_returns_with_its_data(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    topic = f"failover-rf1-{uuid.uuid4().hex[:8]}"
    e2e.create_topic(cluster.bootstrap, topic, partitions=1, replication=1)
    try:
        run_id, acked, failed = e2e.produce_numbered(cluster.bootstrap, topic, 500)
        assert failed == []
        owner = partition_leader(admin, topic)
        name = broker_host(cluster, owner)
        host = node(name)
        assert host.run(f"systemctl stop {kafka_unit(name)}").rc == 0
        try:

            def offline() -> bool:
                p = admin.describe_topics([topic])[0]["partitions"][0]
                return bool(p["leader_id"] < 0 and owner in p["offline_replicas"])

            wait_for(offline, 60, f"{topic}-0 to be reported offline")
            flagged = next(t for t in report.collect(cluster.bootstrap)["topics"] if t["name"] == topic)
            assert flagged["partitions"][0]["flags"][0] == report.OFFLINE
            assert flagged["partitions"][0]["leader"] is None
            assert flagged["partitions"][0]["offline_replicas"] == [owner]
        finally:
            assert host.run(f"systemctl start {kafka_unit(name)}").rc == 0
        wait_for(lambda: partition_leader(admin, topic) == owner, 120, f"{topic}-0 to come back on {owner}")
        # ZooKeeper mode registers the broker (and the controller makes it leader) before its listener opens.
        address = cluster.broker_address(broker_host(cluster, owner))
        wait_for(lambda: accepts_connections(address), 60, f"broker {owner} to accept connections on {address}")
        result = e2e.compare(acked, e2e.consume_run(cluster.bootstrap, topic, run_id))
        assert result.ok and result.consumed == 500, result.summary()
    finally:
        e2e.delete_topic(cluster.bootstrap, topic)


class GroupMember:
    """One consumer-group member polling in its own thread: small polls, a commit after each, records of
    one run kept. A commit refused while the group rebalances is retried after the next poll (what
    kafka-python's own error message advises)."""

    def __init__(self, consumer: KafkaConsumer, run_id: str, name: str) -> None:
        self._consumer = consumer
        self._run_id = run_id
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._seen: list[e2e.Record] = []
        self._assigned: set[int] = set()
        self._committed = False  # everything polled so far is committed
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), f"{self._thread.name} did not stop"

    def snapshot(self) -> tuple[list[e2e.Record], set[int], bool]:
        with self._lock:
            return list(self._seen), set(self._assigned), self._committed

    def _run(self) -> None:
        c = self._consumer
        try:
            while not self._stop.is_set():
                got = []
                # Small polls, so one member cannot drain the topic before the other has joined.
                for tp, batch in c.poll(timeout_ms=200, max_records=50).items():
                    for m in batch:
                        data = e2e.decode(m.value)
                        if data and data.get("run") == self._run_id:
                            got.append(e2e.Record(tp.partition, m.offset, m.key.decode(), data["seq"]))
                try:
                    c.commit()
                    committed = True
                except (RebalanceInProgressError, CommitFailedError):
                    committed = False
                with self._lock:
                    self._seen += got
                    self._assigned = {tp.partition for tp in c.assignment()}
                    self._committed = committed
        except Exception as exc:  # reported by the test, never swallowed
            self.errors.append(f"{self._thread.name}: {exc!r}")
        finally:
            c.close()


def test_consumer_groups_split_partitions_and_keep_independent_offsets(cluster: Cluster) -> None:
    topic = f"groups-{uuid.uuid4().hex[:8]}"
    e2e.create_topic(cluster.bootstrap, topic, partitions=6, replication=min(3, len(cluster.brokers)))
    group_a, group_b = f"{topic}-a", f"{topic}-b"
    try:
        run_id, acked, _ = e2e.produce_numbered(cluster.bootstrap, topic, 3000)
        # The readers below stop on these sequence numbers, never on a count: a rebalance hands a member records
        # the other read but had not committed (read twice), so a count can be reached with records still unread.
        wanted = {r.seq for r in acked}

        def consumer(group: str) -> KafkaConsumer:
            return KafkaConsumer(
                topic,
                **kafka_client.settings(),
                bootstrap_servers=cluster.bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                client_id=group,
            )

        # Two members of group a, each in its own thread as two processes would be: one member blocked
        # in a rebalance never holds up the other's poll, which is what lets the rebalance finish.
        members = [GroupMember(consumer(group_a), run_id, f"{group_a}-{i}") for i in (1, 2)]
        for m in members:
            m.start()
        try:

            def done() -> bool:
                if any(m.errors for m in members):
                    return True  # a member's thread died: the assertions below report it at once
                (seen_1, p1, ok_1), (seen_2, p2, ok_2) = (m.snapshot() for m in members)
                # Both hold partitions, together all six, none twice: the group has rebalanced; and every
                # acked record has been read and committed.
                return (
                    bool(p1 and p2 and p1.isdisjoint(p2) and p1 | p2 == set(range(6)))
                    and {r.seq for r in seen_1 + seen_2} >= wanted
                    and ok_1
                    and ok_2
                )

            try:
                wait_for(done, 120, "both members of group a to share the partitions and commit everything")
            except AssertionError as err:
                state = [(len(seen), sorted(parts), ok) for seen, parts, ok in (m.snapshot() for m in members)]
                raise AssertionError(f"{err}; (records, partitions, committed) per member: {state}") from None
        finally:
            for m in members:
                m.stop()
        (seen_1, parts_1, _), (seen_2, parts_2, _) = (m.snapshot() for m in members)
        errors = [e for m in members for e in m.errors]
        assert not errors, errors
        assert parts_1 and parts_2, "both group members must own partitions"
        assert parts_1.isdisjoint(parts_2) and parts_1 | parts_2 == set(range(6))
        result = e2e.compare(acked, seen_1 + seen_2)
        # A rebalance may hand a member records the other read but had not committed yet: duplicates
        # are legal here (at-least-once); losing any is not.
        assert result.lost == [] and result.out_of_order_partitions == [], result.summary()

        other = e2e.consume_run(cluster.bootstrap, topic, run_id)  # group b reads the same data on its own
        b = consumer(group_b)
        got_b: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not wanted <= set(got_b):
            for batch in b.poll(timeout_ms=500).values():
                got_b += [e2e.decode(m.value)["seq"] for m in batch if e2e.decode(m.value)]  # type: ignore[index]
        b.commit()
        b.close()
        assert sorted(got_b) == sorted(r.seq for r in acked) == sorted(r.seq for r in other)

        groups = {g["group"]: g for g in report.collect(cluster.bootstrap)["groups"]}
        for group in (group_a, group_b):
            assert group in groups, f"report lacks group {group}"
            rows = [r for r in groups[group]["partitions"] if r["topic"] == topic]
            assert len(rows) == 6
            assert all(r["lag"] == 0 for r in rows), rows
    finally:
        e2e.delete_topic(cluster.bootstrap, topic)
