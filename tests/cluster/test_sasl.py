"""SCRAM-SHA-512 users, the StandardAuthorizer and ACLs (roles/kafka: kafka_users, kafka_authorizer, kafka_acls).

On the wire: a client without credentials, one with a wrong password and an unknown user are refused; a user
without a read ACL cannot consume, one without a write ACL cannot produce, and a user with both round-trips 10,000
messages with 0 lost. On the nodes: server.properties holds no password (the brokers read theirs from a secrets
file at start, root:kafka 0640), the admin tools' settings are root's only. In the cluster: the declared users and
ACLs, as the inventory says. Runs where the inventory's inter-broker listener runs SASL_SSL (the default scenario).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from acl_probe import read_error, write_error
from conftest import Cluster, kafka_nodes, listener_protocol, read_properties
from inventory_hosts import ca_dir, inventory_path, kafka_properties_path, runner
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaTimeoutError, TopicAuthorizationFailedError

from kafkalab import e2e, kafka_client

testinfra_hosts = [f"ansible://{name}?ansible_inventory={inventory_path()}" for name in kafka_nodes()]


def _inventory() -> dict[str, Any]:
    nodes = kafka_nodes()
    return runner().get_variables(nodes[0]) if nodes else {}


def _inter_broker_protocol() -> str:
    variables = _inventory()
    name = variables.get("kafka_inter_broker_listener_name", "INTERNAL")
    listeners = variables.get("kafka_listeners") or []
    return next((str(li.get("protocol")) for li in listeners if li.get("name") == name), "PLAINTEXT")


pytestmark = pytest.mark.skipif(
    _inter_broker_protocol() != "SASL_SSL", reason="the inventory's inter-broker listener does not run SASL_SSL"
)

TOPIC = "topic_3"


def _password(user: str) -> str:
    return next(str(u["password"]) for u in _inventory()["kafka_users"] if u["name"] == user)


def _as(user: str, password: str | None = None) -> dict[str, Any]:
    """kafka-python settings of the bootstrap listener, logged in as `user`."""
    return {
        **kafka_client.settings(os.path.join(ca_dir(), "client.properties")),
        "sasl_plain_username": user,
        "sasl_plain_password": _password(user) if password is None else password,
    }


@pytest.fixture
def props(host: Any) -> dict[str, str]:
    return read_properties(host, kafka_properties_path(host.backend.get_hostname()))


def test_server_properties_hold_no_password_and_the_secrets_file_is_kafkas_to_read(
    host: Any, props: dict[str, str]
) -> None:
    conf = os.path.dirname(kafka_properties_path(host.backend.get_hostname()))
    text = host.file(f"{conf}/server.properties").content_string
    for user in _inventory()["kafka_users"]:
        assert user["password"] not in text, f"{user['name']}'s password is in server.properties"
    if "broker" in props.get("process.roles", "broker"):
        internal = props["inter.broker.listener.name"].lower()
        assert "${file:" in props[f"listener.name.{internal}.scram-sha-512.sasl.jaas.config"]
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    secrets = host.file(f"{conf}/secrets.properties")
    assert (secrets.user, secrets.group, secrets.mode) == ("root", "kafka", 0o640)
    # The admin tools' settings for the SASL_SSL listener carry the admin's login: root's only.
    tools = host.file(f"{conf}/client.properties")
    assert (tools.user, tools.mode) == ("root", 0o600)
    assert "sasl.jaas.config" in host.run(f"cat {conf}/client.properties").stdout


def test_the_declared_users_and_acls_are_in_the_cluster(cluster: Cluster) -> None:
    variables = _inventory()
    admin = KafkaAdminClient(**_as(variables.get("kafka_admin_user", "admin")), bootstrap_servers=cluster.bootstrap)
    try:
        users = admin.describe_user_scram_credentials()
        iterations = int(variables.get("kafka_scram_iterations", 8192))
        for user in variables["kafka_users"]:
            infos = users[user["name"]]["credential_infos"]
            assert [(i["mechanism"].name, i["iterations"]) for i in infos] == [("SCRAM_SHA_512", iterations)], user
        from kafka.admin import (
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePatternFilter,
            ResourceType,
        )

        everything = ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )  # fmt: skip
        acls, _ = admin.describe_acls(everything)
        held = {
            (a.principal, a.resource_pattern.resource_type.name.lower(), a.resource_pattern.resource_name,
             a.operation.name.lower())
            for a in acls
        }  # fmt: skip
        for acl in variables["kafka_acls"]:
            name = acl.get("name") or "kafka-cluster"
            assert (acl["principal"], acl["resource_type"], name, acl["operation"]) in held, acl
    finally:
        admin.close()


@pytest.mark.parametrize(
    "who",
    ["no-credentials", "wrong-password", "unknown-user"],
)
def test_a_client_that_cannot_log_in_is_refused(cluster: Cluster, who: str) -> None:
    """kafka-python gives up on a refused login as on an unreachable broker (it never gets the metadata); the
    Kafka tool below says why."""
    if who == "no-credentials":
        settings = {k: v for k, v in _as("alice").items() if not k.startswith("sasl_")} | {"security_protocol": "SSL"}
    elif who == "wrong-password":
        settings = _as("alice", "not-alices-password")
    else:
        settings = _as("mallory", "Mall0ry-pass-word")
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaAdminClient(
            **settings, bootstrap_servers=cluster.bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000,
            client_id=f"verify-sasl-{who}",
        )  # fmt: skip


def test_kafkas_own_client_says_a_wrong_password_is_invalid_credentials(host: Any, props: dict[str, str]) -> None:
    if "broker" not in props.get("process.roles", "broker"):
        pytest.skip("a controller only: it serves no SASL_SSL listener")
    name = props["inter.broker.listener.name"]
    assert listener_protocol(props, name) == "SASL_SSL"
    address = next(li for li in props["advertised.listeners"].split(",") if li.startswith(f"{name}://"))
    ca = props[f"listener.name.{name.lower()}.ssl.truststore.location"]
    work = host.run("mktemp -d").stdout.strip()
    try:
        host.run(
            f"printf '%s\\n' security.protocol=SASL_SSL sasl.mechanism=SCRAM-SHA-512 ssl.truststore.type=PEM "
            f"ssl.truststore.location={ca} "
            '\'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
            f'password="not-alices-password";\' > {work}/wrong.properties'
        )
        refused = host.run(
            f"kafka-topics --bootstrap-server {address.partition('://')[2]} --command-config {work}/wrong.properties "
            "--list"
        )
    finally:
        host.run(f"rm -rf {work}")
    said = refused.stdout + refused.stderr
    assert refused.rc != 0, said
    assert (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        in said
    )


def test_acls_decide_who_reads_and_who_writes(cluster: Cluster) -> None:
    """bob may only write topic_3, carol only read it: each is refused the other half."""
    assert isinstance(read_error(_as("bob"), cluster.bootstrap, TOPIC), TopicAuthorizationFailedError)
    assert isinstance(
        write_error(_as("carol"), cluster.bootstrap, TOPIC, b"verify-sasl"), TopicAuthorizationFailedError
    )
    # The halves they are allowed work (the scenario's load wrote topic_3, so carol reads records).
    assert write_error(_as("bob"), cluster.bootstrap, TOPIC, b"verify-sasl") is None
    assert read_error(_as("carol"), cluster.bootstrap, TOPIC) is None


def test_a_user_with_both_acls_round_trips_10000_messages(cluster: Cluster) -> None:
    alice = _as("alice")
    report = e2e.round_trip(cluster.bootstrap, TOPIC, 10_000, security=alice)
    assert report.ok and report.consumed == 10_000, report.summary()
    assert not report.lost and not report.duplicated, report.summary()
