"""The Kafka Connect model: where each distributed worker runs, how it reaches Kafka, what it may do there, who may
reach its REST API, the connectors and connector secrets the inventory declares, and every problem in those settings.
Built once on the controller (roles/kafka_connect/tasks/preflight.yml) from the inventory and the Kafka role's models.

    {"workers": {host: {"address": ip, "port": 8083, "url": "https://ip:8083", "names": [SANs],
                        "metrics_port": 7073 | None (no monitoring hosts)}},
     "client_ca": the controller's CA bundle that verifies the workers' certificates,
     "version": "4.3.1", "group_id": "connect-cluster",
     "kafka": {"bootstrap": "...", "protocol": "SASL_SSL", "user": "connect" | ""},
     "topics": [kafka_topics records], "acls": [normalized ACLs],
     "rest_user": the REST user the playbooks call the API as,
     "connectors": [{"name", "config": {str: str}, "state": "present" | "absent"}],
     "secret_files": {name: path on the workers}, "secrets_dir": "/etc/kafka-connect/secrets",
     "firewall_services": [firewall role records], "problems": [str]}

Connector configs are plain data here: every value a string, as Connect stores and returns them, so the connectors
module compares what a worker returns with what is declared. A value that looks like a secret (a key naming a
password, secret, token or credential) must be a config-provider placeholder, ${file:<secrets file>:<key>}, naming a
file and key kafka_connect_secrets declares: the secret then lives in a file on the workers (root:<group> 0640) and
never in the config topic, the REST output or a log.

Pure functions over plain data (unit tested in tests/unit/test_kafka_connect_model.py).
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    FIREWALL_ADDRESS,
    as_int,
    exporter_port,
    exporter_services,
    get,
    host_address,
    is_port,
    unknown_keys,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import pattern_acls, user_acl
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_mirror_plan import covered, mirror_plan
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import to_properties

CONNECTOR_KEYS = {"name", "config", "state", "reads", "writes"}
STATES = ("present", "absent")
# A key whose value is a secret: refused in clear (put it in kafka_connect_secrets).
SECRET_KEY = re.compile(r"(password|secret|token|credential|sasl\.jaas\.config|api\.key)", re.IGNORECASE)
PLACEHOLDER = re.compile(r"\$\{file:([^:}]+):([^}]+)\}")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A secret file's name and a key in it (a Java properties key without separators).
SECRET_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Ports other services of this project take on a host by default (their group, variable, default).
OTHER_PORTS = (
    ("schema_registry", "schema_registry_port", 8081, "the Schema Registry"),
    ("spark_worker", "spark_worker_webui_port", 8081, "the Spark worker's web UI"),
    ("spark_master", "spark_master_webui_port", 8080, "the Spark master's web UI"),
    ("monitoring", "prometheus_port", 9090, "Prometheus"),
)


def worker_acls(
    user: str,
    group_id: str,
    internal_topics: Iterable[str],
    connectors: Iterable[Mapping[str, Any]],
    extra: Iterable[dict[str, str]] = (),
) -> list[dict[str, str]]:
    """What the workers' Kafka user may do, and no more: its group (join, sync), its three internal topics (read and
    write them, and check their cleanup policy at start), what each declared connector reads (its topics and its sink
    group connect-<name>) and writes."""
    acls = [user_acl(user, "group", group_id, "read"), user_acl(user, "group", group_id, "describe")]
    acls += pattern_acls(user, "topic", internal_topics, ("read", "write", "describe", "describe_configs"))
    for connector in connectors:
        if connector["state"] != "present":
            continue
        if connector["reads"]:
            acls += pattern_acls(user, "topic", connector["reads"], ("read", "describe"))
            acls += [user_acl(user, "group", f"connect-{connector['name']}", op) for op in ("read", "describe")]
        acls += pattern_acls(user, "topic", connector["writes"], ("write", "describe"))
    acls += extra
    unique: dict[tuple[str, ...], dict[str, str]] = {}
    for acl in acls:
        unique.setdefault(tuple(acl.values()), acl)
    return list(unique.values())


def _names(raw: Any) -> list[str]:
    if raw in (None, ""):
        return []
    if isinstance(raw, str):
        return [t.strip() for t in raw.split(",") if t.strip()]
    if isinstance(raw, list):
        return [str(t).strip() for t in raw if str(t).strip()]
    return []


def _secrets(raw: Any, secrets_dir: str, problems: list[str]) -> dict[str, list[str]]:
    """kafka_connect_secrets: {file name: {key: value}} -> {path on the workers: [keys]} (the values stay out of the
    model, which Ansible may print; the role writes the files from the variable itself, unlogged)."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, Mapping):
        problems.append(
            f"kafka_connect_secrets is a {type(raw).__name__}: it must map a file name to its keys and values "
            "(e.g. {postgres: {password: ...}}). Fix kafka_connect_secrets."
        )
        return {}
    files: dict[str, list[str]] = {}
    for name, keys in raw.items():
        if not SECRET_KEY_NAME.match(str(name)):
            problems.append(
                f"kafka_connect_secrets: file name {name!r} must be letters, digits, '.', '_' or '-' (no '/'). "
                "Rename it."
            )
            continue
        if not isinstance(keys, Mapping) or not keys:
            problems.append(f"kafka_connect_secrets.{name} must map at least one key to its value.")
            continue
        bad = [str(k) for k in keys if not SECRET_KEY_NAME.match(str(k))]
        if bad:
            problems.append(
                f"kafka_connect_secrets.{name}: key(s) {', '.join(bad)} must be letters, digits, '.', "
                "'_' or '-'. Rename them."
            )
        if any(v is None or "\n" in str(v) for v in keys.values()):
            problems.append(f"kafka_connect_secrets.{name}: a value is empty or spans lines. Give one-line values.")
        files[f"{secrets_dir}/{name}.properties"] = sorted(str(k) for k in keys)
    return files


