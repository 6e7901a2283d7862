"""The Schema Registry model: where each Apicurio Registry instance runs, how it reaches Kafka, what it may do
there, who may reach it, the subjects the inventory declares, and every problem in those settings. Built once on
the controller (roles/schema_registry/tasks/preflight.yml) from the inventory and the Kafka role's models.

    {"instances": {host: {"address": ip, "port": 8081, "url": "https://ip:8081", "names": [SANs]}},
     "scheme": "https" | "http", "metrics_path": "/metrics",
     "client_ca": the controller's CA bundle that verifies the instances' certificates ("" without TLS),
     "version": "3.0.9", "min_java": 17,
     "kafka": {"bootstrap": "...", "protocol": "SASL_SSL", "user": "schema-registry" | ""},
     "topics": [kafka_topics records], "group_prefix": "...", "acls": [normalized ACLs],
     "subjects": [{"name", "schema", "type", "compatibility"?, "state"}],
     "firewall_services": [firewall role records], "problems": [str]}

Pure functions over plain data, plus reading the declared schema files (unit tested in
tests/unit/test_schema_registry_model.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    FIREWALL_ADDRESS,
    as_int,
    get,
    host_address,
    is_port,
    machine,
    unknown_keys,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import user_acl
from ansible_collections.kafkalab.kafka.plugins.module_utils.schema_registry_plan import LEVELS, TYPES

# The levels and schema types the subjects module knows (one list for the preflight and the module).
COMPATIBILITY_LEVELS = LEVELS
SCHEMA_TYPES = TYPES
SUBJECT_KEYS = {"name", "schema_file", "type", "compatibility", "state"}
# The oldest Java each Apicurio Registry release runs on (its Quarkus): 3.0.x on 17, 3.1 and later on 21.
MIN_JAVA = {"3.0": 17}
DEFAULT_MIN_JAVA = 21
# Ports other services of this project take on a host by default (their variable, default), when the host is in
# the group that runs them.
OTHER_PORTS = (
    ("spark_worker", "spark_worker_webui_port", 8081, "the Spark worker's web UI"),
    ("spark_master", "spark_master_webui_port", 8080, "the Spark master's web UI"),
    ("monitoring", "prometheus_port", 9090, "Prometheus"),
)


def min_java(version: str) -> int:
    """The oldest Java major the registry release runs on."""
    major_minor = ".".join(str(version).split(".")[:2])
    return MIN_JAVA.get(major_minor, DEFAULT_MIN_JAVA)


def registry_acls(user: str, topics: Iterable[str], group_prefix: str) -> list[dict[str, str]]:
    """What the registry's Kafka user may do, and no more: read, write and describe its own topics (the journal, the
    snapshots, the events), and read its consumer groups (a new one per start and consumer: `<prefix><uuid>`)."""
    acls = [user_acl(user, "topic", t, op) for t in topics for op in ("read", "write", "describe")]
    acls.append(user_acl(user, "group", group_prefix, "read", "prefixed"))
    acls.append(user_acl(user, "group", group_prefix, "describe", "prefixed"))
    return acls


def avro_problem(text: str) -> str | None:
    """Why an Avro schema text does not parse (None: it does)."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        return f"is not JSON ({exc})"
    try:
        import fastavro
    except ImportError:
        return "cannot be checked: the controller lacks fastavro (pip install fastavro, as pyproject.toml pins it)"
    try:
        fastavro.parse_schema(document)
    except Exception as exc:  # fastavro raises SchemaParseException, UnknownType, ValueError, KeyError...
        return f"is not a valid Avro schema ({type(exc).__name__}: {exc})"
    return None


