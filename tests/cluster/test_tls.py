"""TLS on Kafka's listeners. The KRaft controller listener (kafka_controller_listener.protocol SSL): mutual TLS
between the controllers and every node that dials them, certificates from the project CA naming each node, keys
that stay where they were made. Client and inter-broker listeners with protocol SSL: each broker's certificate
names its advertised address, and clients that trust another CA, dial another name or speak plaintext are
refused. Each node's certificate expiry reaches Prometheus (the KafkaCertificateExpiresSoon alert) and the cluster
report reads it on the wire as openssl does. Runs where the inventory asks for it (the lab, the default scenario)."""

from __future__ import annotations

import os
import socket
import ssl
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Cluster, kafka_nodes, listener_protocol, read_properties
from inventory_hosts import ca_dir, inventory_listing, inventory_path, kafka_address, kafka_properties_path, runner
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaTimeoutError
from prometheus_api import Prometheus, wait_until

from kafkalab import report
from kafkalab.ansible_driver import group_hosts

testinfra_hosts = [f"ansible://{name}?ansible_inventory={inventory_path()}" for name in kafka_nodes()]


def _controller_protocol() -> str:
    nodes = kafka_nodes()
    listener = runner().get_variables(nodes[0]).get("kafka_controller_listener") or {} if nodes else {}
    return str(listener.get("protocol", "PLAINTEXT"))


pytestmark = pytest.mark.skipif(
    _controller_protocol() != "SSL", reason="the inventory's controller listener is not TLS"
)


@pytest.fixture
def props(host: Any) -> dict[str, str]:
    return read_properties(host, kafka_properties_path(host.backend.get_hostname()))


@pytest.fixture
def tls(props: dict[str, str]) -> dict[str, str]:
    """The node's TLS files, as its server.properties names them."""
    name = props["controller.listener.names"].split(",")[0].lower()
    keystore = props[f"listener.name.{name}.ssl.keystore.location"]
    folder = os.path.dirname(keystore)
    return {
        "dir": folder,
        "node": keystore,
        "ca": props[f"listener.name.{name}.ssl.truststore.location"],
        "cert": f"{folder}/cert.pem",
        "key": f"{folder}/key.pem",
        "client": os.path.join(os.path.dirname(folder), "controller-client.properties"),
    }


def _controller_endpoint(host: Any, props: dict[str, str]) -> str:
    """Where other nodes dial this controller: its address (what its certificate must name) and port."""
    address = kafka_address(host.backend.get_hostname())
    name = props["controller.listener.names"].split(",")[0]
    port = next(li for li in props["listeners"].split(",") if li.startswith(f"{name}://")).rsplit(":", 1)[1]
    return f"{address}:{port}"


def _is_controller(props: dict[str, str]) -> bool:
    return "controller" in props.get("process.roles", "").split(",")


def test_controller_listener_runs_mutual_tls(props: dict[str, str]) -> None:
    name = props["controller.listener.names"].split(",")[0]
    assert f"{name}:SSL" in props["listener.security.protocol.map"].split(",")
    assert props[f"listener.name.{name.lower()}.ssl.client.auth"] == "required"
    assert not [key for key in props if "password" in key]


def test_node_certificate_is_the_project_cas_and_names_the_nodes_address(host: Any, tls: dict[str, str]) -> None:
    address = kafka_address(host.backend.get_hostname())
    with open(os.path.join(ca_dir(), "ca.pem")) as handle:
        assert host.file(tls["ca"]).content_string.strip() == handle.read().strip()
    verify = host.run(f"openssl verify -CAfile {tls['ca']} {tls['cert']}")
    assert verify.rc == 0, verify.stdout + verify.stderr
    names = host.run(f"openssl x509 -in {tls['cert']} -noout -ext subjectAltName")
    assert names.rc == 0, names.stderr
    assert f"IP Address:{address}" in names.stdout, names.stdout
    assert f"DNS:{host.backend.get_hostname()}" in names.stdout, names.stdout
    # Not inside the renewal window (kafka_tls_renew_days, 30 by default): a run would have signed it again.
    assert host.run(f"openssl x509 -in {tls['cert']} -noout -checkend {30 * 86400}").rc == 0


