"""How every kafka-python client of the project reaches the cluster: plain, or TLS trusting the project CA.

One place for it: the load, the cluster report, the lag exporter, the bench, the end-to-end helpers, the
topics module and the verification suite build their clients with `settings()` merged in. The settings are
Kafka client properties (what Kafka's own tools read with --command-config), from the file named by
KAFKALAB_CLIENT_CONFIG (the tools' --client-config sets it, so processes they start inherit it). The kafka role
writes that file on the controller machine when the bootstrap listener runs TLS (kafka_cluster.client_config);
no file means PLAINTEXT.

Only what these clients use is understood; any other key is refused by name rather than silently dropped (a
client that quietly ignored a setting would talk to the cluster some other way than its owner asked).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

ENV = "KAFKALAB_CLIENT_CONFIG"
PROTOCOLS = ("PLAINTEXT", "SSL")
KNOWN = {
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
            key, _, value = line.partition(":")
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
    settings: dict[str, Any] = {"security_protocol": "SSL"}
    if props.get("ssl.truststore.location"):
        settings["ssl_cafile"] = props["ssl.truststore.location"]
    if props.get("ssl.keystore.location"):
        # A PEM key store holds the key and the certificate in one file, which ssl.load_cert_chain reads as both.
        settings["ssl_certfile"] = settings["ssl_keyfile"] = props["ssl.keystore.location"]
    # Kafka's default (https) checks the broker's certificate names the address dialled; '' turns that off.
    settings["ssl_check_hostname"] = props.get("ssl.endpoint.identification.algorithm", "https") != ""
    return settings


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


def use(path: str | None) -> None:
    """A tool's --client-config: what its clients, and the processes it starts, read."""
    if path:
        settings(path)  # refuse a bad file before anything starts
        os.environ[ENV] = path
