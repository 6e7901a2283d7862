"""Per-node checks: Java, the Kafka service, its ports, its own configuration and storage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import (
    ID_PROPERTY,
    assert_java_service_runs,
    assert_sandboxed,
    kafka_nodes,
    main_pid,
    process_environment,
    read_properties,
)
from inventory_hosts import group, inventory_path, kafka_address, kafka_properties_path, kafka_unit, runner

testinfra_hosts = [f"ansible://{name}?ansible_inventory={inventory_path()}" for name in kafka_nodes()]


@pytest.fixture
def props(host: Any) -> dict[str, str]:
    return read_properties(host, kafka_properties_path(host.backend.get_hostname()))


@pytest.fixture
def hostvars(host: Any) -> dict[str, Any]:
    return dict(runner().get_variables(host.backend.get_hostname()))


# The OpenJDK each Debian release ships (roles/java/vars/Debian-<major>.yml): 12 has 17, 13 has only 21.
DEBIAN_JAVA = {"12": "17", "13": "21"}


def test_java_runtime_is_the_releases_openjdk(host: Any) -> None:
    release = host.file("/etc/debian_version").content_string.strip().split(".")[0]
    result = host.run("java -version")
    assert result.rc == 0
    assert f'version "{DEBIAN_JAVA[release]}' in result.stderr, (release, result.stderr)


def test_kafka_service_is_enabled_and_runs_as_its_own_user_with_the_configured_heap(host: Any) -> None:
    assert_java_service_runs(host, kafka_unit(host.backend.get_hostname()), "kafka", "kafka.Kafka")


def test_kafka_runs_sandboxed_writing_only_its_log_dirs_and_its_logs(host: Any, props: dict[str, str]) -> None:
    unit = kafka_unit(host.backend.get_hostname())
    log_dir = process_environment(host, main_pid(host, unit))["LOG_DIR"]
    metadata = [props["metadata.log.dir"]] if "metadata.log.dir" in props else []
    assert_sandboxed(host, unit, [*props["log.dirs"].split(","), log_dir, *metadata])


def test_kafka_listens_on_its_ports(host: Any, props: dict[str, str]) -> None:
    for listener in props["listeners"].split(","):
        port = listener.rsplit(":", 1)[1]
        assert host.socket(f"tcp://0.0.0.0:{port}").is_listening, listener


def is_broker(props: dict[str, str], mode: str) -> bool:
    return mode == "zookeeper" or "broker" in props["process.roles"]


def test_properties_hold_this_nodes_id_and_address(
    host: Any, props: dict[str, str], hostvars: dict[str, Any], mode: str
) -> None:
    assert props[ID_PROPERTY[mode]] == str(hostvars["kafka_node_id"])
    address = kafka_address(host.backend.get_hostname())
    if is_broker(props, mode):
        assert f"//{address}:" in props["advertised.listeners"]


@pytest.mark.kraft
def test_the_quorums_voters_are_the_inventorys_controllers(
    host: Any, props: dict[str, str], hostvars: dict[str, Any]
) -> None:
    """Every node, broker-only ones too, finds the same quorum, whose voters are the kafka_controller hosts, this
    node among them exactly when it is one. A static quorum names them in controller.quorum.voters; a dynamic one
    (KIP-853, new clusters) holds them in its metadata log: read from the running quorum, through this node's
    controller.quorum.bootstrap.servers."""
    expected = {str(runner().get_variables(name)["kafka_node_id"]) for name in group("kafka_controller")}
    is_controller = "controller" in props["process.roles"].split(",")
    address = kafka_address(host.backend.get_hostname())
    name = props["controller.listener.names"].split(",")[0]
    port = (
        next(li for li in props["listeners"].split(",") if li.startswith(f"{name}://")).rsplit(":", 1)[1]
        if is_controller
        else ""
    )
    if "controller.quorum.voters" in props:
        voters = {v.split("@", 1)[0] for v in props["controller.quorum.voters"].split(",")}
        if is_controller:
            assert f"{hostvars['kafka_node_id']}@{address}:{port}" in props["controller.quorum.voters"].split(",")
    else:
        bootstrap = props["controller.quorum.bootstrap.servers"]
        status = host.run(f"kafka-metadata-quorum --bootstrap-controller {bootstrap} describe --status")
        assert status.rc == 0, status.stderr
        line = next(li for li in status.stdout.splitlines() if li.startswith("CurrentVoters:"))
        voters = {str(v["id"]) for v in json.loads(line.split(":", 1)[1])}
        if is_controller:
            assert f"{address}:{port}" in bootstrap.split(",")
            # What add-controller registered, and what the initial voters were formatted with.
            assert f"{name}://{address}:{port}" in props["advertised.listeners"].split(",")
    assert voters == expected
    assert (str(hostvars["kafka_node_id"]) in voters) == is_controller


@pytest.mark.zookeeper
def test_properties_connect_to_every_zookeeper_server(props: dict[str, str], hostvars: dict[str, Any]) -> None:
    servers, _, chroot = props["zookeeper.connect"].partition("/")
    expected = set()
    for name in group("zookeeper"):
        zk = runner().get_variables(name)
        address = zk.get("zookeeper_address") or zk.get("kafka_advertised_host") or zk["ansible_host"]
        expected.add(f"{address}:{hostvars.get('zookeeper_client_port', 2181)}")
    assert set(servers.split(",")) == expected
    assert ("/" + chroot if chroot else "") == hostvars.get("kafka_zookeeper_chroot", "")
    assert "process.roles" not in props and "controller.quorum.voters" not in props


def test_storage_belongs_to_this_node(host: Any, props: dict[str, str], mode: str) -> None:
    # KRaft: written by kafka-storage format; ZooKeeper mode: by the broker on first start.
    for log_dir in props["log.dirs"].split(","):
        meta = read_properties(host, f"{log_dir}/meta.properties")
        assert meta[ID_PROPERTY[mode]] == props[ID_PROPERTY[mode]]
        assert len(meta["cluster.id"]) == 22


def test_command_line_wrappers_reach_the_cluster(host: Any, props: dict[str, str], mode: str) -> None:
    if is_broker(props, mode):
        listener = props["inter.broker.listener.name"]
        address = next(i.split("://")[1] for i in props["advertised.listeners"].split(",") if i.startswith(listener))
        result = host.run(f"kafka-broker-api-versions --bootstrap-server {address}")
    else:
        # The node's own address, which its certificate names when the controller listener runs TLS.
        port = props["listeners"].rsplit(":", 1)[1]
        address = kafka_address(host.backend.get_hostname())
        result = host.run(f"kafka-metadata-quorum --bootstrap-controller {address}:{port} describe --status")
    assert result.rc == 0, result.stderr


def test_each_tls_listener_reads_the_key_store_the_inventory_asks_for(
    host: Any, props: dict[str, str], hostvars: dict[str, Any]
) -> None:
    """kafka_tls_keystore_type: PEM (node.pem: the key and the certificate, no password anywhere) or PKCS12
    (node.p12, made on the node; its password only in keystore.properties, root's and Kafka's group's, which Kafka
    reads through its FileConfigProvider; server.properties holds a reference, not the password). The PKCS12 store
    opens with that password and holds the certificate the node was given (cert.pem)."""
    # The listeners' stores (listener.name.<l>.ssl.*), not the one a node shows ZooKeeper (zookeeper.ssl.*).
    stores = {
        k[: -len("ssl.keystore.location")]: v
        for k, v in props.items()
        if k.startswith("listener.name.") and k.endswith(".ssl.keystore.location")
    }
    if not stores:
        pytest.skip("no listener of this node runs TLS")
    wanted = str(hostvars.get("kafka_tls_keystore_type") or "PEM")
    for prefix, location in sorted(stores.items()):
        assert props[prefix + "ssl.keystore.type"] == wanted, prefix
        tls_dir = location.rsplit("/", 1)[0]
        if wanted == "PEM":
            assert location == f"{tls_dir}/node.pem" and prefix + "ssl.keystore.password" not in props
            continue
        password_file = f"{tls_dir}/keystore.properties"
        assert location == f"{tls_dir}/node.p12"
        assert props[prefix + "ssl.keystore.password"] == f"${{file:{password_file}:password}}"
        assert props[prefix + "ssl.key.password"] == props[prefix + "ssl.keystore.password"]
        stat = host.file(password_file)
        assert stat.user == "root" and stat.mode == 0o640, (password_file, stat.user, oct(stat.mode))
        served = host.run(
            f"export KS=\"$(sed -n 's/^password=//p' {password_file})\" && "
            f"openssl pkcs12 -in {location} -nokeys -clcerts -passin env:KS | openssl x509 -noout -fingerprint -sha256"
        )
        given = host.run(f"openssl x509 -in {tls_dir}/cert.pem -noout -fingerprint -sha256")
        assert served.rc == 0 and served.stdout.strip() == given.stdout.strip(), (served.stderr, given.stdout)
