"""The one reader of client settings every kafka-python client of the project uses (src/kafkalab/kafka_client.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
