"""ZooKeeper mode rendered by the roles themselves (real preflight, real templates), no containers.

Each case writes an inventory, runs tests/render/zookeeper.yml with ansible-playbook on the
controller, and reads back the rendered files (zoo.cfg, myid, units, server.properties, the CLI
dispatcher), or checks that bad input stops the run in the preflight play, before any host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties

from kafkalab.ansible_driver import PlaybookRun, run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "tests" / "render" / "zookeeper.yml"
ZK_VARS = {"kafka_archive_source": "url", "kafka_mode": "zookeeper", "kafka_version": "3.9.2"}


def hosts(n: int) -> dict[str, dict[str, Any]]:
    return {
        f"node{i}": {"ansible_host": f"192.0.2.{10 + i}", "kafka_node_id": i, "zookeeper_myid": i}
        for i in range(1, n + 1)
    }


def render(
    tmp: Path,
    hostvars: dict[str, dict[str, Any]],
    group_vars: dict[str, Any],
    brokers: list[str],
    zookeepers: list[str],
    controllers: list[str] | None = None,
) -> PlaybookRun:
    inv = {
        "all": {
            "vars": group_vars,
            "hosts": hostvars,
            "children": {
                "kafka": {
                    "children": {
                        "kafka_controller": {"hosts": {h: None for h in controllers or []}},
                        "kafka_broker": {"hosts": {h: None for h in brokers}},
                    }
                },
                "zookeeper": {"hosts": {h: None for h in zookeepers}},
            },
        }
    }
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inv))
    (tmp / "out").mkdir(exist_ok=True)
    return run_playbook(
        PLAYBOOK,
        tmp / "hosts.yml",
        extra_vars={"render_out": str(tmp / "out")},
        env={"ANSIBLE_FACT_CACHING": "memory"},
        cwd=ROOT,
        timeout=300,
    )


def test_three_nodes_render_an_ensemble_and_zookeeper_mode_brokers(tmp_path: Path) -> None:
    hv = hosts(3)
    names = list(hv)
    result = render(tmp_path, hv, {**ZK_VARS, "kafka_zookeeper_chroot": "/kafka"}, names, names)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    for i, name in enumerate(names, start=1):
        assert (out / f"{name}.myid").read_text() == str(i)
        cfg = parse_properties((out / f"{name}.zoo.cfg").read_text())
        assert {k: v for k, v in cfg.items() if k.startswith("server.")} == {
            f"server.{j}": f"192.0.2.{10 + j}:2888:3888" for j in range(1, 4)
        }
        assert cfg["clientPort"] == "2181"
        assert cfg["dataDir"] == "/var/lib/zookeeper"
        assert cfg["4lw.commands.whitelist"] == "ruok,srvr,mntr"
        unit = (out / f"{name}.zookeeper.service").read_text()
        assert "User=zookeeper\n" in unit
        assert 'Environment="KAFKA_HEAP_OPTS=-Xms1g -Xmx1g"\n' in unit
        assert "ExecStart=/opt/zookeeper/current/bin/zookeeper-server-start.sh /etc/zookeeper/zoo.cfg\n" in unit
        assert "ReadWritePaths=-/var/lib/zookeeper -/var/log/zookeeper\n" in unit

        props = parse_properties((out / f"{name}.server.properties").read_text())
        assert props["broker.id"] == str(i)
        assert props["zookeeper.connect"] == "192.0.2.11:2181,192.0.2.12:2181,192.0.2.13:2181/kafka"
        assert props["advertised.listeners"] == f"INTERNAL://192.0.2.{10 + i}:9092"
        assert props["default.replication.factor"] == "3"
        assert props["min.insync.replicas"] == "2"
        assert "process.roles" not in props and "node.id" not in props
        # Kafka 3.x logs through reload4j (log4j 1): the unit and the CLI point at log4j.properties files.
        kafka_unit = (out / f"{name}.kafka.service").read_text()
        assert 'Environment="KAFKA_LOG4J_OPTS=-Dlog4j.configuration=file:/etc/kafka/log4j.properties"\n' in kafka_unit
        cli = (out / f"{name}.kafka-cli.sh").read_text()
        assert 'KAFKA_LOG4J_OPTS="-Dlog4j.configuration=file:/etc/kafka/tools-log4j.properties"' in cli
        assert "  zookeeper-shell) ;;\n" in cli


def test_zookeeper_tls_secures_the_client_port_the_quorum_and_the_brokers_connection(tmp_path: Path) -> None:
    """zookeeper_tls: no plaintext port, the quorum on TLS, x509 clients; the brokers follow it with their own key
    store, the name every Kafka node shares, znode ACLs, and zookeeper-shell reads the same settings."""
    hv = hosts(3)
    names = list(hv)
    result = render(tmp_path, hv, {**ZK_VARS, "zookeeper_tls": True, "zookeeper_client_port": 2182}, names, names)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    for name in names:
        cfg = parse_properties((out / f"{name}.zoo.cfg").read_text())
        assert "clientPort" not in cfg
        assert cfg["secureClientPort"] == "2182"
        assert cfg["serverCnxnFactory"] == "org.apache.zookeeper.server.NettyServerCnxnFactory"
        assert cfg["authProvider.x509"] == "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
        assert cfg["ssl.clientAuth"] == "need"
        assert cfg["sslQuorum"] == "true"
        for prefix in ("ssl.", "ssl.quorum."):
            assert cfg[prefix + "keyStore.location"] == "/etc/zookeeper/tls/node.pem"
            assert cfg[prefix + "trustStore.location"] == "/etc/zookeeper/tls/ca.pem"
            assert cfg[prefix + "keyStore.type"] == cfg[prefix + "trustStore.type"] == "PEM"
        props = parse_properties((out / f"{name}.server.properties").read_text())
        assert props["zookeeper.connect"] == "192.0.2.11:2182,192.0.2.12:2182,192.0.2.13:2182"
        assert props["zookeeper.ssl.client.enable"] == "true"
        assert props["zookeeper.clientCnxnSocket"] == "org.apache.zookeeper.ClientCnxnSocketNetty"
        assert props["zookeeper.ssl.keystore.location"] == "/etc/kafka/tls/zookeeper-client.pem"
        assert props["zookeeper.ssl.truststore.location"] == "/etc/kafka/tls/ca.pem"
        assert props["zookeeper.set.acl"] == "true"
        cli = (out / f"{name}.kafka-cli.sh").read_text()
        assert 'zookeeper_client="/etc/kafka/zookeeper-client.properties"' in cli


def test_kraft_on_kafka_4_keeps_log4j2_and_no_zookeeper_shell(tmp_path: Path) -> None:
    hv = hosts(1)
    result = render(tmp_path, hv, {"kafka_archive_source": "url"}, ["node1"], [], controllers=["node1"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    unit = (tmp_path / "out" / "node1.kafka.service").read_text()
    assert 'Environment="KAFKA_LOG4J_OPTS=-Dlog4j2.configurationFile=/etc/kafka/log4j2.properties"\n' in unit
    cli = (tmp_path / "out" / "node1.kafka-cli.sh").read_text()
    assert 'export KAFKA_LOG4J_OPTS="-Dlog4j2.configurationFile=/etc/kafka/tools-log4j2.properties"\n' in cli
    assert "zookeeper-shell" not in cli
    props = parse_properties((tmp_path / "out" / "node1.server.properties").read_text())
    assert props["process.roles"] == "broker,controller"


@pytest.mark.parametrize(
    "case,expected",
    [
        ("even-ensemble", "the ZooKeeper ensemble has 2 servers (node1, node2): it must be odd"),
        ("empty-ensemble", "kafka_mode is zookeeper but the ZooKeeper group is empty or missing"),
        ("duplicate-myid", "node3: zookeeper_myid 1 is already used by node1"),
        ("duplicate-broker-id", "node3: kafka_node_id 2 is already used by node2 (it becomes broker.id)"),
        (
            "kafka-4",
            "kafka_version is 4.3.1: Kafka 4 removed ZooKeeper mode (it runs KRaft only). Pin kafka_version: 3.9.2",
        ),
        ("missing-myid", "node2: zookeeper_myid is not set"),
        ("missing-address", "node4: no address for ZooKeeper"),
    ],
)
def test_bad_zookeeper_inventory_stops_before_any_host(tmp_path: Path, case: str, expected: str) -> None:
    hv = hosts(3)
    names = list(hv)
    group_vars: dict[str, Any] = dict(ZK_VARS)
    zookeepers = names
    if case == "even-ensemble":
        zookeepers = names[:2]
    elif case == "empty-ensemble":
        zookeepers = []
    elif case == "duplicate-myid":
        hv["node3"]["zookeeper_myid"] = 1
    elif case == "duplicate-broker-id":
        hv["node3"]["kafka_node_id"] = 2
    elif case == "kafka-4":
        group_vars["kafka_version"] = "4.3.1"
    elif case == "missing-myid":
        del hv["node2"]["zookeeper_myid"]
    elif case == "missing-address":
        # A ZooKeeper-only host listed in the group with neither an address nor a myid.
        hv["node4"] = {}
        zookeepers = ["node1", "node2", "node4"]
    result = render(tmp_path, hv, group_vars, names, zookeepers)
    assert result.returncode != 0
    assert expected in " ".join(result.stdout.split()), result.stdout[-3000:]
    assert "nothing was changed" in result.stdout
    # The preflight play on the controller failed, so no per-host play ran.
    assert "Render each" not in result.stdout
    assert not any((tmp_path / "out").iterdir())
