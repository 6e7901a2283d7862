"""TLS on Kafka's listeners: what each node's properties say, and what a run must refuse.

The model (kafka_cluster.py) says which listeners run TLS (`tls_listeners`, `tls` if any) and which names each
node's certificate carries (`tls_names`); tasks/tls.yml makes the keys and certificates. These filters
turn that into properties (the server's, listener-prefixed, and the admin tools') and into the host
preflight's refusals: a cluster whose nodes trust another CA than the project's (the CA was lost or
moved: a new one would make the nodes distrust each other in the middle of a roll), and a running cluster
whose controller or inter-broker listener would switch from one protocol to another (PLAINTEXT, SSL,
SASL_SSL: a roll would split the quorum or the replication, the restarted nodes and the others could not talk).

Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.pki import own_certificate_problems, trust_problem
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties


def _ssl_files(tls_dir: str) -> dict[str, str]:
    # Kafka reads PEM directly (KIP-651): the node's unencrypted PKCS#8 key followed by its certificate, and
    # the CA's certificate as the trust store. Unencrypted, so no password sits in any properties file; the
    # key file is root:kafka 0640 in a 0750 directory.
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": f"{tls_dir}/node.pem",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": f"{tls_dir}/ca.pem",
    }


# The node's PKCS12 key store's password, made on the node (tasks/tls.yml) and read by Kafka at start through its
# FileConfigProvider: no password in server.properties, none in any log.
KEYSTORE_PASSWORD_FILE = "keystore.properties"


def kafka_tls_server_properties(model: Mapping[str, Any], tls_dir: str, keystore_type: str = "PEM") -> dict[str, str]:
    """Every TLS listener's settings for server.properties (every node: brokers dial the controllers and each other).

    Prefixed with the listener's name, so they apply to that listener only, on both ends: a node serves it
    with them, and its own connections over it (to the quorum, to other brokers) use the same prefix, so the
    node's certificate is what it presents where the other end asks for one (ssl.client.auth).
    keystore_type PKCS12 (kafka_tls_keystore_type): the key store is node.p12, made on the node from node.pem, whose
    password Kafka reads from the node's keystore.properties; the trust store stays PEM (certificates only).
    """
    files = _ssl_files(tls_dir)
    extra: dict[str, str] = {}
    if keystore_type == "PKCS12":
        password = f"${{file:{tls_dir}/{KEYSTORE_PASSWORD_FILE}:password}}"
        files.update(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": f"{tls_dir}/node.p12",
                "ssl.keystore.password": password,
                "ssl.key.password": password,
            }
        )
        extra = {
            "config.providers": "file",
            "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        }
    props: dict[str, str] = {}
    for name, client_auth in sorted(dict(model.get("tls_listeners") or {}).items()):
        prefix = f"listener.name.{name.lower()}."
        props.update({prefix + key: value for key, value in files.items()})
        props[prefix + "ssl.client.auth"] = str(client_auth)
    return {**props, **extra} if props else {}


def kafka_zookeeper_client_properties(
    model: Mapping[str, Any], server_properties: Mapping[str, str], tls_dir: str
) -> dict[str, str]:
    """A node's TLS settings for ZooKeeper (zookeeper.ssl.*), when the ensemble runs TLS (model zookeeper_tls) and
    the node talks to ZooKeeper: its server.properties (kafka_outputs.kafka_server_properties, which alone decides
    that) has zookeeper.connect. Else {}.

    The same keys are what zookeeper-shell's -zk-tls-config-file reads. The key store is the node's own key with
    the certificate every Kafka node's subject shares (tasks/zookeeper_tls.yml); the trust store the project CA.
    The client checks that the server's certificate names the address it dialled (ZooKeeper's client default).
    """
    if not model.get("zookeeper_tls") or "zookeeper.connect" not in server_properties:
        return {}
    return {
        "zookeeper.ssl.client.enable": "true",
        # TLS needs ZooKeeper's Netty client (the NIO one cannot do it).
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.type": "PEM",
        "zookeeper.ssl.keystore.location": f"{tls_dir}/zookeeper-client.pem",
        "zookeeper.ssl.truststore.type": "PEM",
        "zookeeper.ssl.truststore.location": f"{tls_dir}/ca.pem",
    }


def kafka_tls_client_properties(model: Mapping[str, Any], tls_dir: str, listener: str | None = None) -> dict[str, str]:
    """The admin tools' --command-config on a node, for one listener (default: the controller listener, for
    --bootstrap-controller; the inter-broker one for --bootstrap-server): the node's own key and certificate.
    A PLAINTEXT listener needs nothing, so it gives {}."""
    name = listener or str((model.get("controller_listener") or {}).get("name") or "")
    if not model.get("tls") or name not in dict(model.get("tls_listeners") or {}):
        return {}
    # The client verifies the server's certificate names the address it dialled (the default https
    # endpoint identification), so a certificate for another host is refused.
    return {"security.protocol": "SSL", **_ssl_files(tls_dir)}


def kafka_tool_client_files(model: Mapping[str, Any]) -> list[dict[str, str]]:
    """The admin tools' settings files on a node, each with its listener (tasks/configure.yml writes those that run
    TLS): the wrappers' two (--bootstrap-controller, --bootstrap-server) and one per TLS client listener."""
    controller = str((model.get("controller_listener") or {}).get("name", ""))
    return [
        {"file": "controller-client.properties", "listener": controller},
        {"file": "client.properties", "listener": str(model.get("inter_broker_listener_name") or "")},
        *(
            {"file": f"client-{name.lower()}.properties", "listener": name}
            for name in model.get("listener_client_configs") or {}
        ),
    ]


