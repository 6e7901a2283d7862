"""The firewall and the listeners, checked with real packets against the real ufw rules on every host.

What each host should allow is worked out here from the inventory and from what the nodes really run
(their server.properties and zoo.cfg), independently of the firewall role's own planning code:
SSH from the admin networks; each Kafka listener from its client networks, the inter-broker listener
also from the other brokers and the Spark hosts; the KRaft controller port from the Kafka nodes only;
the ZooKeeper ports from the ensemble (and the brokers, for the client port); any port between Spark
hosts; the Spark UIs from the monitoring networks; the Schema Registry's API from the client, admin and
monitoring networks and the hosts that use it. Then:

- `ufw status` on each host lists exactly those rules, with incoming denied by default;
- from each probe host (group firewall_probes: on the cluster's network but outside, or inside, the
  allowed networks) and from the controller, every port of every host answers (open or refused) when
  a rule lets that address in, and times out (dropped) when none does;
- a client in an allowed client network produces and consumes through the client listener;
- through NAT: a client that knows only one published address of the external listener produces to
  and consumes from all brokers, and the internal listener serves the same data.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
import subprocess
import sys
import tomllib
import uuid
import zipfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import kafka
import pytest
from conftest import Cluster, listener_security, read_properties
from inventory_hosts import (
    host_variables,
    hosts_in,
    inventory_path,
    kafka_properties_path,
    kafka_unit,
    machine_mates,
    node,
    one_per_machine,
)
from kafka.admin import KafkaAdminClient, NewTopic
from prometheus_api import wait_until

from kafkalab import e2e, kafka_client

ROOT = Path(__file__).resolve().parents[2]

# One TCP knock: "open" (accepted), "refused" (RST: a rule let the packet in, nothing listens), or
# "timeout" (ufw dropped it). Run on probe hosts with their own python3, and on the controller.
KNOCK = r"""
import json, socket, sys
from concurrent.futures import ThreadPoolExecutor

def knock(target):
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        return target, "open"
    except ConnectionRefusedError:
        return target, "refused"
    except (socket.timeout, TimeoutError):
        return target, "timeout"
    except OSError as exc:
        return target, f"error {exc.errno}"
    finally:
        s.close()

with ThreadPoolExecutor(32) as pool:
    print(json.dumps(dict(pool.map(knock, sys.argv[1:]))))
"""


def knock_locally(targets: Iterable[str]) -> dict[str, str]:
    """The same knocks from the controller: KNOCK run by this Python."""
    result = subprocess.run(
        [sys.executable, "-c", KNOCK, *targets], capture_output=True, text=True, timeout=120, check=True
    )
    return dict(json.loads(result.stdout))


# ---- the oracle: what the inventory and the running services imply ------------------------------


def address(host: str) -> str:
    v = host_variables(host)
    return str(v.get("firewall_address") or v.get("ansible_host") or host)


def ufw_source(network: str) -> str:
    net = ipaddress.ip_network(network, strict=False)
    return str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)


def networks(host: str, kind: str) -> list[str]:
    return [ufw_source(n) for n in host_variables(host).get(f"firewall_{kind}_networks", [])]


# A listener's client_networks may name a class of networks instead of a CIDR (roles/firewall/README.md): the
# inventory's networks of that class.
NETWORK_CLASSES = {"admin": "admin", "clients": "client", "monitoring": "monitoring"}


def listener_sources(host: str, listed: list[str]) -> list[str]:
    return [
        src
        for item in listed
        for src in (networks(host, NETWORK_CLASSES[item]) if item in NETWORK_CLASSES else [ufw_source(item)])
    ]


def managed_hosts() -> list[str]:
    """One inventory host per machine: instances on one machine (kafka_instance) share its ufw."""
    return one_per_machine(
        sorted(
            {
                *hosts_in("kafka"),
                *hosts_in("zookeeper"),
                *hosts_in("spark"),
                *hosts_in("monitoring"),
                *hosts_in("schema_registry"),
                *hosts_in("postgresql"),
                *hosts_in("kafka_connect"),
            }
        )
    )


def zoo_cfg(host: str) -> dict[str, str]:
    return read_properties(node(host), "/etc/zookeeper/zoo.cfg")


@cache
def expected_rules(host: str) -> frozenset[tuple[str, str]]:
    """(to, from) pairs as `ufw status` prints them: to is '9092/tcp' or 'Anywhere', from an address.

    A machine's ufw holds the rules of every inventory host on it (one Kafka instance each)."""
    every = sorted(
        {*hosts_in("kafka"), *hosts_in("zookeeper"), *hosts_in("spark"), *hosts_in("monitoring")}
        | set(hosts_in("schema_registry"))
        | set(hosts_in("postgresql"))
        | set(hosts_in("kafka_connect"))
    )
    return frozenset(rule for mate in machine_mates(host, every) for rule in host_rules(mate))


