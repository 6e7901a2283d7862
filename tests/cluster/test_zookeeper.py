"""ZooKeeper-mode checks: each server of the ensemble, the ensemble as a whole, and its data.

Deselected in KRaft mode (conftest.py reads the mode from the nodes). The four-letter words go over
TCP with zk4lw, the client the zookeeper role installs on its hosts, run on another member of the
ensemble: the firewall admits only the cluster's members to the ZooKeeper ports, not the controller
(tests/cluster/test_firewall.py checks that). Znodes are written and read with the brokers'
zookeeper-shell, through each server in turn.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import zk4lw
from conftest import (
    assert_java_service_runs,
    assert_sandboxed,
    cluster_mode,
    main_pid,
    process_environment,
    read_properties,
)
from inventory_hosts import group, inventory_path, node, runner

pytestmark = pytest.mark.zookeeper

# Only the ZooKeeper servers; in KRaft mode the module's tests are deselected and the list is empty.
SERVERS = group("zookeeper") if cluster_mode() == "zookeeper" else []
testinfra_hosts = [f"ansible://{name}?ansible_inventory={inventory_path()}" for name in SERVERS]
ZOO_CFG = "/etc/zookeeper/zoo.cfg"


def ensemble() -> dict[str, tuple[str, int]]:
    """Each server's client address, as the servers' own zoo.cfg and myid files say."""
    result = {}
    for name in SERVERS:
        host = node(name)
        cfg = read_properties(host, ZOO_CFG)
        myid = host.file(f"{cfg['dataDir']}/myid").content_string.strip()
        address = cfg[f"server.{myid}"].split(":")[0]
        result[name] = (address, int(cfg["clientPort"]))
    return result


@pytest.fixture
def hostvars(host: Any) -> dict[str, Any]:
    return dict(runner().get_variables(host.backend.get_hostname()))


def test_zookeeper_service_is_enabled_and_runs_as_its_own_user_with_the_configured_heap(host: Any) -> None:
    assert_java_service_runs(host, "zookeeper", "zookeeper", "org.apache.zookeeper.server.quorum.QuorumPeerMain")


def test_zookeeper_runs_sandboxed_writing_only_its_data_and_its_logs(host: Any, hostvars: dict[str, Any]) -> None:
    unit = hostvars.get("zookeeper_service_name", "zookeeper")
    cfg = read_properties(host, ZOO_CFG)
    env = process_environment(host, main_pid(host, unit))
    log_dir = env.get("LOG_DIR") or env["ZOO_LOG_DIR"]  # Kafka's scripts, or Apache ZooKeeper's zkServer.sh
    assert_sandboxed(host, unit, sorted({cfg["dataDir"], cfg.get("dataLogDir", cfg["dataDir"]), log_dir}))


def test_myid_file_holds_this_servers_zookeeper_myid(host: Any, hostvars: dict[str, Any]) -> None:
    cfg = read_properties(host, ZOO_CFG)
    assert host.file(f"{cfg['dataDir']}/myid").content_string.strip() == str(hostvars["zookeeper_myid"])


def test_zoo_cfg_lists_every_server_with_peer_and_election_ports(host: Any) -> None:
    cfg = read_properties(host, ZOO_CFG)
    lines = {k: v for k, v in cfg.items() if k.startswith("server.")}
    expected = {f"server.{runner().get_variables(name)['zookeeper_myid']}" for name in SERVERS}
    assert set(lines) == expected
    for value in lines.values():
        _, peer, election = value.split(":")
        assert (int(peer), int(election)) == (2888, 3888)
    assert set(cfg["4lw.commands.whitelist"].split(",")) >= {"ruok", "srvr", "mntr"}


def ask(server: str, word: str) -> str:
    """A four-letter word sent to `server` over the network from another member of the ensemble."""
    others = [name for name in SERVERS if name != server] or [server]
    address, port = ensemble()[server]
    result = node(others[0]).run(f"/usr/local/bin/zk4lw {word} {address}:{port}")
    assert result.rc == 0, f"{others[0]} -> {server}: {result.stderr}"
    return str(result.stdout)


@pytest.mark.parametrize("server", SERVERS)
def test_every_server_answers_ruok(server: str) -> None:
    assert ask(server, "ruok") == "imok"


def test_srvr_shows_exactly_one_leader_and_the_rest_followers() -> None:
    """An ensemble of one (the classroom layout) has no quorum to lead: ZooKeeper runs it standalone."""
    modes = {name: zk4lw.mode_of(ask(name, "srvr")) for name in SERVERS}
    expected = ["standalone"] if len(SERVERS) == 1 else ["leader"] + ["follower"] * (len(SERVERS) - 1)
    assert sorted(modes.values()) == sorted(expected), modes


@pytest.fixture(scope="module")
def znode() -> Any:
    """A znode written through the first server (with a broker's zookeeper-shell), removed afterwards."""
    client = node(group("kafka_broker")[0])
    writer = "{}:{}".format(*ensemble()[SERVERS[0]])
    path, value = f"/kafkalab-verify-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    created = client.run(f"zookeeper-shell {writer} create {path} {value}")
    # The shell reports "Created <path>" on stderr; the data of `get` comes on stdout.
    assert created.rc == 0 and f"Created {path}" in created.stderr, created.stdout + created.stderr
    yield client, path, value
    client.run(f"zookeeper-shell {writer} delete {path}")


@pytest.mark.parametrize("reader", SERVERS[1:])
def test_znode_written_through_one_server_is_read_through_every_other(znode: Any, reader: str) -> None:
    client, path, value = znode
    address = "{}:{}".format(*ensemble()[reader])
    # A follower applies the leader's commit a moment later; give it a few seconds, not forever.
    deadline = time.monotonic() + 15
    while True:
        result = client.run(f"zookeeper-shell {address} get {path}")
        if value in result.stdout.splitlines() or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert value in result.stdout.splitlines(), result.stdout + result.stderr