def _subjects(raw: Any, schemas_dir: str, problems: list[str]) -> list[dict[str, Any]]:
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(
            f"schema_registry_subjects is a {type(raw).__name__}: it must be a list of subjects (name, schema_file, "
            "type, compatibility, state). Fix schema_registry_subjects in group_vars."
        )
        return []
    subjects: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"schema_registry_subjects[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is {item!r}: each subject is a mapping (name, schema_file, type, compatibility).")
            continue
        name = str(item.get("name") or "")
        where = f"{where} ({name or 'no name'})"
        problems += unknown_keys(item, SUBJECT_KEYS, where, "a subject")
        if not name or "/" in name:
            problems.append(f"{where}: name {name!r} must be a subject name without '/' (e.g. orders-value).")
        elif name in seen:
            problems.append(f"{where}: subject {name} is declared twice. Declare each subject once.")
        seen.add(name)
        state = str(item.get("state") or "present")
        if state not in ("present", "absent"):
            problems.append(f"{where}: state is {state!r}; it must be present or absent.")
        kind = str(item.get("type") or "AVRO").upper()
        if kind not in SCHEMA_TYPES:
            problems.append(f"{where}: type is {item.get('type')!r}; it must be one of {', '.join(SCHEMA_TYPES)}.")
        subject: dict[str, Any] = {"name": name, "type": kind, "state": state}
        level = item.get("compatibility")
        if level not in (None, ""):
            if str(level).upper() not in COMPATIBILITY_LEVELS:
                problems.append(
                    f"{where}: compatibility is {level!r}; it must be one of {', '.join(COMPATIBILITY_LEVELS)}."
                )
            subject["compatibility"] = str(level).upper()
        if state == "present":
            file = str(item.get("schema_file") or "")
            path = file if os.path.isabs(file) else os.path.join(schemas_dir, file)
            if not file:
                problems.append(
                    f"{where}: schema_file is missing: the file of the subject's schema (e.g. orders.avsc)."
                )
            elif not os.path.isfile(path):
                problems.append(
                    f"{where}: schema_file {file!r} is not a file ({path}; relative names are read in "
                    "schema_registry_schemas_dir). Put the schema there, or fix the name."
                )
            else:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                why = avro_problem(text) if kind == "AVRO" else None
                if why:
                    problems.append(f"{where}: schema_file {path} {why}. Fix the schema.")
                subject["schema"] = text
        subjects.append(subject)
    return subjects


def _kafka_ports(kafka: Mapping[str, Any], machine_of: str, hostvars: Mapping[str, Any]) -> dict[int, str]:
    """Ports the Kafka nodes on one machine take (listeners, JMX exporter agent)."""
    ports: dict[int, str] = {}
    for host, node in (kafka.get("nodes") or {}).items():
        if machine(hostvars, host) != machine_of:
            continue
        for listener in node.get("listeners") or []:
            port = as_int(listener.get("port"))
            if port:
                ports[port] = f"{host}'s Kafka listener {listener.get('name')}"
        metrics = as_int(node.get("metrics_port"))
        if metrics:
            ports[metrics] = f"{host}'s Kafka metrics (JMX exporter)"
    return ports