AGENT_PORT = re.compile(r"-javaagent:\S*jmx_prometheus_javaagent\S*?=(\d+):")
LISTEN_PORT = re.compile(r"--web\.listen-address=\S*:(\d+)")


def agent_port(host: str, unit: str) -> str | None:
    """The JMX exporter agent's port in the running JVM's command line, if it runs one."""
    pid = node(host).check_output(f"systemctl show {unit} --property=MainPID --value").strip()
    if pid in ("", "0"):
        return None
    match = AGENT_PORT.search(node(host).check_output(f"tr '\\0' ' ' < /proc/{pid}/cmdline"))
    return match.group(1) if match else None


def listen_port(host: str, defaults_file: str) -> str | None:
    """The port a Debian-packaged Prometheus program listens on, from its /etc/default file (None: not there)."""
    text = node(host).file(defaults_file)
    match = LISTEN_PORT.search(text.content_string) if text.exists else None
    return match.group(1) if match else None


def job_metrics_ports(host: str) -> list[str]:
    """The ports the consumer job's drivers serve their metrics on, from the settings file the role rendered."""
    settings = node(host).file("/etc/spark-consumer/job.toml")
    if not settings.exists:
        return []
    document = tomllib.loads(settings.content_string)
    ports = [document.get("metrics", {}).get("port", 0), document.get("realtime", {}).get("metrics_port", 0)]
    return [str(p) for p in ports if p]


def driver_ui_ports(host: str) -> list[str]:
    """The UI ports of the consumer job's drivers, from the spark-submit properties the role rendered."""
    ports = []
    for conf in ("/etc/spark-consumer/spark-submit.conf", "/etc/spark-consumer/spark-submit-realtime.conf"):
        if node(host).file(conf).exists and "spark.ui.port" in (props := read_properties(node(host), conf)):
            ports.append(props["spark.ui.port"])
    return ports


def monitoring_rules(host: str, port: str | None) -> set[tuple[str, str]]:
    """An exporter port: open to the monitoring hosts and the monitoring networks."""
    if port is None:
        return set()
    return {(f"{port}/tcp", address(h)) for h in hosts_in("monitoring")} | {
        (f"{port}/tcp", src) for src in networks(host, "monitoring")
    }


