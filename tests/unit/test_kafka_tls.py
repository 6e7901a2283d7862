"""TLS on Kafka's listeners: the model's names, the properties each node and tool gets, and what the host
preflight refuses (a lost or other CA, a running cluster switching its controller or inter-broker listener)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_outputs import kafka_server_properties, to_properties
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_tls import (
    kafka_tls_client_properties,
    kafka_tls_expiry_metric,
    kafka_tls_problems,
    kafka_tls_server_properties,
)
from ansible_collections.kafkalab.kafka.plugins.filter.machines import inventory_folder
from ansible_collections.kafkalab.kafka.plugins.filter.tls import san_entry
from test_kafka_cluster_model import SETTINGS as PLAINTEXT_SETTINGS

TLS_DIR = "/etc/kafka/tls"
SETTINGS: dict[str, Any] = {
    **PLAINTEXT_SETTINGS,
    "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL"},
}
HOSTS = {f"k{i}": {"kafka_node_id": i, "ansible_host": f"10.0.0.{10 + i}"} for i in (1, 2, 3, 4)}
CONTROLLERS, BROKERS = ["k1", "k2", "k3"], ["k2", "k3", "k4"]
CA = "-----BEGIN CERTIFICATE-----\nprojectca\n-----END CERTIFICATE-----\n"
OTHER_CA = "-----BEGIN CERTIFICATE-----\nanotherca\n-----END CERTIFICATE-----\n"


def model(**changes: Any) -> dict[str, Any]:
    result = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, {**SETTINGS, **changes})
    assert result["problems"] == []
    return result


def running(protocol: str) -> str:
    return to_properties({"listener.security.protocol.map": f"CONTROLLER:{protocol},INTERNAL:PLAINTEXT"})


def test_ssl_controller_listener_is_accepted_and_defaults_to_mutual_tls() -> None:
    m = model()
    assert m["tls"] is True
    assert m["controller_listener"]["client_auth"] == "required"


def test_plaintext_controller_listener_needs_no_certificates() -> None:
    m = model(controller_listener={"name": "CONTROLLER", "port": 9093, "protocol": "PLAINTEXT"})
    assert m["tls"] is False
    assert kafka_tls_server_properties(m, TLS_DIR) == {}
    assert kafka_tls_client_properties(m, TLS_DIR) == {}


def test_certificate_names_cover_inventory_name_address_and_advertised_hosts() -> None:
    hosts = {**HOSTS, "k4": {**HOSTS["k4"], "kafka_listener_overrides": {"INTERNAL": {"advertised_host": "k4.lab"}}}}
    m = kafka_cluster_model(hosts, CONTROLLERS, BROKERS, SETTINGS)
    assert m["problems"] == []
    assert m["nodes"]["k4"]["tls_names"] == ["k4", "10.0.0.14", "k4.lab"]
    assert [san_entry(n) for n in m["nodes"]["k1"]["tls_names"]] == ["DNS:k1", "IP:10.0.0.11"]


@pytest.mark.parametrize("host", ["k1", "k2", "k4"])
def test_every_node_gets_the_controller_listeners_tls_settings_prefixed(host: str) -> None:
    """Controllers serve the listener, brokers dial it: both read the same listener-prefixed settings."""
    m = model()
    props = {**kafka_server_properties(m, host, SETTINGS), **kafka_tls_server_properties(m, TLS_DIR)}
    assert "CONTROLLER:SSL" in props["listener.security.protocol.map"].split(",")
    assert props["listener.name.controller.ssl.keystore.type"] == "PEM"
    assert props["listener.name.controller.ssl.keystore.location"] == "/etc/kafka/tls/node.pem"
    assert props["listener.name.controller.ssl.truststore.location"] == "/etc/kafka/tls/ca.pem"
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    # Unencrypted PEM key: no password in any properties file; nothing un-prefixed touches other listeners.
    assert not [k for k in props if "password" in k]
    assert not [k for k in props if k.startswith("ssl.")]


def test_client_auth_requested_is_passed_on() -> None:
    m = model(controller_listener={"name": "CONTROLLER", "port": 9093, "protocol": "SSL", "client_auth": "requested"})
    assert kafka_tls_server_properties(m, TLS_DIR)["listener.name.controller.ssl.client.auth"] == "requested"


def test_admin_tools_dial_the_quorum_with_the_nodes_own_certificate() -> None:
    assert kafka_tls_client_properties(model(), TLS_DIR) == {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/etc/kafka/tls/node.pem",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/kafka/tls/ca.pem",
    }


def test_a_new_cluster_and_a_cluster_on_the_project_ca_pass() -> None:
    m = model()
    assert kafka_tls_problems(m, {h: {"config": "", "ca": ""} for h in HOSTS}, "", "/inv/.pki") == []
    disks = {h: {"config": running("SSL"), "ca": CA} for h in HOSTS}
    assert kafka_tls_problems(m, disks, CA.strip() + "\n\n", "/inv/.pki") == []


def test_a_lost_project_ca_is_refused_naming_the_host_and_the_dir() -> None:
    disks = {"k1": {"config": running("SSL"), "ca": CA}, "k2": {"config": "", "ca": ""}}
    problems = kafka_tls_problems(model(), disks, "", "/inv/.pki")
    assert len(problems) == 1
    assert problems[0].startswith("k1: trusts the CA whose certificate hashes to sha256 ")
    assert "kafka_tls_ca_dir /inv/.pki holds no CA" in problems[0]
    assert "Restore ca.pem and ca.key into kafka_tls_ca_dir" in problems[0]


def test_another_ca_in_the_dir_is_refused() -> None:
    problems = kafka_tls_problems(model(), {"k3": {"config": running("SSL"), "ca": OTHER_CA}}, CA, "/inv/.pki")
    assert len(problems) == 1 and problems[0].startswith("k3: trusts the CA") and "another CA" in problems[0]


@pytest.mark.parametrize("now,wanted", [("PLAINTEXT", "SSL"), ("SSL", "PLAINTEXT")])
def test_a_running_cluster_does_not_switch_its_controller_listener(now: str, wanted: str) -> None:
    m = model(controller_listener={"name": "CONTROLLER", "port": 9093, "protocol": wanted})
    problems = kafka_tls_problems(m, {"k2": {"config": running(now), "ca": ""}}, "", "/inv/.pki")
    assert problems == [
        f"k2: its listener CONTROLLER runs {now}, and kafka_controller_listener.protocol is {wanted}: "
        f"switching a running cluster's controller listener from {now} to {wanted} is not supported (a roll "
        "would split the quorum: restarted and waiting nodes could not talk). Set the protocol back to "
        f"{now}; or rebuild the lab cluster with {wanted} from the start."
    ]


SECURED: dict[str, Any] = {
    **SETTINGS,
    "listeners": [
        {"name": "INTERNAL", "port": 9092, "protocol": "SSL"},
        {"name": "CLIENTS", "port": 9094, "protocol": "SSL", "client_auth": "requested"},
        {"name": "PLAIN", "port": 9095, "protocol": "PLAINTEXT"},
    ],
    "tls_ca_dir": "/inv/.pki/",
}


def test_tls_client_and_inter_broker_listeners_get_their_own_prefixed_settings() -> None:
    m = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, SECURED)
    assert m["problems"] == []
    assert m["tls_listeners"] == {"INTERNAL": "none", "CLIENTS": "requested", "CONTROLLER": "required"}
    props = {**kafka_server_properties(m, "k4", SECURED), **kafka_tls_server_properties(m, TLS_DIR)}
    protocols = props["listener.security.protocol.map"].split(",")
    assert {"INTERNAL:SSL", "CLIENTS:SSL", "PLAIN:PLAINTEXT", "CONTROLLER:SSL"} <= set(protocols)
    for name, auth in (("internal", "none"), ("clients", "requested"), ("controller", "required")):
        assert props[f"listener.name.{name}.ssl.keystore.location"] == "/etc/kafka/tls/node.pem"
        assert props[f"listener.name.{name}.ssl.truststore.location"] == "/etc/kafka/tls/ca.pem"
        assert props[f"listener.name.{name}.ssl.client.auth"] == auth
    assert not [k for k in props if k.startswith("listener.name.plain.")]
    # The node's tools dial bootstrap_servers (INTERNAL) with its certificate; the controller machine's clients
    # read the settings file the role writes beside the project CA.
    assert kafka_tls_client_properties(m, TLS_DIR, "INTERNAL")["security.protocol"] == "SSL"
    assert kafka_tls_client_properties(m, TLS_DIR, "PLAIN") == {}
    assert m["client_config"] == "/inv/.pki/client.properties"
    assert m["client_ca"] == "/inv/.pki/trust.pem"


def test_a_pkcs12_key_store_reads_its_password_through_the_file_config_provider() -> None:
    """kafka_tls_keystore_type PKCS12: every TLS listener reads node.p12, whose password is no value in
    server.properties but a reference to the node's keystore.properties; the trust store stays PEM."""
    m = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, SECURED)
    props = kafka_tls_server_properties(m, TLS_DIR, "PKCS12")
    reference = "${file:/etc/kafka/tls/keystore.properties:password}"
    for name in ("internal", "clients", "controller"):
        assert props[f"listener.name.{name}.ssl.keystore.type"] == "PKCS12"
        assert props[f"listener.name.{name}.ssl.keystore.location"] == "/etc/kafka/tls/node.p12"
        assert props[f"listener.name.{name}.ssl.keystore.password"] == reference
        assert props[f"listener.name.{name}.ssl.key.password"] == reference
        assert props[f"listener.name.{name}.ssl.truststore.type"] == "PEM"
    assert props["config.providers"] == "file"
    assert props["config.providers.file.class"] == "org.apache.kafka.common.config.provider.FileConfigProvider"
    # PEM needs no provider, and a cluster without TLS gets nothing.
    assert "config.providers" not in kafka_tls_server_properties(m, TLS_DIR)
    plain = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, PLAINTEXT_SETTINGS)
    assert kafka_tls_server_properties(plain, TLS_DIR, "PKCS12") == {}


