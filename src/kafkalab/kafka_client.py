"""How every kafka-python client of the project reaches the cluster: plain, TLS trusting the project CA, or
that plus a SCRAM-SHA-512 login (SASL_SSL).

One place for it: the load, the cluster report, the lag exporter, the bench, the end-to-end helpers, the
topics module and the verification suite build their clients with `settings()` merged in. The settings are
Kafka client properties (what Kafka's own tools read with --command-config), from the file named by
KAFKALAB_CLIENT_CONFIG (the tools' --client-config sets it, so processes they start inherit it). The kafka role
writes that file on the controller machine when the bootstrap listener runs TLS (kafka_cluster.client_config;
with SASL_SSL it holds the admin user's login, so it is 0600); no file means PLAINTEXT.

Only what these clients use is understood; any other key is refused by name rather than silently dropped (a
client that quietly ignored a setting would talk to the cluster some other way than its owner asked).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from kafka import errors as kafka_errors
from kafka.cluster import ClusterMetadata
from kafka.net.manager import KafkaConnectionManager

log = logging.getLogger(__name__)

ENV = "KAFKALAB_CLIENT_CONFIG"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
# The one JAAS login this project writes (filter_plugins/kafka_sasl.py): ScramLoginModule with a user and password.
JAAS = re.compile(
    r"^org\.apache\.kafka\.common\.security\.scram\.ScramLoginModule\s+required\s+"
    r'username="(?P<user>[^"]+)"\s+password="(?P<password>[^"]*)"\s*;$'
)
KNOWN = {
    "sasl.mechanism",
    "sasl.jaas.config",
    "security.protocol",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.endpoint.identification.algorithm",
}


class ClientConfigError(ValueError):
    """A client settings file this project's clients cannot follow; the message names the file, key and fix."""


def read_properties(text: str) -> dict[str, str]:
    """key=value lines (# and ! comments, blank lines), as the files the kafka role writes."""
    props = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, _colon, value = line.partition(":")
        props[key.strip()] = value.strip()
    return props


def from_properties(props: Mapping[str, str], where: str = "the client settings") -> dict[str, Any]:
    """kafka-python's keyword arguments for these Kafka client properties."""
    unknown = sorted(set(props) - KNOWN)
    if unknown:
        raise ClientConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; this project's clients understand "
            f"{', '.join(sorted(KNOWN))}."
        )
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ClientConfigError(f"{where}: security.protocol '{protocol}' is not one of {', '.join(PROTOCOLS)}.")
    if protocol == "PLAINTEXT":
        return {}
    for kind in ("truststore", "keystore"):
        store_type = props.get(f"ssl.{kind}.type", "PEM").upper()
        if store_type != "PEM":
            raise ClientConfigError(
                f"{where}: ssl.{kind}.type '{store_type}': the Python clients read PEM files only. Give a PEM file."
            )
    settings: dict[str, Any] = {"security_protocol": protocol}
    if protocol == "SASL_SSL":
        settings.update(_login(props, where))
    if props.get("ssl.truststore.location"):
        settings["ssl_cafile"] = props["ssl.truststore.location"]
    if props.get("ssl.keystore.location"):
        # A PEM key store holds the key and the certificate in one file, which ssl.load_cert_chain reads as both.
        settings["ssl_certfile"] = settings["ssl_keyfile"] = props["ssl.keystore.location"]
    # Kafka's default (https) checks the broker's certificate names the address dialled; '' turns that off.
    settings["ssl_check_hostname"] = props.get("ssl.endpoint.identification.algorithm", "https") != ""
    return settings


def _login(props: Mapping[str, str], where: str) -> dict[str, Any]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise ClientConfigError(f"{where}: sasl.mechanism '{mechanism}' is not one of {', '.join(MECHANISMS)}.")
    # Never echo the value: it holds a password.
    login = JAAS.match(props.get("sasl.jaas.config", "").strip())
    if not login:
        raise ClientConfigError(
            f"{where}: sasl.jaas.config is not a ScramLoginModule login with username and password "
            '(org.apache.kafka.common.security.scram.ScramLoginModule required username="..." password="...";).'
        )
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": login.group("user"),
        "sasl_plain_password": login.group("password"),
    }


