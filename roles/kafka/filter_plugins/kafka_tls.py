"""TLS on the KRaft controller listener: what each node's properties say, and what a run must refuse.

The model (kafka_cluster.py) says whether the controller listener runs TLS (`tls`) and which names each
node's certificate carries (`tls_names`); tasks/tls.yml makes the keys and certificates. These filters
turn that into properties (the server's, listener-prefixed, and the admin tools') and into the host
preflight's refusals: a cluster whose nodes trust another CA than the project's (the CA was lost or
moved: a new one would make the nodes distrust each other in the middle of a roll), and a running cluster
whose controller listener would switch between PLAINTEXT and SSL (a roll would split the quorum: the
restarted nodes and the others could not talk).

Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.properties import parse_properties


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


def kafka_tls_server_properties(model: Mapping[str, Any], tls_dir: str) -> dict[str, str]:
    """The controller listener's TLS settings for server.properties (every node: brokers are its clients).

    Prefixed with the listener's name, so they apply to that listener only, on both ends: the controllers
    serve it, and the brokers' (and controllers') connections to the quorum use the same prefix.
    """
    if not model.get("tls"):
        return {}
    listener = model["controller_listener"]
    prefix = f"listener.name.{str(listener['name']).lower()}."
    props = {prefix + key: value for key, value in _ssl_files(tls_dir).items()}
    props[prefix + "ssl.client.auth"] = str(listener["client_auth"])
    return props


def kafka_tls_client_properties(model: Mapping[str, Any], tls_dir: str) -> dict[str, str]:
    """The admin tools' --command-config for --bootstrap-controller: the node's own key and certificate."""
    if not model.get("tls"):
        return {}
    # The client verifies the controller's certificate names the address it dialled (the default https
    # endpoint identification), so a certificate for another host is refused.
    return {"security.protocol": "SSL", **_ssl_files(tls_dir)}


def _fingerprint(pem: str) -> str:
    return hashlib.sha256(pem.strip().encode()).hexdigest()[:16]


def kafka_tls_problems(
    model: Mapping[str, Any],
    disks: Mapping[str, Mapping[str, Any]],
    project_ca: str,
    ca_dir: str,
) -> list[str]:
    """What a run must refuse before it changes anything, each naming the host, the value and the fix.

    disks: host -> {"config": the node's server.properties now ('' if none), "ca": the CA certificate the
    node trusts now ('' if none)}. project_ca: the project CA's certificate on the controller ('' if none).
    """
    problems = []
    listener = model.get("controller_listener") or {}
    name = str(listener.get("name") or "")
    wanted = str(listener.get("protocol") or "PLAINTEXT")
    for host, disk in sorted(disks.items()):
        config = str(disk.get("config") or "")
        if name and config:
            protocols = dict(
                item.split(":", 1)
                for item in parse_properties(config).get("listener.security.protocol.map", "").split(",")
                if ":" in item
            )
            now = protocols.get(name)
            if now is not None and now != wanted:
                problems.append(
                    f"{host}: its controller listener {name} runs {now}, and kafka_controller_listener.protocol is "
                    f"{wanted}: switching a running cluster's controller listener between PLAINTEXT and SSL is not "
                    "supported (a roll would split the quorum: restarted and waiting nodes could not talk). Set "
                    f"protocol back to {now}, or rebuild the lab cluster with {wanted} from the start."
                )
        trusted = str(disk.get("ca") or "")
        if model.get("tls") and trusted.strip() and trusted.strip() != project_ca.strip():
            where = (
                f"another CA (sha256 {_fingerprint(project_ca)}...) is in kafka_tls_ca_dir {ca_dir}"
                if project_ca.strip()
                else f"kafka_tls_ca_dir {ca_dir} holds no CA"
            )
            problems.append(
                f"{host}: trusts the CA whose certificate hashes to sha256 {_fingerprint(trusted)}..., but {where}: "
                "the project CA was lost or moved. A new CA would make the nodes distrust each other in the middle "
                "of a roll. Restore ca.pem and ca.key into kafka_tls_ca_dir (or point kafka_tls_ca_dir at them)."
            )
    return problems


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_tls_server_properties": kafka_tls_server_properties,
            "kafka_tls_client_properties": kafka_tls_client_properties,
            "kafka_tls_problems": kafka_tls_problems,
        }
