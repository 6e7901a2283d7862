"""ZooKeeper-mode checks: each server of the ensemble, the ensemble as a whole, and its data.

Deselected in KRaft mode (conftest.py reads the mode from the nodes). The four-letter words go over
TCP with zk4lw, the client the zookeeper role installs on its hosts, run on another member of the
ensemble: the firewall admits only the cluster's members to the ZooKeeper ports, not the controller
(tests/cluster/test_firewall.py checks that). Znodes are written and read with the brokers'
zookeeper-shell, through each server in turn.
"""

from __future__ import annotations

import shlex
import time
import uuid
from typing import Any

import pytest
from conftest import (
    assert_java_service_runs,
    assert_sandboxed,
    cluster_mode,
    main_pid,
    process_environment,
    read_properties,
)
from inventory_hosts import group, host_script, inventory_path, node, runner

zk4lw = host_script("zookeeper", "zk4lw.py")

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
        result[name] = (address, int(cfg.get("clientPort") or cfg["secureClientPort"]))
    return result


def tls_on() -> bool:
    """zookeeper_tls: the servers serve their client port with TLS only (secureClientPort, no clientPort)."""
    return "secureClientPort" in read_properties(node(SERVERS[0]), ZOO_CFG)


ZK_TLS = "/etc/zookeeper/tls"


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
    tls = f"--tls {ZK_TLS} " if tls_on() else ""
    result = node(others[0]).run(f"/usr/local/bin/zk4lw {tls}{word} {address}:{port}")
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


# ---- zookeeper_tls ------------------------------------------------------------------------------------------------
# Asked from another member of the ensemble (the firewall admits members and brokers only): zk4lw's own code, with
# the TLS settings each case gives it. A server that refuses a client closes the connection before any answer.
PROBE = """
import importlib.machinery, importlib.util, ssl, sys
loader = importlib.machinery.SourceFileLoader("zk4lw", "/usr/local/bin/zk4lw")
zk4lw = importlib.util.module_from_spec(importlib.util.spec_from_loader("zk4lw", loader))
loader.exec_module(zk4lw)
host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
context = None
if mode != "plaintext":
    context = ssl.create_default_context(cafile=sys.argv[4] + "/ca.pem")
    if mode != "no-certificate":
        context.load_cert_chain(mode)
try:
    print(repr(zk4lw.four_letter_word(host, port, "ruok", tls=context)))
except OSError as exc:
    print("refused:", exc.__class__.__name__)
"""


def probe(server: str, mode: str) -> str:
    """ruok to `server` from another member, in plaintext, with TLS but no certificate, or showing key store `mode`."""
    other = next(name for name in SERVERS if name != server) if len(SERVERS) > 1 else server
    address, port = ensemble()[server]
    result = node(other).run(f"python3 -c {shlex.quote(PROBE)} {address} {port} {shlex.quote(mode)} {ZK_TLS}")
    assert result.rc == 0, result.stderr
    return str(result.stdout).strip()


@pytest.fixture(scope="module")
def other_ca_key_store() -> str:
    """A key store (key and certificate) from a CA the ensemble does not trust, on the first server."""
    if not SERVERS or not tls_on():
        pytest.skip("zookeeper_tls is off: the client port runs plaintext")
    path = "/root/kafkalab-other-ca.pem"
    made = node(SERVERS[0]).run(
        "set -e; d=$(mktemp -d); cd $d; "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=intruder "
        f"-keyout key.pem -out cert.pem 2>/dev/null; cat key.pem cert.pem > {path}; cd /; rm -rf $d"
    )
    assert made.rc == 0, made.stderr
    yield path
    node(SERVERS[0]).run(f"rm -f {path}")


@pytest.mark.parametrize("server", SERVERS[1:2])
def test_tls_client_port_answers_only_clients_with_a_project_certificate(server: str, other_ca_key_store: str) -> None:
    """The server's own key store passes; plaintext, TLS without a certificate and a certificate from another CA
    get no answer."""
    assert probe(server, f"{ZK_TLS}/node.pem") == "'imok'"
    for mode in ("plaintext", "no-certificate", other_ca_key_store):
        answer = probe(server, mode)
        assert "imok" not in answer, f"{mode}: {answer}"


def test_tls_quorum_ports_present_the_servers_certificate_from_the_project_ca() -> None:
    """sslQuorum: the election port (every server listens on it) speaks TLS with a certificate for its address."""
    if len(SERVERS) < 2 or not tls_on():
        pytest.skip("one server (no quorum), or zookeeper_tls is off")
    server, client = SERVERS[0], SERVERS[1]
    cfg = read_properties(node(server), ZOO_CFG)
    myid = node(server).file(f"{cfg['dataDir']}/myid").content_string.strip()
    address, _, election = cfg[f"server.{myid}"].split(":")
    result = node(client).run(
        f"openssl s_client -connect {address}:{election} -CAfile {ZK_TLS}/ca.pem -verify_ip {address} "
        f"-verify_return_error -cert {ZK_TLS}/node.pem -brief </dev/null"
    )
    assert "Verification: OK" in result.stderr, result.stdout + result.stderr


def test_kafka_znodes_are_writable_only_by_the_name_every_kafka_node_shares() -> None:
    """zookeeper.set.acl: /brokers/ids is Kafka's (x509:CN=kafka-zookeeper-client) and readable by all; a client
    with a valid certificate of another name (a ZooKeeper server's own) reads it but cannot write under it."""
    if not tls_on():
        pytest.skip("zookeeper_tls is off: Kafka sets no znode ACLs")
    # A broker that is a ZooKeeper server too holds both names' key stores.
    both = [name for name in group("kafka_broker") if name in SERVERS]
    if not both:
        pytest.skip("no broker host is also a ZooKeeper server")
    client = node(both[0])
    address = "{}:{}".format(*ensemble()[SERVERS[0]])
    acl = client.run(f"zookeeper-shell {address} getAcl /brokers/ids")
    assert acl.rc == 0, acl.stderr
    text = " ".join(acl.stdout.split())
    assert "'x509,'CN=kafka-zookeeper-client : cdrwa" in text, acl.stdout
    assert "'world,'anyone : r" in text, acl.stdout
    assert "'world,'anyone : cdrwa" not in text, acl.stdout
    # Another name: the server's own certificate (CN=<server>), as zookeeper-shell's TLS settings.
    other = "/root/kafkalab-other-name.properties"
    settings = client.file("/etc/kafka/zookeeper-client.properties").content_string.replace(
        "/etc/kafka/tls/zookeeper-client.pem", f"{ZK_TLS}/node.pem"
    )
    assert f"{ZK_TLS}/node.pem" in settings
    client.run(f"printf %s {shlex.quote(settings)} > {other}")
    try:
        read = client.run(f"zookeeper-shell {address} -zk-tls-config-file {other} ls /brokers/ids")
        assert read.rc == 0 and "[" in read.stdout, read.stdout + read.stderr
        path = f"/brokers/ids/kafkalab-intruder-{uuid.uuid4().hex[:6]}"
        write = client.run(f"zookeeper-shell {address} -zk-tls-config-file {other} create {path} x")
        assert f"Created {path}" not in write.stdout + write.stderr, "another name wrote under /brokers/ids"
        assert "Insufficient permission" in write.stdout + write.stderr, write.stdout + write.stderr
    finally:
        client.run(f"rm -f {other}")