def host_rules(host: str) -> frozenset[tuple[str, str]]:
    """The rules one inventory host's services imply."""
    rules: set[tuple[str, str]] = {("22/tcp", src) for src in networks(host, "admin")}
    brokers, controllers = hosts_in("kafka_broker"), hosts_in("kafka_controller")
    if host_variables(host).get("kafka_mode") == "zookeeper":
        # Standby controllers (for playbooks/migrate_to_kraft.yml) open nothing for Kafka yet.
        controllers = []
    spark = hosts_in("spark")
    zookeepers = hosts_in("zookeeper")
    if host in brokers or host in controllers:
        props = read_properties(node(host), kafka_properties_path(host))
        ports = {
            item.split("://")[0]: item.rsplit(":", 1)[1] for item in props["listeners"].split(",") if "://" in item
        }
        controller_names = set(props.get("controller.listener.names", "").split(","))
        declared = {item["name"]: item for item in host_variables(host).get("kafka_listeners", [])}
        for name, port in ports.items():
            if name in controller_names:
                rules |= {(f"{port}/tcp", address(h)) for h in {*brokers, *controllers}}
                continue
            own = declared.get(name, {}).get("client_networks")
            clients = listener_sources(host, own) if own is not None else networks(host, "client")
            rules |= {(f"{port}/tcp", src) for src in clients}
            if name == props["inter.broker.listener.name"]:
                # In-cluster clients: the Spark job, the consumer-lag exporter on the monitoring hosts, the
                # Schema Registry (its data is in Kafka topics) and the Kafka Connect workers.
                clients_inside = {
                    *brokers,
                    *spark,
                    *hosts_in("monitoring"),
                    *hosts_in("schema_registry"),
                    *hosts_in("kafka_connect"),
                }
                rules |= {(f"{port}/tcp", address(h)) for h in clients_inside}
        rules |= monitoring_rules(host, agent_port(host, kafka_unit(host)))
    if host in zookeepers and host_variables(host).get("kafka_mode") == "zookeeper":
        cfg = zoo_cfg(host)
        # The client port: clientPort, or secureClientPort with zookeeper_tls (then nothing listens in plaintext).
        client_port = cfg.get("clientPort") or cfg["secureClientPort"]
        rules |= {(f"{client_port}/tcp", address(h)) for h in {*brokers, *zookeepers}}
        peer, election = next(v for k, v in cfg.items() if k.startswith("server.")).split(";")[0].split(":")[1:3]
        rules |= {(f"{port}/tcp", address(h)) for h in zookeepers for port in (peer, election)}
        rules |= monitoring_rules(host, agent_port(host, "zookeeper"))
    if host in spark:
        rules |= {("Anywhere", f"{address(h)}/tcp") for h in spark}
        ui = []
        if host in hosts_in("spark_master"):
            # The master's UI, and the UIs (REST APIs) of the consumer job's drivers (the archive's, and the
            # low-latency path's when it runs): the ports their spark-submit properties give, no other.
            ui += [str(host_variables(host).get("spark_master_webui_port", 8080)), *driver_ui_ports(host)]
        if host in hosts_in("spark_worker"):
            ui.append(str(host_variables(host).get("spark_worker_webui_port", 8081)))
        rules |= {(f"{port}/tcp", src) for port in ui for src in networks(host, "monitoring")}
        # Prometheus's hosts scrape the UIs' metrics servlets, and the job's own metrics ports (its settings file).
        rules |= {(f"{port}/tcp", address(h)) for port in ui for h in hosts_in("monitoring")}
        for port in job_metrics_ports(host):
            rules |= monitoring_rules(host, port)
    if host in hosts_in("schema_registry"):
        # The registry's API (and its /metrics): the client, admin and monitoring networks, the registry's own
        # hosts, the Spark hosts and Prometheus's hosts. Its port from the settings the role rendered.
        settings = read_properties(node(host), "/etc/apicurio-registry/registry.properties")
        port = settings.get("quarkus.http.ssl-port") or settings["quarkus.http.port"]
        sources = [*networks(host, "client"), *networks(host, "admin"), *networks(host, "monitoring")]
        sources += [address(h) for h in {*hosts_in("schema_registry"), *spark, *hosts_in("monitoring")}]
        rules |= {(f"{port}/tcp", src) for src in sources}
    if host in hosts_in("kafka_connect"):
        # Connect's REST API: the admin networks, the other workers (a follower forwards to the leader), and the
        # networks and groups kafka_connect_client_networks / _groups name. Its port from the worker's settings.
        v = host_variables(host)
        port = read_properties(node(host), "/etc/kafka-connect/worker.properties")["listeners"].rsplit(":", 1)[1]
        sources = [*networks(host, "admin"), *listener_sources(host, v.get("kafka_connect_client_networks", []))]
        sources += [address(h) for g in v.get("kafka_connect_client_groups", []) for h in hosts_in(g)]
        sources += [address(h) for h in hosts_in("kafka_connect")]
        rules |= {(f"{port}/tcp", src) for src in sources}
        # Its JMX exporter agent (the port in the worker's command line), when monitoring hosts scrape it.
        rules |= monitoring_rules(host, agent_port(host, "kafka-connect"))
    if host in hosts_in("postgresql"):
        # PostgreSQL: from each postgresql_clients entry's hosts (or groups' hosts) and networks, no other. Its port
        # from the settings the role rendered.
        v = host_variables(host)
        conf = node(host).check_output("cat /etc/postgresql/*/main/conf.d/kafkalab.conf")
        port = re.search(r"^port = (\d+)", conf, re.MULTILINE)[1]  # type: ignore[index]
        for client in v.get("postgresql_clients", []):
            named = client.get("from_hosts", [])
            sources = [address(h) for g in named for h in (hosts_in(g) or [g])]
            sources += listener_sources(host, client.get("from_networks", []))
            rules |= {(f"{port}/tcp", src) for src in sources}
        # Its exporter (Debian's prometheus-postgres-exporter), when monitoring hosts scrape it.
        rules |= monitoring_rules(host, listen_port(host, "/etc/default/prometheus-postgres-exporter"))
    rules |= monitoring_rules(host, listen_port(host, "/etc/default/prometheus-node-exporter"))
    if host in hosts_in("monitoring"):
        port = listen_port(host, "/etc/default/prometheus")
        rules |= {(f"{port}/tcp", src) for src in networks(host, "monitoring")}
    own = address(host)
    return frozenset((to, src) for to, src in rules if src.split("/")[0] != own)