def test_a_plaintext_bootstrap_listener_needs_no_client_settings_even_with_tls_elsewhere() -> None:
    """The lab: EXTERNAL and the controller listener TLS, INTERNAL (the bootstrap one) plain."""
    plain = {"name": "INTERNAL", "port": 9092, "protocol": "PLAINTEXT"}
    lab = {**SECURED, "listeners": [plain, SECURED["listeners"][1]]}
    m = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, lab)
    assert m["problems"] == [] and m["tls"] is True
    assert m["client_config"] == "" and m["client_ca"] == ""
    assert kafka_tls_client_properties(m, TLS_DIR, "INTERNAL") == {}


def test_tls_listeners_are_refused_in_zookeeper_mode_for_now() -> None:
    zk = {**SECURED, "mode": "zookeeper", "version": "3.9.2", "zookeeper_client_port": 2181}
    hosts = {**HOSTS, "z1": {"ansible_host": "10.0.0.31", "zookeeper_id": 1}}
    m = kafka_cluster_model(hosts, [], BROKERS, zk, ["z1"])
    assert any(
        "run TLS (SSL or SASL_SSL), but the cluster runs on ZooKeeper" in p and "INTERNAL, CLIENTS" in p
        for p in m["problems"]
    )


@pytest.mark.parametrize("now,wanted", [("PLAINTEXT", "SSL"), ("SSL", "PLAINTEXT")])
def test_a_running_cluster_does_not_switch_its_inter_broker_listener(now: str, wanted: str) -> None:
    listeners = [{"name": "INTERNAL", "port": 9092, "protocol": wanted}]
    m = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, {**SETTINGS, "listeners": listeners})
    config = to_properties({"listener.security.protocol.map": f"CONTROLLER:SSL,INTERNAL:{now}"})
    problems = kafka_tls_problems(m, {"k4": {"config": config, "ca": ""}}, "", "/inv/.pki")
    assert problems == [
        f"k4: its listener INTERNAL runs {now}, and the protocol of kafka_inter_broker_listener_name's listener is "
        f"{wanted}: switching a running cluster's inter-broker listener from {now} to {wanted} is not supported "
        "(a roll would split replication: restarted and waiting nodes could not talk). Set the protocol back to "
        f"{now}; to secure a running cluster, add a new listener with protocol SSL or SASL_SSL, then move "
        f"kafka_inter_broker_listener_name to it in a second run; or rebuild the lab cluster with {wanted} from the "
        "start."
    ]
    # Another client listener may change protocol in a roll: its clients follow, the cluster stays whole.
    other = [*listeners, {"name": "EXTRA", "port": 9094, "protocol": "SSL"}]
    m = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, {**SETTINGS, "listeners": other})
    config = to_properties({"listener.security.protocol.map": f"CONTROLLER:SSL,INTERNAL:{wanted},EXTRA:PLAINTEXT"})
    assert kafka_tls_problems(m, {"k4": {"config": config, "ca": ""}}, "", "/inv/.pki") == []