def test_keys_stay_private_on_the_node_and_the_cas_key_on_the_controller(host: Any, tls: dict[str, str]) -> None:
    folder = host.file(tls["dir"])
    assert (folder.user, folder.group, folder.mode) == ("root", "kafka", 0o750)
    for path in (tls["key"], tls["node"]):
        key = host.file(path)
        assert (key.user, key.group, key.mode) == ("root", "kafka", 0o640), path
        assert "BEGIN PRIVATE KEY" in key.content_string, path  # PKCS#8, unencrypted: no password anywhere
    ca_key = os.path.join(ca_dir(), "ca.key")
    assert stat.S_IMODE(os.stat(ca_dir()).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(ca_key).st_mode) == 0o600
    with open(ca_key) as handle:
        body = [line for line in handle.read().splitlines() if line and not line.startswith("-----")]
    # Any line of the CA's key found in the node's config tree would mean it was pushed.
    found = host.run(f"grep -rlF -e '{body[0]}' /etc/kafka")
    assert found.rc == 1 and not found.stdout, found.stdout


def test_controller_listener_verifies_both_ends(host: Any, props: dict[str, str], tls: dict[str, str]) -> None:
    """The node's own key and certificate pass, the address it is dialled by is checked against its certificate."""
    if not _is_controller(props):
        pytest.skip("not a controller: no controller listener here")
    endpoint = _controller_endpoint(host, props)
    address = endpoint.rsplit(":", 1)[0]
    result = host.run(
        f"openssl s_client -connect {endpoint} -CAfile {tls['ca']} -verify_ip {address} -verify_return_error "
        f"-cert {tls['cert']} -key {tls['key']} -brief </dev/null"
    )
    assert result.rc == 0, result.stdout + result.stderr
    assert "Verification: OK" in result.stderr, result.stderr
    quorum = host.run(f"kafka-metadata-quorum --bootstrap-controller {endpoint} describe --status")
    assert quorum.rc == 0 and "CurrentVoters:" in quorum.stdout, quorum.stderr


@pytest.mark.parametrize(
    "who,settings,why",
    [
        (
            "a client without a certificate",
            "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n",
            # TLS 1.3: the server asks for the client's certificate after the handshake and alerts without one.
            "certificate_required",
        ),
        # Reads the server's TLS record as a response size: kafka-python and Java clients both give up.
        ("a plaintext client", "security.protocol=PLAINTEXT\n", ""),
    ],
)
def test_controller_listener_refuses(
    host: Any, props: dict[str, str], tls: dict[str, str], who: str, settings: str, why: str
) -> None:
    if not _is_controller(props):
        pytest.skip("not a controller: no controller listener here")
    endpoint = _controller_endpoint(host, props)
    config = f"/tmp/kafkalab-tls-test-{who.replace(' ', '-')}.properties"
    bounds = "request.timeout.ms=4000\ndefault.api.timeout.ms=8000\n"
    host.run(f"printf '{settings.format(ca=tls['ca'])}{bounds}' > {config}")
    try:
        refused = host.run(
            f"kafka-metadata-quorum --command-config {config} --bootstrap-controller {endpoint} describe --status"
        )
    finally:
        host.run(f"rm -f {config}")
    assert refused.rc != 0 and "CurrentVoters:" not in refused.stdout, (who, refused.stdout)
    assert why in refused.stdout + refused.stderr, (who, refused.stderr[-2000:])