UFW_RULE = re.compile(r"^(?P<to>\S+)\s+ALLOW(?: IN)?\s+(?P<src>\S+)")


def ufw_rules(status: str) -> set[tuple[str, str]]:
    found = set()
    for line in status.splitlines():
        match = UFW_RULE.match(line.split("#", 1)[0].rstrip())
        if match:
            found.add((match["to"], match["src"]))
    return found


def allowed_from(host: str, port: str, source: str) -> bool:
    ip = ipaddress.ip_address(source)
    return any(
        to == f"{port}/tcp" and ip in ipaddress.ip_network(src, strict=False) for to, src in expected_rules(host)
    )


def all_targets() -> list[str]:
    return [t for host in managed_hosts() for t in probe_targets(host)]


def probe_targets(host: str) -> list[str]:
    ports = sorted({to.split("/")[0] for to, _ in expected_rules(host) if to != "Anywhere"} | {"22"}, key=int)
    return [f"{address(host)}:{port}" for port in ports]


@cache
def controller_address() -> str:
    """The controller as the hosts see it: their default gateway (the docker network's bridge)."""
    route = node(managed_hosts()[0]).check_output("ip -4 route show default")
    return route.split()[2]


# ---- ufw itself -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", managed_hosts())
def test_ufw_is_active_and_denies_incoming_by_default(name: str) -> None:
    status = node(name).check_output("ufw status verbose")
    assert "Status: active" in status
    assert "Default: deny (incoming), allow (outgoing), deny (routed)" in status
    assert node(name).service("ufw").is_enabled


@pytest.mark.parametrize("name", managed_hosts())
def test_ufw_lists_exactly_the_rules_the_inventory_implies(name: str) -> None:
    listed = ufw_rules(node(name).check_output("ufw status"))
    expected = set(expected_rules(name))
    assert listed - expected == set(), "rules the inventory does not imply"
    assert expected - listed == set(), "rules the inventory implies but ufw lacks"


# ---- packets ----------------------------------------------------------------------------------------


def assert_knocks_match_rules(results: dict[str, str], source: str) -> None:
    wrong = {}
    for host in managed_hosts():
        for target in probe_targets(host):
            port = target.rsplit(":", 1)[1]
            allowed = allowed_from(host, port, source)
            got = results[target]
            if allowed and got not in ("open", "refused"):
                wrong[f"{host} {target}"] = f"{got}, but a rule allows {source}"
            if not allowed and got != "timeout":
                wrong[f"{host} {target}"] = f"{got}, but no rule allows {source}: it should be dropped"
    assert wrong == {}