def settings(path: str | None = None) -> dict[str, Any]:
    """The keyword arguments every client adds: from `path`, else from $KAFKALAB_CLIENT_CONFIG, else none."""
    path = path or os.environ.get(ENV) or ""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ClientConfigError(
            f"client settings {path} ({ENV} / --client-config) cannot be read: {exc.strerror}. The kafka role writes "
            "it on the controller machine when the bootstrap listener runs TLS; run the playbook, or fix the path."
        ) from None
    return from_properties(read_properties(text), path)


def librdkafka_settings(bootstrap: str, path: str | None = None) -> dict[str, Any]:
    """The same settings in librdkafka's names, for confluent-kafka's clients (the Avro serializers' producers)."""
    found = settings(path)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": found.get("security_protocol", "PLAINTEXT"),
    }
    if found.get("ssl_cafile"):
        conf["ssl.ca.location"] = found["ssl_cafile"]
    if found.get("sasl_mechanism"):
        conf["sasl.mechanisms"] = found["sasl_mechanism"]
        conf["sasl.username"] = found["sasl_plain_username"]
        conf["sasl.password"] = found["sasl_plain_password"]
    return conf


def use(path: str | None) -> None:
    """A tool's --client-config: what its clients, and the processes it starts, read."""
    if path:
        settings(path)  # refuse a bad file before anything starts
        os.environ[ENV] = path


# kafka-python 3.0.12 (the newest release) refreshes a client's metadata in one task on its I/O thread, and that task
# retries only failures that are KafkaErrors. A connection the broker resets while the client is still setting it up
# (TLS wraps the socket outside the handshake's error handling) fails the refresh with a bare ConnectionResetError: the
# task ends, silently, and the client never refreshes its metadata again. Its producer then sends to a partition's old
# leader until the delivery timeout: NotLeaderOrFollower on every retry, or, with that broker down, connection refused
# (test_failover's SIGKILL cases: the bare error is in a rehearsal's log, the same symptom in a CI run whose log kept
# only its tail; every client here is exposed, the lag exporter included). Kafka's own clients treat any failure of a
# metadata request as retriable; so does this patch: a refresh that fails with anything but a KafkaError fails with a
# KafkaConnectionError carrying it, which the task retries after its backoff. tests/unit/test_kafka_client.py drives the
# task itself and checks the bug is still there upstream (drop this when it is not).
_upstream_do_refresh_metadata = ClusterMetadata._do_refresh_metadata


async def _do_refresh_metadata(self: ClusterMetadata, node_id: Any) -> None:
    try:
        await _upstream_do_refresh_metadata(self, node_id)
    except kafka_errors.KafkaError:
        raise
    except Exception as exc:
        log.warning("metadata refresh failed with %r; retrying it as a connection error", exc)
        raise kafka_errors.KafkaConnectionError(f"metadata refresh failed: {exc!r}") from exc


ClusterMetadata._do_refresh_metadata = _do_refresh_metadata


# kafka-python 3.0.12 also keeps a refused login (a SASL authentication or an authorization failure while connecting)
# on record per broker and raises it on every later attempt to reach that broker; only a successful connection clears
# it, and no connection is tried again once it is on record: a client one broker refused once (a password changed and
# put back, a new SCRAM user's credential not yet applied on that broker) never talks to that broker again. Its
# producer then expires every record led there (a journey's load logged in as the admin while the admin's password
# was changed for two runs: 73,713 sends expired, 2026-12-06). Kafka's own clients report the failure and connect again
# after the reconnect backoff; so does this patch: once the backoff the failure set has passed, the record is dropped
# and the next attempt connects (and logs in) again; a login still refused is recorded again with a longer backoff.
_upstream_maybe_raise_auth_failure = KafkaConnectionManager.maybe_raise_auth_failure


def _maybe_raise_auth_failure(self: KafkaConnectionManager, node_id: Any) -> None:
    if node_id in self._auth_failures and self.connection_delay(node_id) <= 0:
        failure = self._auth_failures.pop(node_id)
        log.warning("node %s refused this client (%r); connecting to it again after the backoff", node_id, failure)
        return
    _upstream_maybe_raise_auth_failure(self, node_id)


KafkaConnectionManager.maybe_raise_auth_failure = _maybe_raise_auth_failure