def _connectors(raw: Any, secret_files: Mapping[str, list[str]], problems: list[str]) -> list[dict[str, Any]]:
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(
            f"kafka_connect_connectors is a {type(raw).__name__}: it must be a list of connectors (name, config, "
            "state). Fix kafka_connect_connectors."
        )
        return []
    connectors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"kafka_connect_connectors[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is {item!r}: each connector is a mapping (name, config, state).")
            continue
        name = str(item.get("name") or "")
        where = f"{where} ({name or 'no name'})"
        problems += unknown_keys(item, CONNECTOR_KEYS, where, "a connector")
        if not NAME.match(name):
            problems.append(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-' (e.g. orders-sink).")
        elif name in seen:
            problems.append(f"{where}: connector {name} is declared twice. Declare each connector once.")
        seen.add(name)
        state = str(item.get("state") or "present")
        if state not in STATES:
            problems.append(f"{where}: state is {state!r}; it must be present or absent.")
        raw_config = item.get("config")
        config: dict[str, str] = {}
        if state == "present":
            if not isinstance(raw_config, Mapping) or not raw_config.get("connector.class"):
                problems.append(f"{where}: config must be a mapping with connector.class (and the connector's keys).")
                raw_config = raw_config if isinstance(raw_config, Mapping) else {}
            for key, value in raw_config.items():
                if isinstance(value, (dict, list)) or value is None:
                    problems.append(
                        f"{where}: config key {key} is {value!r}; Connect takes strings, numbers or "
                        "booleans. Give a scalar (a list is a comma-separated string)."
                    )
                    continue
                text = ("true" if value else "false") if isinstance(value, bool) else str(value)
                config[str(key)] = text
            if config.get("name", name) != name:
                problems.append(f"{where}: config name {config['name']!r} differs from the connector's name. Drop it.")
            config["name"] = name
            for key, text in config.items():
                _check_secret(where, key, text, secret_files, problems)
        reads = _names(item.get("reads")) or (_names(config.get("topics")) if state == "present" else [])
        writes = _names(item.get("writes")) or _names(config.get("topic"))
        connectors.append({"name": name, "config": config, "state": state, "reads": reads, "writes": writes})
    return connectors


def _check_secret(where: str, key: str, text: str, secret_files: Mapping[str, list[str]], problems: list[str]) -> None:
    placeholders = PLACEHOLDER.findall(text)
    for path, secret_key in placeholders:
        if path not in secret_files:
            problems.append(
                f"{where}: {key} reads {path}, which kafka_connect_secrets does not declare (files are "
                f"{', '.join(sorted(secret_files)) or 'none'}). Declare it, or fix the path."
            )
        elif secret_key not in secret_files[path]:
            problems.append(f"{where}: {key} reads key {secret_key!r} of {path}, which has no such key. Add it.")
    if SECRET_KEY.search(key) and not placeholders and text:
        problems.append(
            f"{where}: {key} holds a secret in clear, which would land in the config topic and the REST output. Put it "
            "in kafka_connect_secrets and give ${file:<secrets dir>/<file>.properties:<key>} here."
        )


def kafka_connect_model(
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Any],
    kafka: Mapping[str, Any],
    security: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The model above. `settings`: the role's variables as the first worker sees them (defaults applied)."""
    group = str(settings.get("kafka_connect_group") or "kafka_connect")
    hosts = sorted(groups.get(group) or [])
    problems: list[str] = []
    if not hosts:
        return {"workers": {}, "client_ca": "", "firewall_services": [], "connectors": [], "problems": problems}
    workers: dict[str, dict[str, Any]] = {}
    for host in hosts:
        port = get(hostvars, host, "kafka_connect_port", settings.get("kafka_connect_port", 8083))
        if not is_port(port):
            problems.append(f"{host}: kafka_connect_port is {port!r}: it must be a TCP port (1-65535). Fix it.")
            continue
        port = int(str(port))
        for other_group, name, default, what in OTHER_PORTS:
            if host in (groups.get(other_group) or []) and as_int(get(hostvars, host, name, default)) == port:
                problems.append(
                    f"{host}: kafka_connect_port is {port}, which {what} ({name}) uses on the same host. Give "
                    "kafka_connect_port (or the other) another port."
                )
        metrics = exporter_port(
            hostvars,
            groups,
            host,
            "kafka_connect_metrics_port",
            settings.get("kafka_connect_metrics_port", 7073),
            ("kafka_connect_port", port),
            problems,
        )
        address = str(host_address(hostvars, host, FIREWALL_ADDRESS, bare_names=True))
        names = list(dict.fromkeys([host, address]))
        workers[host] = {
            "address": address,
            "port": port,
            "url": f"https://{address}:{port}",
            "names": names,
            "metrics_port": metrics,
        }

    ca_dir = str(kafka.get("tls_ca_dir") or "")
    if not ca_dir:
        problems.append(
            f"group {group} has hosts, but the Kafka cluster has no project CA (kafka_tls_ca_dir: no listener runs "
            "TLS) to sign the workers' REST certificates: Connect's REST API runs HTTPS only. Turn TLS on for a Kafka "
            "listener."
        )
    bootstrap = str(kafka.get("bootstrap_servers") or "")
    protocol = str(kafka.get("inter_broker_protocol") or "PLAINTEXT")
    if not bootstrap:
        problems.append(
            f"group {group} has hosts ({', '.join(hosts)}), but the inventory has no Kafka brokers. Add brokers "
            "(kafka_broker), or empty the group."
        )
    user = str(settings.get("kafka_connect_kafka_user") or "")
    users = security.get("users") or {}
    if protocol == "SASL_SSL" and (users.get(user) or {}).get("state") != "present":
        problems.append(
            f"{', '.join(hosts)}: kafka_connect_kafka_user is {user!r}, which kafka_users does not declare (present, "
            "with a password), but the workers log in to Kafka's SASL_SSL bootstrap listener. Declare a user for them "
            "in kafka_users and set kafka_connect_kafka_user to its name."
        )
    elif protocol not in ("PLAINTEXT", "SSL", "SASL_SSL"):
        problems.append(f"the bootstrap listener's protocol {protocol} is not one the kafka_connect role configures.")
    if protocol in ("SSL", "SASL_SSL") and kafka.get("client_auth") == "required":
        problems.append(
            "the bootstrap listener asks clients for certificates (ssl.client.auth required); the kafka_connect role "
            "logs in with SCRAM, not a certificate. Use SASL_SSL on the inter-broker listener."
        )

    rest_users = settings.get("kafka_connect_rest_users")
    rest_user = str(settings.get("kafka_connect_rest_user") or "")
    declared_rest: dict[str, str] = {}
    if not isinstance(rest_users, list) or not rest_users:
        problems.append(
            "kafka_connect_rest_users is empty: Connect's REST API would be open to anyone who reaches it (an empty "
            "credentials file lets every request in). Declare at least one user: [{name: ..., password: ...}] "
            "(passwords from ansible-vault)."
        )
    else:
        for index, entry in enumerate(rest_users):
            name = str(entry.get("name") or "") if isinstance(entry, Mapping) else ""
            password = str(entry.get("password") or "") if isinstance(entry, Mapping) else ""
            if not NAME.match(name) or not password or any(c in password for c in "\n\\"):
                problems.append(
                    f"kafka_connect_rest_users[{index}] ({name or 'no name'}): a user needs a name (letters, digits, "
                    "'.', '_', '-') and a one-line password without backslashes."
                )
                continue
            declared_rest[name] = password
        if rest_user not in declared_rest:
            problems.append(
                f"kafka_connect_rest_user is {rest_user!r}, which kafka_connect_rest_users does not declare: the "
                f"playbooks call the REST API as it (declared: {', '.join(sorted(declared_rest)) or 'none'}). "
                "Set it to one of them."
            )

    replication = as_int(settings.get("kafka_connect_topic_replication_factor"))
    brokers = [h for h, n in (kafka.get("nodes") or {}).items() if "broker" in (n.get("roles") or [])]
    if replication is None or replication < 1 or (brokers and replication > len(brokers)):
        problems.append(
            f"kafka_connect_topic_replication_factor is {settings.get('kafka_connect_topic_replication_factor')!r}: it"
            f" must be a whole number from 1 to the number of brokers ({len(brokers)}). Fix it in group_vars."
        )
        replication = 1
    min_isr = min(2, replication - 1) if replication > 1 else 1
    partitions = {"config": 1}
    for kind in ("offsets", "status"):
        count = as_int(settings.get(f"kafka_connect_{kind}_partitions"))
        if count is None or count < 1:
            problems.append(
                f"kafka_connect_{kind}_partitions is {settings.get(f'kafka_connect_{kind}_partitions')!r}:"
                " it must be a whole number of 1 or more."
            )
            count = 1
        partitions[kind] = count
    topic_names = {kind: str(settings.get(f"kafka_connect_{kind}_topic") or "") for kind in partitions}
    if len(set(topic_names.values())) < 3 or not all(topic_names.values()):
        problems.append(f"the three internal topics must have three different names: {topic_names}. Fix them.")
    # Compacted (Connect checks the policy at start and refuses another), kept forever.
    topics = [
        {
            "name": topic_names[kind],
            "partitions": partitions[kind],
            "replication_factor": replication,
            "configs": {"cleanup.policy": "compact", "min.insync.replicas": min_isr},
        }
        for kind in ("config", "offsets", "status")
    ]
    group_id = str(settings.get("kafka_connect_group_id") or "")
    if not NAME.match(group_id):
        problems.append(f"kafka_connect_group_id is {group_id!r}: it must be letters, digits, '.', '_' or '-'.")

    secrets_dir = str(settings.get("kafka_connect_secrets_dir") or "")
    secret_files = _secrets(settings.get("kafka_connect_secrets"), secrets_dir, problems)
    connectors = _connectors(settings.get("kafka_connect_connectors"), secret_files, problems)
    for connector in connectors:
        if connector["name"] == group_id or f"connect-{connector['name']}" == group_id:
            problems.append(
                f"connector {connector['name']}: its name clashes with the workers' group "
                f"kafka_connect_group_id ({group_id}). Rename one."
            )
    sasl = user if protocol == "SASL_SSL" else ""
    # MirrorMaker 2: the declared mirrors as connectors of these workers. Their clients log in to this cluster with the
    # workers' own login, which the role writes to a secret file for them (the file provider reads it).
    config_dir = str(settings.get("kafka_connect_config_dir") or "")
    login_file = f"{secrets_dir}/{LOGIN_FILE}"
    mirror = mirror_plan(
        settings.get("kafka_connect_mirrors"),
        settings.get("kafka_connect_mirror_clusters"),
        {
            "alias": str(settings.get("kafka_connect_cluster_alias") or ""),
            "bootstrap_servers": bootstrap,
            "security_protocol": protocol,
            "sasl_mechanism": "SCRAM-SHA-512",
            "user": sasl,
            "jaas": f"${{file:{login_file}:sasl.jaas.config}}",
            "ca_path": f"{config_dir}/tls/ca.pem",
            "config_dir": config_dir,
            "replication_factor": replication,
        },
        problems,
    )
    declared = {c["name"] for c in connectors}
    readable = {**secret_files, login_file: ["sasl.jaas.config"]} if sasl else secret_files
    for connector in mirror["connectors"]:
        if connector["name"] in declared:
            problems.append(
                f"kafka_connect_connectors declares {connector['name']}, the name of a connector kafka_connect_mirrors"
                " makes. Rename it."
            )
        for key, text in connector["config"].items():
            _check_secret(f"kafka_connect_mirrors ({connector['name']})", key, text, readable, problems)
    connectors += mirror["connectors"]
    mirror_acls = [a | {"principal": f"User:{user}"} for a in mirror["acls"]]
    acls = worker_acls(user, group_id, topic_names.values(), connectors, mirror_acls) if sasl else []

    networks = list(settings.get("kafka_connect_client_networks") or [])
    client_groups = settings.get("kafka_connect_client_groups") or []
    clients = {h for g in client_groups for h in (groups.get(g) or [])}
    by_port: dict[int, list[str]] = {}
    for host, worker in workers.items():
        by_port.setdefault(worker["port"], []).append(host)
    # The workers reach each other's REST API (a follower forwards a request to the leader); the admin networks (the
    # controller applies connectors and gates restarts) and the inventory's client groups and networks reach it too.
    services = [
        {
            "name": "kafka connect rest",
            "hosts": members,
            "port": port,
            "from_hosts": sorted(clients | set(hosts)),
            "from_networks": list(dict.fromkeys([*networks, "admin"])),
        }
        for port, members in sorted(by_port.items())
    ]
    # The JMX exporter agent: Prometheus's hosts and the monitoring networks.
    services += exporter_services("kafka connect metrics", {h: w["metrics_port"] for h, w in workers.items()}, groups)
    return {
        "workers": workers,
        "client_ca": f"{ca_dir}/trust.pem" if ca_dir else "",
        "ca_dir": ca_dir,
        "version": str(settings.get("kafka_connect_version") or ""),
        "group_id": group_id,
        "kafka": {"bootstrap": bootstrap, "protocol": protocol, "user": sasl},
        "topics": topics,
        "acls": acls,
        "rest_user": rest_user,
        "connectors": connectors,
        "mirror_files": mirror["files"],
        "mirror_source_acls": mirror["source_acls"],
        "mirrors": mirror["mirrors"],
        "login_file": login_file if sasl else "",
        "secret_files": secret_files,
        "secrets_dir": secrets_dir,
        "firewall_services": services,
        "problems": problems,
    }


def kafka_connect_secret_file(item: Mapping[str, Any], secrets_dir: str, group: str) -> dict[str, str]:
    """One kafka_connect_secrets entry ({key: file name, value: {key: value}}) as the write_files record of its file."""
    values = item.get("value") or {}
    return {
        "path": f"{secrets_dir}/{item['key']}.properties",
        "content": to_properties({str(k): str(v) for k, v in values.items()}),
        "group": group,
        "mode": "0640",
    }


# The secret file with the workers' own Kafka login (a JAAS line) that MirrorMaker 2's clients read.
LOGIN_FILE = "connect-kafka-login.properties"
# A jar lock's name (python -m kafkalab.artifacts lock-jars --name): also the plugin's directory in plugin.path.
LOCK_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
ARCHIVES = ("tar.gz", "tgz", "zip")
# The ServiceLoader manifests that name a jar's connectors (Connect's plugin discovery reads the same).
CONNECTOR_SERVICES = (
    "META-INF/services/org.apache.kafka.connect.source.SourceConnector",
    "META-INF/services/org.apache.kafka.connect.sink.SinkConnector",
)


# Any Connect plugin type's manifest (connectors, converters, transformations, predicates, REST extensions, ...).
CONNECT_SERVICES = "META-INF/services/org.apache.kafka.connect."


def _jar_connectors(jar: zipfile.ZipFile) -> list[str]:
    """The connector classes a jar's manifests name, and "" when it has only other Connect manifests."""
    found = [""] if any(n.startswith(CONNECT_SERVICES) for n in jar.namelist()) else []
    for service in CONNECTOR_SERVICES:
        if service in jar.namelist():
            for line in jar.read(service).decode("utf-8", "replace").splitlines():
                name = line.split("#", 1)[0].strip()
                if name:
                    found.append(name)
    return found


def _jars(path: str) -> Iterator[zipfile.ZipFile]:
    """The jars of a plugin file: itself, or those inside a tar.gz or zip."""
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as archive:
            for member in archive:
                stream = archive.extractfile(member) if member.name.endswith(".jar") else None
                if stream is not None:
                    yield zipfile.ZipFile(io.BytesIO(stream.read()))
    elif path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.endswith(".jar"):
                    yield zipfile.ZipFile(io.BytesIO(archive.read(name)))
    else:
        yield zipfile.ZipFile(path)


def plugin_connector_classes(path: str) -> list[str]:
    """The connector classes a plugin file provides, read from the ServiceLoader manifests of its jars (a jar, or
    the jars inside a tar.gz or zip), with "" among them when a jar has Connect manifests of another kind; [] for a
    file without Connect manifests, or that cannot be read (the sha512 check names it)."""
    classes: list[str] = []
    try:
        for jar in _jars(path):
            with jar:
                classes += _jar_connectors(jar)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, KeyError):
        return []
    return sorted(set(classes))