def schema_registry_model(
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    kafka: Mapping[str, Any],
    security: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The model above. `settings`: the role's variables as the first registry host sees them (defaults applied)."""
    group = str(settings.get("schema_registry_group") or "schema_registry")
    hosts = sorted(groups.get(group) or [])
    problems: list[str] = []
    empty: dict[str, Any] = {
        "instances": {},
        "scheme": "http",
        "metrics_path": "/metrics",
        "client_ca": "",
        "firewall_services": [],
        "problems": problems,
    }
    if not hosts:
        return empty
    version = str(settings.get("schema_registry_version") or "")
    tls = bool(settings.get("schema_registry_tls", True))
    scheme = "https" if tls else "http"
    instances: dict[str, dict[str, Any]] = {}
    for host in hosts:
        port = get(hostvars, host, "schema_registry_port", settings.get("schema_registry_port", 8081))
        address = host_address(hostvars, host, FIREWALL_ADDRESS, bare_names=True)
        if not is_port(port):
            problems.append(
                f"{host}: schema_registry_port is {port!r}: it must be a TCP port (1-65535). Fix schema_registry_port."
            )
            continue
        port = int(str(port))
        taken = _kafka_ports(kafka, machine(hostvars, host), hostvars)
        for other_group, name, default, what in OTHER_PORTS:
            if host in (groups.get(other_group) or []):
                other = as_int(get(hostvars, host, name, default))
                if other:
                    taken.setdefault(other, f"{host}'s {what} ({name})")
        if port in taken:
            problems.append(
                f"{host}: schema_registry_port is {port}, which {taken[port]} uses on the same machine. Give "
                "schema_registry_port (or the other) another port."
            )
        names = list(dict.fromkeys([host, str(address)]))
        instances[host] = {"address": str(address), "port": port, "url": f"{scheme}://{address}:{port}", "names": names}

    ca_dir = str(kafka.get("tls_ca_dir") or "")
    if tls and not ca_dir:
        problems.append(
            "schema_registry_tls is true, but the Kafka cluster has no project CA (kafka_tls_ca_dir: no listener runs "
            "TLS) to sign the registry's certificates. Turn TLS on for a Kafka listener, or set schema_registry_tls: "
            "false."
        )
    level = str(settings.get("schema_registry_compatibility") or "").upper()
    if level not in COMPATIBILITY_LEVELS:
        problems.append(
            f"schema_registry_compatibility is {settings.get('schema_registry_compatibility')!r}: it must be one of "
            f"{', '.join(COMPATIBILITY_LEVELS)} (Confluent's default is BACKWARD). Fix it in group_vars."
        )
    if len(hosts) < 2:
        problems.append(
            f"group {group} has one host ({hosts[0]}): a registry that serves through a restart needs two instances "
            "(they share their data through Kafka). Add a second host to the group."
        )

    bootstrap = str(kafka.get("bootstrap_servers") or "")
    protocol = str(kafka.get("inter_broker_protocol") or "PLAINTEXT")
    if not bootstrap:
        problems.append(
            f"group {group} has hosts ({', '.join(hosts)}), but the inventory has no Kafka brokers for the registry "
            "to keep its data in (kafkasql storage). Add brokers (kafka_broker), or empty the group."
        )
    user = str(settings.get("schema_registry_kafka_user") or "")
    if protocol == "SASL_SSL":
        declared = (security.get("users") or {}).get(user) or {}
        if declared.get("state") != "present":
            problems.append(
                f"{', '.join(hosts)}: schema_registry_kafka_user is {user!r}, which kafka_users does not declare "
                "(present, with a password), but the registry logs in to Kafka's SASL_SSL bootstrap listener. "
                "Declare a user for it in kafka_users and set schema_registry_kafka_user to its name."
            )
    elif protocol not in ("PLAINTEXT", "SSL"):
        problems.append(f"the bootstrap listener's protocol {protocol} is not one the registry role configures.")
    if protocol in ("SSL", "SASL_SSL") and kafka.get("client_auth") == "required":
        problems.append(
            "the bootstrap listener asks clients for certificates (ssl.client.auth required); the registry role "
            "logs in with SCRAM, not a certificate. Use SASL_SSL on the inter-broker listener."
        )

    topics_settings = {
        "journal": str(settings.get("schema_registry_journal_topic") or ""),
        "snapshots": str(settings.get("schema_registry_snapshots_topic") or ""),
        "events": str(settings.get("schema_registry_events_topic") or ""),
    }
    replication = as_int(settings.get("schema_registry_topic_replication_factor"))
    brokers = [h for h, n in (kafka.get("nodes") or {}).items() if "broker" in (n.get("roles") or [])]
    if replication is None or replication < 1 or (brokers and replication > len(brokers)):
        problems.append(
            f"schema_registry_topic_replication_factor is {settings.get('schema_registry_topic_replication_factor')!r}"
            f": it must be a whole number from 1 to the number of brokers ({len(brokers)}). Fix it in group_vars."
        )
        replication = 1
    # One replica may be away (a restart) and writes go on; a single replica is its own minimum.
    min_isr = min(2, replication - 1) if replication > 1 else 1
    # One partition each: the journal's order is the registry's order of changes.
    topics = [
        {
            "name": name,
            "partitions": 1,
            "replication_factor": replication,
            "configs": {
                "min.insync.replicas": min_isr,
                "retention.ms": -1,
                "retention.bytes": -1,
                "cleanup.policy": "delete",
            },
        }
        for name in topics_settings.values()
    ]
    group_prefix = str(settings.get("schema_registry_group_prefix") or "")
    acls = registry_acls(user, topics_settings.values(), group_prefix) if user and protocol == "SASL_SSL" else []

    schemas_dir = str(settings.get("schema_registry_schemas_dir") or "")
    subjects = _subjects(settings.get("schema_registry_subjects"), schemas_dir, problems)

    client_groups = settings.get("schema_registry_client_groups") or []
    client_hosts = sorted({h for g in client_groups for h in (groups.get(g) or [])} | set(hosts))
    monitoring = sorted(groups.get("monitoring") or [])
    networks = list(settings.get("schema_registry_client_networks") or [])
    by_port: dict[int, list[str]] = {}
    for host, instance in instances.items():
        by_port.setdefault(instance["port"], []).append(host)
    services = [
        {
            "name": "schema registry",
            "hosts": members,
            "port": port,
            "from_hosts": sorted(set(client_hosts) | set(monitoring)),
            "from_networks": list(dict.fromkeys([*networks, "monitoring"])),
        }
        for port, members in sorted(by_port.items())
    ]
    return {
        "instances": instances,
        "scheme": scheme,
        "metrics_path": "/metrics",
        "client_ca": f"{ca_dir}/trust.pem" if tls else "",
        "ca_dir": ca_dir,
        "version": version,
        "min_java": min_java(version),
        "compatibility": level,
        "kafka": {"bootstrap": bootstrap, "protocol": protocol, "user": user if protocol == "SASL_SSL" else ""},
        "topics": topics,
        "group_prefix": group_prefix,
        "acls": acls,
        "subjects": subjects,
        "firewall_services": services,
        "problems": problems,
    }


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"schema_registry_model": schema_registry_model}