@pytest.mark.parametrize("probe", hosts_in("firewall_probes"))
def test_probe_host_gets_through_exactly_where_a_rule_lets_it(probe: str) -> None:
    """The outsider is dropped everywhere (controller, inter-broker, ZooKeeper, client, SSH ports);
    a probe in a client network reaches the client listeners and nothing else."""
    host = node(probe)
    script = host.run(f"python3 -c {shlex.quote(KNOCK)} " + " ".join(all_targets()))
    assert script.rc == 0, script.stderr
    results = json.loads(script.stdout)
    assert_knocks_match_rules(results, address(probe))
    # The outsider is in no allowed network: then nothing at all may answer it.
    if not any(allowed_from(h, t.rsplit(":", 1)[1], address(probe)) for h in managed_hosts() for t in probe_targets(h)):
        assert set(results.values()) == {"timeout"}


def test_controller_gets_through_exactly_where_a_rule_lets_it() -> None:
    """The controller is a client, an admin and a monitor, but never a cluster member: the KRaft
    controller port (and any ZooKeeper port) drops it, while SSH and the client listeners answer."""
    assert_knocks_match_rules(knock_locally(all_targets()), controller_address())


# ---- clients through the firewall -------------------------------------------------------------------


def kafka_python_zip(tmp: Path) -> Path:
    """kafka-python (pure Python) as one zip a probe host can put on sys.path."""
    package = Path(kafka.__file__).parent
    target = tmp / "kafka-python.zip"
    with zipfile.ZipFile(target, "w") as zf:
        # Sources and the protocol's JSON schemas (read as package resources), no bytecode caches.
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, Path("kafka") / path.relative_to(package))
    return target


CLIENT = r"""
import json, sys
sys.path.insert(0, "/tmp/kafka-python.zip")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, topic, count, security = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
producer = KafkaProducer(**security, bootstrap_servers=bootstrap, acks="all", client_id="probe")
acked = [producer.send(topic, value=str(i).encode()).get(timeout=60) for i in range(count)]
producer.close()
consumer = KafkaConsumer(**security, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
                         consumer_timeout_ms=20000, client_id="probe")
parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
consumer.assign(parts)
values = sorted(int(m.value) for m in consumer)
print(json.dumps({"acked": len(acked), "partitions": sorted({a.partition for a in acked}), "values": values}))
"""


def client_probes() -> list[str]:
    """Probe hosts inside a client network of the brokers (the molecule default scenario has one)."""
    return [
        p
        for p in hosts_in("firewall_probes")
        if any(
            ipaddress.ip_address(address(p)) in ipaddress.ip_network(n)
            for b in hosts_in("kafka_broker")
            for n in networks(b, "client")
        )
    ]


@pytest.mark.parametrize("probe", client_probes())
def test_client_in_an_allowed_network_produces_and_consumes_through_the_client_listener(
    probe: str, cluster: Cluster, tmp_path: Path
) -> None:
    topic = f"verify-firewall-{uuid.uuid4().hex[:8]}"
    e2e.create_topic(cluster.bootstrap, topic, partitions=len(cluster.brokers), replication=len(cluster.brokers))
    try:
        host = node(probe)
        copied = host.ansible("copy", f"src={kafka_python_zip(tmp_path)} dest=/tmp/kafka-python.zip", check=False)
        assert not copied.get("failed"), copied
        # The cluster's client settings (TLS, the project CA), with the CA copied to the probe.
        security = kafka_client.settings()
        if "ssl_cafile" in security:
            copied = host.ansible("copy", f"src={security['ssl_cafile']} dest=/tmp/kafkalab-ca.pem", check=False)
            assert not copied.get("failed"), copied
            security["ssl_cafile"] = "/tmp/kafkalab-ca.pem"
        result = host.run(
            f"python3 -c {shlex.quote(CLIENT)} {cluster.bootstrap} {topic} 300 {shlex.quote(json.dumps(security))}"
        )
        assert result.rc == 0, result.stderr[-2000:]
        data = json.loads(result.stdout)
        assert data["acked"] == 300
        assert data["values"] == list(range(300))
    finally:
        e2e.delete_topic(cluster.bootstrap, topic)


def external_names(cluster: Cluster) -> set[str]:
    """The listeners the inventory marks external."""
    return {
        item["name"] for item in host_variables(cluster.brokers[0]).get("kafka_listeners", []) if item.get("external")
    }