def kafka_connect_plugin(name: Any, lock_dir: str, cache_dir: str) -> dict[str, Any]:
    """One kafka_connect_plugins entry: the jar lock <lock_dir>/<name>.json read, and where `make artifacts` put its
    files (<cache_dir>/<name>/). {"name", "lock", "dir", "files": [{"file", "path", "sha512", "archive"}],
    "classes": [the connector classes its jars declare], "manifests": whether its jars have Connect ServiceLoader
    manifests, "problem": "" or what is wrong (the preflight refuses it, naming the fix)}. An archive (a plugin
    tar.gz or zip) is unpacked on the workers, a jar copied."""
    text = str(name)
    lock = f"{lock_dir}/{text}.json"
    plugin: dict[str, Any] = {
        "name": text,
        "lock": lock,
        "dir": f"{cache_dir}/{text}",
        "files": [],
        "classes": [],
        "manifests": False,
        "problem": "",
    }
    if not isinstance(name, str) or not LOCK_NAME.match(name):
        plugin["problem"] = (
            f"kafka_connect_plugins has {name!r}: an entry is the name of a jar lock in artifacts/locks (lower-case "
            "letters, digits, '.', '_', '-'), such as debezium-postgres-3.6.1. Fix kafka_connect_plugins"
        )
        return plugin
    try:
        with open(lock, encoding="utf-8") as stream:
            artifacts = json.load(stream).get("artifacts") or []
    except (OSError, ValueError, AttributeError) as exc:
        plugin["problem"] = (
            f"kafka_connect_plugins names {text}, but {lock} cannot be read ({type(exc).__name__}): a plugin is the "
            f"name of a jar lock (python -m kafkalab.artifacts lock-jars --name {text} "
            "group:artifact:version[:classifier][@tar.gz]). Fix kafka_connect_plugins or add the lock"
        )
        return plugin
    for artifact in artifacts:
        file = os.path.basename(str(artifact.get("file", "")))
        plugin["files"].append(
            {
                "file": file,
                "path": f"{plugin['dir']}/{file}",
                "sha512": str(artifact.get("sha512", "")),
                "archive": file.endswith(ARCHIVES),
            }
        )
    if not plugin["files"]:
        plugin["problem"] = f"kafka_connect_plugins names {text}, but {lock} pins no file. Fix the lock"
    found = {c for f in plugin["files"] for c in plugin_connector_classes(f["path"])}
    plugin["classes"] = sorted(found - {""})
    # plugin.discovery=service_load finds only what ServiceLoader manifests name.
    plugin["manifests"] = bool(found)
    return plugin


