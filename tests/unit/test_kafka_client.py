"""The one reader of client settings every kafka-python client of the project uses (src/kafkalab/kafka_client.py)."""

from __future__ import annotations

import time
import types
from collections.abc import Generator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from kafka.cluster import ClusterMetadata
from kafka.errors import KafkaConnectionError, SaslAuthenticationFailedError
from kafka.future import Future as KafkaFuture
from kafka.net.manager import KafkaConnectionManager

from kafkalab import kafka_client


def test_no_file_means_plaintext(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(kafka_client.ENV, raising=False)
    assert kafka_client.settings() == {}
    assert kafka_client.from_properties({"security.protocol": "PLAINTEXT"}) == {}


def test_the_file_the_kafka_role_writes_gives_tls_trusting_the_ca_and_checking_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# Written by the kafka role\nsecurity.protocol=SSL\nssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tmp_path}/ca.pem\n"
    )
    monkeypatch.delenv(kafka_client.ENV, raising=False)
    kafka_client.use(str(path))
    assert kafka_client.settings() == {
        "security_protocol": "SSL",
        "ssl_cafile": f"{tmp_path}/ca.pem",
        "ssl_check_hostname": True,
    }


def test_a_pem_key_store_is_the_key_and_the_certificate_and_names_can_go_unchecked() -> None:
    assert kafka_client.from_properties(
        {
            "security.protocol": "ssl",
            "ssl.keystore.location": "/etc/kafka/tls/node.pem",
            "ssl.endpoint.identification.algorithm": "",
        }
    ) == {
        "security_protocol": "SSL",
        "ssl_certfile": "/etc/kafka/tls/node.pem",
        "ssl_keyfile": "/etc/kafka/tls/node.pem",
        "ssl_check_hostname": False,
    }


def test_a_scram_login_over_tls_becomes_kafka_pythons_sasl_settings() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/inv/.pki/ca.pem",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
        'password="Adm1n-pass-word";',
    }
    assert kafka_client.from_properties(props) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "Adm1n-pass-word",
        "ssl_cafile": "/inv/.pki/ca.pem",
        "ssl_check_hostname": True,
    }


def test_a_refused_login_never_shows_the_password() -> None:
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": "secret-123"}
    with pytest.raises(kafka_client.ClientConfigError) as refused:
        kafka_client.from_properties(props)
    assert "secret-123" not in str(refused.value)