def kafka_tls_problems(
    model: Mapping[str, Any],
    disks: Mapping[str, Mapping[str, Any]],
    project_ca: str,
    ca_dir: str,
    own_ca: str = "",
) -> list[str]:
    """What a run must refuse before it changes anything, each naming the host, the value and the fix.

    disks: host -> {"config": the node's server.properties now ('' if none), "ca": the CA certificate the
    node trusts now ('' if none)}. project_ca: what the project trusts (lookup kafkalab.kafka.pki_trust: the CA,
    or both of a rotation; '' if none). own_ca: kafka_tls_own_ca, the path of the operator's CA (then project_ca
    is its text): a node that trusts none of it would distrust its peers in the roll.
    """
    problems = []
    listener = model.get("controller_listener") or {}
    tls_listeners = dict(model.get("tls_listeners") or {})
    # A running cluster cannot switch these between PLAINTEXT and SSL in a roll: the restarted node and the
    # others could not talk (the quorum, or replication, would split).
    controller_name = str(listener.get("name") or "")
    inter_broker_name = str(model.get("inter_broker_listener_name") or "")
    watched = {
        controller_name: ("kafka_controller_listener.protocol", "the quorum", ""),
        inter_broker_name: (
            "the protocol of kafka_inter_broker_listener_name's listener",
            "replication",
            "; to secure a running cluster, add a new listener with protocol SSL or SASL_SSL, then move "
            "kafka_inter_broker_listener_name to it in a second run",
        ),
    }
    for host, disk in sorted(disks.items()):
        config = str(disk.get("config") or "")
        if config:
            protocols = dict(
                item.split(":", 1)
                for item in parse_properties(config).get("listener.security.protocol.map", "").split(",")
                if ":" in item
            )
            for name, (variable, split, other_way) in watched.items():
                now = protocols.get(name)
                wanted = (
                    str(listener.get("protocol") or "PLAINTEXT")
                    if name == controller_name
                    else str(model.get("inter_broker_protocol") or ("SSL" if name in tls_listeners else "PLAINTEXT"))
                )
                if name and now is not None and now != wanted:
                    problems.append(
                        f"{host}: its listener {name} runs {now}, and {variable} is {wanted}: switching a running "
                        f"cluster's {'controller' if name == controller_name else 'inter-broker'} listener from "
                        f"{now} to {wanted} is not supported (a roll would split {split}: restarted and waiting nodes "
                        f"could not talk). Set the protocol back to {now}{other_way}; or rebuild the lab cluster with "
                        f"{wanted} from the start."
                    )
        problem = (
            trust_problem(
                host, str(disk.get("ca") or ""), project_ca, own_ca, "kafka_tls_own_ca",
                "To move a running cluster to another CA, first list both CAs in kafka_tls_own_ca and run (every "
                "node then trusts both), then give the nodes certificates of the new one and run, then drop the old "
                "CA and run.",
            )
            if own_ca
            else trust_problem(host, str(disk.get("ca") or ""), project_ca, ca_dir, "kafka_tls_ca_dir")
        )  # fmt: skip
        if problem:
            problems.append(problem)
    return problems


def kafka_own_tls_problems(
    model: Mapping[str, Any],
    security: Mapping[str, Any],
    own_ca: str,
    certificates: Mapping[str, Any],
    keys: Mapping[str, Any],
) -> list[str]:
    """With kafka_tls_own_ca: what is wrong with the files the operator supplies, per node that runs TLS, each with
    the variable, the value and the fix (module_utils/pki.py own_certificate_problems). certificates, keys: host ->
    kafka_tls_own_certificate, kafka_tls_own_key (paths on the controller machine)."""
    if not own_ca or not model.get("tls"):
        return []
    problems: list[str] = []
    for host, node in sorted(dict(model.get("nodes") or {}).items()):
        files = {
            "ca": ("kafka_tls_own_ca", own_ca),
            "certificate": ("kafka_tls_own_certificate", str(certificates.get(host) or "")),
            "key": ("kafka_tls_own_key", str(keys.get(host) or "")),
        }
        names = [str(n) for n in node.get("tls_names") or []]
        problems += own_certificate_problems(host, names, files, bool(security.get("authorizer")))
    return problems


EXPIRY_METRIC = "kafka_tls_certificate_expiry_timestamp_seconds"


def kafka_tls_expiry_metric(certificate: str, node: str) -> str:
    """The node exporter's textfile for the certificate in a node's key store: when it expires (Unix time; the node
    serves it from its next start on, so a renewal whose restart is pending shows already), labelled with the node
    (kafka_node: instances on one machine share its exporter) and the certificate's subject. '' for no certificate
    (check mode on a first run)."""
    if not certificate.strip():
        return ""
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(certificate.encode())
    # cryptography 42 has the aware not_valid_after_utc; the naive not_valid_after is UTC as well.
    after = getattr(cert, "not_valid_after_utc", None) or cert.not_valid_after.replace(tzinfo=UTC)
    subject = cert.subject.rfc4514_string().replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"# HELP {EXPIRY_METRIC} When the certificate in this Kafka node's key store (node.pem) expires.\n"
        f"# TYPE {EXPIRY_METRIC} gauge\n"
        f'{EXPIRY_METRIC}{{kafka_node="{node}",subject="{subject}"}} {int(after.timestamp())}\n'
    )


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_tls_expiry_metric": kafka_tls_expiry_metric,
            "kafka_zookeeper_client_properties": kafka_zookeeper_client_properties,
            "kafka_tls_server_properties": kafka_tls_server_properties,
            "kafka_tls_client_properties": kafka_tls_client_properties,
            "kafka_tls_problems": kafka_tls_problems,
            "kafka_own_tls_problems": kafka_own_tls_problems,
            "kafka_tool_client_files": kafka_tool_client_files,
        }