def test_kafka_clients_refuse_a_controller_they_cannot_verify(
    host: Any, props: dict[str, str], tls: dict[str, str]
) -> None:
    """The client side of the check: a client that trusts another CA, and one that dials a name the
    controller's certificate does not carry (localhost, which reaches the same listener), are refused during
    the handshake, with the node's own key and certificate in hand. (127.0.0.1 is no such name in the molecule
    scenario: its brokers advertise their NAT stand-in there, and certificates name every advertised host.)"""
    if not _is_controller(props):
        pytest.skip("not a controller: no controller listener here")
    endpoint = _controller_endpoint(host, props)
    work = "/tmp/kafkalab-tls-test-verify"
    client = read_properties(host, tls["client"])
    bounds = "request.timeout.ms=4000\ndefault.api.timeout.ms=8000\n"
    own = "".join(f"{key}={value}\n" for key, value in client.items()) + bounds
    other = own.replace(f"ssl.truststore.location={tls['ca']}", f"ssl.truststore.location={work}/other-ca.pem")
    made = host.run(
        f"rm -rf {work} && mkdir -p {work} && cd {work} && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other-ca.key "
        "-out other-ca.pem -days 1 -subj '/CN=another CA' 2>&1 && "
        f"printf '{own}' > own.properties && printf '{other}' > other.properties"
    )
    assert made.rc == 0, made.stdout
    names = host.run(f"openssl x509 -in {tls['cert']} -noout -ext subjectAltName")
    assert names.rc == 0 and "DNS:localhost" not in names.stdout, names.stdout
    quorum = f"kafka-metadata-quorum --command-config {work}"
    try:
        cases = {
            "trusts another CA": f"{quorum}/other.properties --bootstrap-controller {endpoint}",
            "dials a name not in the certificate": (
                f"{quorum}/own.properties --bootstrap-controller localhost:{endpoint.rsplit(':', 1)[1]}"
            ),
        }
        for case, command in cases.items():
            refused = host.run(f"{command} describe --status")
            said = refused.stdout + refused.stderr
            assert refused.rc != 0 and "CurrentVoters:" not in refused.stdout, case
            assert "SSLHandshakeException" in said or "SslAuthenticationException" in said, (case, said[-2000:])
        # The control: the same client with the node's own settings and address passes.
        passed = host.run(f"{quorum}/own.properties --bootstrap-controller {endpoint} describe --status")
        assert passed.rc == 0 and "CurrentVoters:" in passed.stdout, passed.stderr[-2000:]
    finally:
        host.run(f"rm -rf {work}")


def _tls_client_endpoints(cluster: Cluster) -> list[tuple[str, str, str, int]]:
    """(broker, listener, advertised host, port) of every advertised client listener that runs TLS.

    Not the controller listener: a dynamic quorum's nodes advertise it too (the voters' endpoints), but only the
    cluster's nodes may reach it (the firewall), and test_controller_listener_* check it from the nodes."""
    found = []
    for broker in cluster.brokers:
        props = cluster.properties[broker]
        controller_names = set(props.get("controller.listener.names", "").split(","))
        for item in props.get("advertised.listeners", "").split(","):
            name, _, rest = item.partition("://")
            if rest and name not in controller_names and listener_protocol(props, name) in ("SSL", "SASL_SSL"):
                address, _, port = rest.rpartition(":")
                found.append((broker, name, address, int(port)))
    return found