@pytest.mark.parametrize(
    "props,message",
    [
        ({"security.protocol": "SASL_PLAINTEXT"}, "'SASL_PLAINTEXT' is not one of PLAINTEXT, SSL, SASL_SSL"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "ssl.truststore.type 'JKS'"),
        ({"security.protocol": "SSL", "sasl.kerberos.service.name": "k"}, "unknown key(s) sasl.kerberos.service.name"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "sasl.mechanism 'PLAIN' is not one of"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}, "sasl.jaas.config is not a"),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" '
                'password="Sec-ret-12345";',
            },
            "sasl.jaas.config is not a ScramLoginModule login",
        ),
    ],
)
def test_what_the_clients_cannot_follow_is_refused_by_name(props: dict[str, str], message: str) -> None:
    with pytest.raises(kafka_client.ClientConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kafka_client.from_properties(props, "f.properties")


def test_a_missing_file_is_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(kafka_client.ClientConfigError, match=r"missing\.properties .* cannot be read"):
        kafka_client.use(str(tmp_path / "missing.properties"))


class ResettingManager:
    """What kafka-python's metadata refresh asks of its connection manager, answering as it does when the broker
    resets the connection while the client sets it up: the request's future fails with a bare ConnectionResetError
    (kafka/net/manager.py passes the socket's exception on as it is)."""

    bootstrapped = True

    def __init__(self) -> None:
        self.sends = 0

    def least_loaded_node(self) -> int:
        return 1

    def connection_delay(self, _key: str) -> float:
        return 0

    def reset_backoff(self, _key: str) -> None: ...

    def update_backoff(self, _key: str) -> int:
        return 100

    def send(self, _request: object, _node_id: int) -> KafkaFuture:
        self.sends += 1
        return KafkaFuture().failure(ConnectionResetError(104, "Connection reset by peer"))


def refresh_task(upstream: bool) -> tuple[ClusterMetadata, ResettingManager, Generator[Any, None, None]]:
    """kafka-python's own refresh task (ClusterMetadata._refresh_loop) of a client whose refresh meets a reset
    connection; upstream: with kafka-python's refresh as released, not the one kafkalab.kafka_client installs."""
    cluster, manager = ClusterMetadata(bootstrap_servers="kafka1:9092"), ResettingManager()
    cluster._manager = manager
    idle = KafkaFuture()  # the task's wait for its next turn: never resolved here, so the task stays suspended
    cluster._wakeup = lambda _timeout_s: idle
    if upstream:
        cluster._do_refresh_metadata = types.MethodType(kafka_client._upstream_do_refresh_metadata, cluster)
    return cluster, manager, cluster._refresh_loop().__await__()


def test_the_released_client_ends_its_metadata_refresh_for_good_on_a_reset_connection() -> None:
    # The bug the patch is for, still in the release this project pins: when this stops failing, drop the patch.
    _, manager, task = refresh_task(upstream=True)
    with pytest.raises(ConnectionResetError):
        task.send(None)
    assert manager.sends == 1  # and that was its last refresh: nothing restarts the task


def test_a_reset_connection_fails_the_refresh_as_a_connection_error_and_the_refresh_task_goes_on() -> None:
    cluster, manager, task = refresh_task(upstream=False)
    waiting_on = task.send(None)  # the refresh failed and was retried within the same turn of the task...
    assert isinstance(waiting_on, KafkaFuture) and not waiting_on.is_done  # ...which now waits for its next turn
    assert manager.sends == 1
    assert isinstance(cluster._refresh_future.exception, KafkaConnectionError)
    assert isinstance(cluster._refresh_future.exception.__cause__, ConnectionResetError)
    assert cluster.need_update  # the metadata is still wanted, so the next turn asks again


NODE = "bootstrap-0"  # kafka-python's id for the first bootstrap server


def refused_once(backoff_ms: int) -> KafkaConnectionManager:
    """A connection manager whose bootstrap broker refused its login, as kafka-python's connect leaves it: the failure
    on record and the node's reconnect backoff set (the event loop is not needed for either, and not exercised)."""
    manager = KafkaConnectionManager(mock.MagicMock(), bootstrap_servers="kafka1:9092", reconnect_backoff_ms=backoff_ms)
    manager._auth_failures[NODE] = SaslAuthenticationFailedError("Authentication failed during authentication")
    manager.update_backoff(NODE)
    return manager


def test_the_released_client_never_connects_again_to_a_broker_that_refused_its_login() -> None:
    # The bug the second patch is for, still in the release this project pins: when this stops failing, drop it.
    manager = refused_once(backoff_ms=1)
    time.sleep(0.05)  # the backoff is long over
    assert manager.connection_delay(NODE) == 0
    with pytest.raises(SaslAuthenticationFailedError):
        kafka_client._upstream_maybe_raise_auth_failure(manager, NODE)


def test_a_refused_login_is_reported_during_the_backoff_and_tried_again_after_it() -> None:
    manager = refused_once(backoff_ms=60_000)
    with pytest.raises(SaslAuthenticationFailedError):  # the failure is what a caller sees while the backoff lasts
        manager.get_connection(NODE)
    manager._backoff[NODE] = (1, time.monotonic() - 1, 10_000)  # the backoff has passed
    connection = manager.get_connection(NODE)  # a new connection, which logs in again
    assert connection is manager._conns[NODE]
    assert NODE not in manager._auth_failures
