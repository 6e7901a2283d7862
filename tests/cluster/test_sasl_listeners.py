"""Every SASL_SSL client listener on the cluster network, whether or not the brokers replicate over it.

The settings the kafka role writes for each TLS listener on the controller machine (kafka_cluster's
listener_client_configs, client-<name>.properties beside the CA: the project CA, and on SASL_SSL the admin's login)
round-trip records through that listener with 0 lost, and are the controller user's only; the same settings with
a wrong password are refused. Runs wherever a listener runs SASL_SSL: the default and spark scenarios (INTERNAL,
their inter-broker listener too), and the lab (SECURE, beside its PLAINTEXT INTERNAL, which test_sasl.py skips).
"""

from __future__ import annotations

import os
import stat
import uuid

import pytest
from conftest import Cluster, listener_address, listener_client_config, listener_protocol
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaTimeoutError

from kafkalab import e2e, kafka_client


def _sasl_listeners(cluster: Cluster) -> dict[str, str]:
    """Each SASL_SSL listener the brokers advertise on their inter-broker listener's host (not behind NAT), with
    its bootstrap servers."""
    found: dict[str, list[str]] = {}
    for broker in cluster.brokers:
        props = cluster.properties[broker]
        host = listener_address(props, props["inter.broker.listener.name"]).rsplit(":", 1)[0]
        for item in props.get("advertised.listeners", "").split(","):
            name, _, address = item.partition("://")
            if listener_protocol(props, name) == "SASL_SSL" and address.rsplit(":", 1)[0] == host:
                found.setdefault(name, []).append(address)
    return {name: ",".join(addresses) for name, addresses in found.items()}


@pytest.fixture(scope="module")
def sasl_listeners(cluster: Cluster) -> dict[str, str]:
    listeners = _sasl_listeners(cluster)
    if not listeners:
        pytest.skip("no listener of this inventory runs SASL_SSL")
    return listeners


def test_each_sasl_listeners_client_settings_round_trip_1000_records_as_the_admin(
    cluster: Cluster, sasl_listeners: dict[str, str]
) -> None:
    for name, bootstrap in sasl_listeners.items():
        path = listener_client_config(name)
        assert os.path.exists(path), f"listener {name} runs SASL_SSL, but {path} is missing"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, f"{path} holds the admin's login: its owner's only"
        settings = kafka_client.settings(path)
        assert settings["security_protocol"] == "SASL_SSL" and settings["sasl_plain_password"], path
        topic = f"verify-sasl-listener-{name.lower()}-{uuid.uuid4().hex[:6]}"
        # Created and deleted through the bootstrap listener (the suite's settings), written and read through this one.
        e2e.create_topic(cluster.bootstrap, topic, 3, min(3, len(cluster.brokers)))
        try:
            report = e2e.round_trip(bootstrap, topic, 1000, security=settings)
        finally:
            e2e.delete_topic(cluster.bootstrap, topic)
        assert report.ok and report.consumed == 1000, f"{name}: {report.summary()}"
        assert not report.lost and not report.duplicated, f"{name}: {report.summary()}"


def test_each_sasl_listener_refuses_a_wrong_password(sasl_listeners: dict[str, str]) -> None:
    for name, bootstrap in sasl_listeners.items():
        wrong = kafka_client.settings(listener_client_config(name)) | {"sasl_plain_password": "not-the-password"}
        with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
            KafkaAdminClient(
                **wrong, bootstrap_servers=bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000,
                client_id=f"verify-sasl-listener-{name.lower()}",
            )  # fmt: skip