def _handshake(address: str, port: int, cafile: str, name: str | None = None) -> dict[str, Any]:
    """A TLS handshake from the controller machine, as a Python client makes it: the peer's certificate, or the
    ssl module's error (certificate not from this CA, or not naming `name`, the address by default)."""
    context = ssl.create_default_context(cafile=cafile)
    with (
        socket.create_connection((address, port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=name or address) as tls,
    ):
        return tls.getpeercert()


def test_every_tls_client_listener_serves_a_certificate_from_the_project_ca_naming_its_advertised_address(
    cluster: Cluster,
) -> None:
    endpoints = _tls_client_endpoints(cluster)
    if not endpoints:
        pytest.skip("no client or inter-broker listener of this inventory runs TLS")
    ca = os.path.join(ca_dir(), "ca.pem")
    for broker, name, address, port in endpoints:
        cert = _handshake(address, port, ca)
        assert ("IP Address" if address[0].isdigit() else "DNS", address) in cert["subjectAltName"], (broker, name)
        # Not inside the renewal window (kafka_tls_renew_days, 30 by default): a run would have signed it again.
        assert ssl.cert_time_to_seconds(cert["notAfter"]) - time.time() > 30 * 86400, (broker, name, cert["notAfter"])


def test_tls_client_listeners_refuse_a_client_that_trusts_another_ca_or_dials_a_name_not_in_the_certificate(
    cluster: Cluster, tmp_path: Path
) -> None:
    endpoints = _tls_client_endpoints(cluster)
    if not endpoints:
        pytest.skip("no client or inter-broker listener of this inventory runs TLS")
    other_ca = tmp_path / "other-ca.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", str(tmp_path / "other-ca.key"), "-out", str(other_ca), "-days", "1", "-subj", "/CN=another CA"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    ca = os.path.join(ca_dir(), "ca.pem")
    for broker, name, address, port in endpoints:
        with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer certificate"):
            _handshake(address, port, str(other_ca))
        # The certificate names the node's inventory name, address and advertised hosts; not this one.
        with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
            _handshake(address, port, ca, name="not-in-the-certificate.invalid")
        assert _handshake(address, port, ca)["subjectAltName"], (broker, name)  # the control passes
    # A real client is refused the same way: it never gets the cluster's metadata.
    broker, name, address, port = endpoints[0]
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaAdminClient(
            bootstrap_servers=f"{address}:{port}", security_protocol="SSL", ssl_cafile=str(other_ca),
            request_timeout_ms=5000, bootstrap_timeout_ms=5000, client_id="verify-tls-other-ca",
        )  # fmt: skip


def test_tls_client_listeners_refuse_a_plaintext_client(cluster: Cluster) -> None:
    endpoints = _tls_client_endpoints(cluster)
    if not endpoints:
        pytest.skip("no client or inter-broker listener of this inventory runs TLS")
    for _broker, _name, address, port in [e for e in endpoints if e[0] == cluster.brokers[0]]:
        with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
            KafkaAdminClient(
                bootstrap_servers=f"{address}:{port}", security_protocol="PLAINTEXT",
                request_timeout_ms=5000, bootstrap_timeout_ms=5000, client_id="verify-tls-plaintext",
            )  # fmt: skip


def _enddate(openssl_output: str) -> float:
    """openssl x509 -enddate's `notAfter=Feb  3 04:05:06 2029 GMT` as Unix time."""
    line = next(x for x in openssl_output.splitlines() if x.startswith("notAfter="))
    return ssl.cert_time_to_seconds(line.split("=", 1)[1].strip())


def test_prometheus_holds_when_the_nodes_certificate_expires(host: Any, tls: dict[str, str]) -> None:
    monitoring = group_hosts(inventory_listing(), "monitoring")
    if not monitoring:
        pytest.skip("the inventory has no monitoring host (group monitoring)")
    node = host.backend.get_hostname()
    enddate = host.run(f"openssl x509 -in {tls['cert']} -noout -enddate")
    assert enddate.rc == 0, enddate.stderr
    expected = _enddate(enddate.stdout)
    prometheus = Prometheus(monitoring[0])
    expr = f'kafka_tls_certificate_expiry_timestamp_seconds{{kafka_node="{node}"}}'
    series = wait_until(lambda: prometheus.query(expr), 60, f"{expr} in Prometheus")
    assert [float(s["value"][1]) for s in series] == [expected], series
    assert series[0]["metric"]["subject"] == f"CN={node}"


def test_the_report_shows_each_brokers_certificate_expiry_as_openssl_reads_it_on_the_wire(cluster: Cluster) -> None:
    props = cluster.properties[cluster.brokers[0]]
    if listener_protocol(props, props["inter.broker.listener.name"]) not in ("SSL", "SASL_SSL"):
        pytest.skip("the bootstrap listener of this inventory does not run TLS")
    ca = os.path.join(ca_dir(), "ca.pem")
    brokers = report.collect(cluster.bootstrap)["brokers"]
    assert len(brokers) == len(cluster.brokers), brokers
    for b in brokers:
        wire = subprocess.run(
            f"openssl s_client -connect {b['host']}:{b['port']} -CAfile {ca} -verify_return_error </dev/null "
            "2>/dev/null | openssl x509 -noout -enddate",
            shell=True, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert wire.returncode == 0, (b, wire.stdout, wire.stderr)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_enddate(wire.stdout)))
        assert b["certificate_expires"] == when, (b, wire.stdout)