def external_listeners(cluster: Cluster) -> dict[str, str]:
    """broker -> its advertised address on the external listener (the one the inventory marks external)."""
    names = external_names(cluster)
    found = {}
    for broker in cluster.brokers:
        for item in cluster.properties[broker].get("advertised.listeners", "").split(","):
            name, _, rest = item.partition("://")
            if name in names:
                found[broker] = rest
    return found


def test_external_listener_behind_nat_serves_every_broker_from_one_published_address(cluster: Cluster) -> None:
    external = external_listeners(cluster)
    if not external:
        pytest.skip("this inventory declares no external listener (kafka_listeners item with external: true)")
    assert set(external) == set(cluster.brokers)
    # Each broker is advertised under its own NAT address, none of them a cluster address.
    assert len(set(external.values())) == len(cluster.brokers)
    first = external[cluster.brokers[0]]
    # The external listener's own protocol (the lab secures it, and may keep the internal one plain).
    security = listener_security(cluster.properties[cluster.brokers[0]], next(iter(external_names(cluster))))
    admin = KafkaAdminClient(**security, bootstrap_servers=first, client_id="verify-nat")
    topic = f"verify-nat-{uuid.uuid4().hex[:8]}"
    try:
        seen = {f"{b['host']}:{b['port']}" for b in admin.describe_cluster()["brokers"]}
        assert seen == set(external.values()), "the cluster describes itself to NAT clients by the NAT addresses"
        admin.create_topics([NewTopic(topic, len(cluster.brokers), len(cluster.brokers))])
        admin.wait_for_topics([topic], timeout_ms=60_000)

        # The topic can exist in the metadata before its partitions and leaders do (seen once on the lab: an
        # empty partition list right after wait_for_topics): read until every partition has its leader.
        def led_partitions() -> list[dict[str, Any]]:
            partitions = admin.describe_topics([topic])[0]["partitions"]
            whole = len(partitions) == len(cluster.brokers) and all(p["leader_id"] >= 0 for p in partitions)
            return partitions if whole else []

        partitions = wait_until(led_partitions, 60, f"every partition of {topic} to have its leader")
        leaders = {p["leader_id"] for p in partitions}
        assert leaders == {cluster.node_id(b) for b in cluster.brokers}, "one partition led by each broker"
        # Produced through NAT, read back through the internal listener, and the other way round.
        internal = kafka_client.settings() or {"security_protocol": "PLAINTEXT"}
        through_nat = e2e.round_trip(
            first, topic, 600, consumer_bootstrap=cluster.bootstrap, security=security, consumer_security=internal
        )
        assert through_nat.ok and through_nat.consumed == 600, through_nat.summary()
        through_internal = e2e.round_trip(
            cluster.bootstrap, topic, 600, consumer_bootstrap=first, security=internal, consumer_security=security
        )
        assert through_internal.ok and through_internal.consumed == 600, through_internal.summary()
    finally:
        admin.delete_topics([topic])
        admin.close()


@pytest.mark.changes_cluster
def test_a_run_that_would_cut_its_own_ssh_connection_is_refused_before_any_change() -> None:
    """Over SSH (the lab, real VMs): admin networks that leave out where Ansible connects from stop the
    run in the read-only host preflight, naming host and variable; no rule changes anywhere."""
    first = managed_hosts()[0]
    if host_variables(first).get("ansible_connection", "ssh") not in ("ssh", "ansible.builtin.ssh", "paramiko"):
        pytest.skip("this inventory reaches its hosts without SSH (docker exec): nothing to lock out")
    before = {name: node(name).check_output("ufw status") for name in managed_hosts()}
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            inventory_path(),
            str(ROOT / "playbooks" / "firewall.yml"),
            "-e",
            json.dumps({"firewall_admin_networks": ["192.0.2.0/24"]}),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0
    flat = " ".join(result.stdout.split())
    assert f"{first}: this run reaches the host over SSH from" in flat, result.stdout[-3000:]
    assert "firewall_admin_networks (192.0.2.0/24)" in flat
    assert {name: node(name).check_output("ufw status") for name in managed_hosts()} == before