def test_the_expiry_metric_names_the_node_and_the_certificates_end_in_unix_time() -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "kafka2")])
    end = datetime.datetime(2029, 2, 3, 4, 5, 6, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(end - datetime.timedelta(days=825))
        .not_valid_after(end)
        .sign(key, hashes.SHA256())
    )
    text = kafka_tls_expiry_metric(cert.public_bytes(serialization.Encoding.PEM).decode(), "kafka2")
    series = 'kafka_tls_certificate_expiry_timestamp_seconds{kafka_node="kafka2",subject="CN=kafka2"}'
    assert text.splitlines()[-1] == f"{series} {int(end.timestamp())}"
    assert "# TYPE kafka_tls_certificate_expiry_timestamp_seconds gauge" in text
    # Check mode on a first run: no certificate yet, nothing to write.
    assert kafka_tls_expiry_metric("", "kafka2") == ""


def test_the_ca_and_secrets_live_beside_the_first_inventory_source(tmp_path: Path) -> None:
    """kafka_tls_ca_dir and spark_authenticate_secret_file default to <inventory_folder>/.pki and /.secrets."""
    folder = tmp_path / "inventories" / "prod"
    folder.mkdir(parents=True)
    (folder / "hosts.yml").write_text("all: {}\n")
    assert inventory_folder([str(folder)]) == str(folder)
    assert inventory_folder([f"{folder}/"]) == str(folder)
    assert inventory_folder([str(folder / "hosts.yml"), "/elsewhere/other.yml"]) == str(folder)


def test_the_zookeeper_ensembles_ca_is_checked_by_the_same_rule() -> None:
    """roles/zookeeper's preflight: kafkalab.kafka.pki_trust_problems over each TLS server's ca.pem."""
    from ansible_collections.kafkalab.kafka.plugins.filter.tls import pki_trust_problems

    assert pki_trust_problems({"zk1": CA, "zk2": ""}, CA, "/inv/.pki", "zookeeper_tls_ca_dir") == []
    lost = pki_trust_problems({"zk1": CA, "zk2": CA}, "", "/inv/.pki", "zookeeper_tls_ca_dir")
    assert [p.split(":")[0] for p in lost] == ["zk1", "zk2"]
    assert "zookeeper_tls_ca_dir /inv/.pki holds no CA: the project CA was lost or moved." in lost[0]
    assert "Restore ca.pem and ca.key into zookeeper_tls_ca_dir" in lost[0]
    other = pki_trust_problems({"zk3": OTHER_CA}, CA, "/inv/.pki", "zookeeper_tls_ca_dir")
    assert "another CA (sha256 " in other[0] and "is in zookeeper_tls_ca_dir /inv/.pki" in other[0]