def kafka_connect_mirror_login(cluster: Mapping[str, Any], secrets: Any) -> dict[str, str]:
    """A mirrored cluster's login (a kafka_connect_cluster.mirrors[alias].cluster record) as Kafka client properties
    for the controller's own clients (playbooks/mirror_failover.yml), the password read from kafka_connect_secrets
    through its placeholder. Never log the result."""
    props = {"security.protocol": str(cluster.get("security_protocol") or "PLAINTEXT")}
    if props["security.protocol"].endswith("SSL"):
        props |= {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(cluster.get("ca_file") or ""),
            "ssl.endpoint.identification.algorithm": "https",
        }
    if props["security.protocol"].startswith("SASL_"):
        found = PLACEHOLDER.fullmatch(str(cluster.get("password") or ""))
        file = os.path.basename(found.group(1)).removesuffix(".properties") if found else ""
        password = str(((secrets or {}).get(file) or {}).get(found.group(2) if found else "", ""))
        props |= {
            "sasl.mechanism": str(cluster.get("sasl_mechanism") or "SCRAM-SHA-512"),
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{cluster.get("user")}" password="{password}";'
            ),
        }
    return props


def kafka_connect_mirror_covers(patterns: Any, name: Any) -> bool:
    """Whether a mirror's topics or groups (names, or prefixes ending in *) cover a name."""
    return covered([str(p) for p in patterns or []], str(name))


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_connect_model": kafka_connect_model,
            "kafka_connect_secret_file": kafka_connect_secret_file,
            "kafka_connect_plugin": kafka_connect_plugin,
            "kafka_connect_mirror_login": kafka_connect_mirror_login,
            "kafka_connect_mirror_covers": kafka_connect_mirror_covers,
        }
