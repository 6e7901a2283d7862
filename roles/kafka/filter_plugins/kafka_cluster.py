"""The Kafka cluster model: who votes, who serves, which listeners each node opens and advertises.

Everything a node's server.properties depends on that involves other hosts is computed here, once,
from the inventory, and every cross-host rule (unique node ids, an odd controller quorum, listener
names and ports, replication settings) is checked here too. The preflight play fails on the
returned `problems` before any host is touched; the role renders properties from `nodes`.

Two modes (settings["mode"]): `kraft` (the default: KRaft controllers, node.id) and `zookeeper`
(Kafka 3.x only: no controllers, broker.id, zookeeper.connect built from the ZooKeeper ensemble's
addresses). The ensemble itself (myid, quorum size) is the zookeeper role's model to check.
In ZooKeeper mode, hosts already in the controller group are standby controllers: no node of the
model, prepared for playbooks/migrate_to_kraft.yml. That playbook (and rollback_to_zookeeper.yml)
sets settings["migration_phase"], which gives every node the stage it runs in that phase
(MIGRATION_PHASES): brokers in ZooKeeper mode, ZooKeeper mode with the migration on, or KRaft;
controllers with the migration on (dual write) or finalized.

Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.inventory import (
    KAFKA_ADDRESS,
    ZOOKEEPER_ADDRESS,
    as_bool,
    as_int,
    checked_address,
    get,
    instance_dirs,
    is_port,
    machine,
    unique_ids,
    valid_address,
)
from ansible_collections.kafkalab.common.plugins.module_utils.replication import replication_problems

LISTENER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
# The protocols that run TLS: SSL (the certificate is the identity) and SASL_SSL (SCRAM users over TLS).
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
# What a kafka_listeners item may say. `external`: advertised under a per-host address outside the
# cluster network (NAT, load balancer); `client_networks`: who may reach it (firewall role).
LISTENER_KEYS = {
    "name",
    "port",
    "protocol",
    "bind_host",
    "advertised_host",
    "advertised_port",
    "external",
    "client_networks",
    "client_auth",
}
# What kafka_controller_listener may say: `client_auth` (TLS only) is ssl.client.auth on the listener.
CONTROLLER_LISTENER_KEYS = {"name", "port", "protocol", "bind_host", "client_auth"}
TLS_CLIENT_AUTH = ("required", "requested", "none")
# What kafka_listener_overrides may change for one host.
OVERRIDE_KEYS = {"advertised_host", "advertised_port", "bind_host", "port"}
MODES = ("kraft", "zookeeper")
# A ZooKeeper path: one or more /elements, none of them `.` or `..` (ZooKeeper refuses those).
ZOOKEEPER_CHROOT = re.compile(r"^(/(?!\.\.?(/|$))[A-Za-z0-9_.-]+)+$")
# The newest release line with ZooKeeper mode: Kafka 4.0 removed it.
ZOOKEEPER_MODE_RELEASE = "3.9.2"
# With broker.id.generation.enable (on by default in ZooKeeper mode) ids above this are refused.
RESERVED_BROKER_MAX_ID = 1000
# ZooKeeper -> KRaft migration (Kafka 3.9, "ZooKeeper to KRaft Migration" in its operations docs), in
# order: the stage (broker, controller) each node runs in each phase. `zookeeper`: a ZooKeeper-mode
# broker; `migration`: a ZooKeeper-mode broker, or a KRaft controller, with the migration on;
# `kraft`: plain KRaft. `finalized` takes the controllers out of migration mode, which cannot be undone.
MIGRATION_PHASES: dict[str, tuple[str, str]] = {
    "controllers": ("zookeeper", "migration"),
    "brokers_migration": ("migration", "migration"),
    "brokers_kraft": ("kraft", "migration"),
    "finalized": ("kraft", "kraft"),
}
# A Kafka instance's name (kafka_instance): it names the unit kafka@<name>, /etc/kafka/<name> and the data dirs.
INSTANCE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
# The release line that migrates (the only one with both modes and the migration finished).
MIGRATION_RELEASE = re.compile(r"^3\.9\.\d+$")


def _major(version: Any) -> int | None:
    head = str(version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _host_listeners(
    host: str,
    listeners: list[Mapping[str, Any]],
    overrides: Mapping[str, Any],
    address: str | None,
    problems: list[str],
) -> list[dict[str, Any]]:
    """The client/inter-broker listeners of one host, per-host overrides applied."""
    known = {str(item.get("name")) for item in listeners}
    for name, override in overrides.items():
        if name not in known:
            problems.append(
                f"{host}: kafka_listener_overrides names listener '{name}' (it would be advertised in "
                f"advertised.listeners), which kafka_listeners does not define (defined: "
                f"{', '.join(sorted(known))}). Fix the name or add the listener to kafka_listeners."
            )
        unknown = sorted(set(dict(override or {})) - OVERRIDE_KEYS)
        if unknown:
            problems.append(
                f"{host}: kafka_listener_overrides.{name} has unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(OVERRIDE_KEYS))})."
            )
    result = []
    for item in listeners:
        name = str(item.get("name"))
        own = dict(overrides.get(name) or {})
        merged = {**item, **own}
        if item.get("external") and not own.get("advertised_host"):
            # The cluster address is exactly what an outside client cannot reach: never fall back to it.
            problems.append(
                f"{host}: listener {name} is external (advertised to clients outside the cluster network), so "
                f"this host needs kafka_listener_overrides.{name}.advertised_host (and advertised_port if the "
                f"NAT or load balancer maps the port): the address outside clients reach it by. Set it in "
                f"host_vars/{host}."
            )
        advertised_host = merged.get("advertised_host") or ("" if item.get("external") else address)
        # A host without any address is reported once, by the caller.
        if advertised_host and not valid_address(str(advertised_host)):
            problems.append(
                f"{host}: advertised address '{advertised_host}' of listener {name} is not a valid host name or IP."
            )
        result.append(
            {
                "name": name,
                "protocol": str(merged.get("protocol", "PLAINTEXT")),
                "bind_host": str(merged.get("bind_host") or ""),
                "port": as_int(merged.get("port")),
                "advertised_host": str(advertised_host or ""),
                "advertised_port": as_int(merged.get("advertised_port") or merged.get("port")),
                "external": bool(item.get("external")),
                # Who may reach it (the firewall role's input): None means the `clients` networks.
                "client_networks": item.get("client_networks"),
                # TLS only: ssl.client.auth on this listener (clients: none unless the inventory asks).
                "client_auth": str(item.get("client_auth") or "none"),
            }
        )
    return result


def _check_listener_definitions(
    listeners: list[Mapping[str, Any]],
    controller_listener: Mapping[str, Any] | None,
    inter_broker_name: str,
    problems: list[str],
) -> None:
    """controller_listener is None in ZooKeeper mode, where no node opens it."""
    names = [str(item.get("name")) for item in listeners]
    for item in [*listeners, *([controller_listener] if controller_listener is not None else [])]:
        protocol = str(item.get("protocol", "PLAINTEXT"))
        is_controller = item is controller_listener
        if protocol == "SASL_PLAINTEXT":
            problems.append(
                f"listener {item.get('name')}: protocol SASL_PLAINTEXT would carry every record and the SCRAM "
                "exchange in the clear; this project runs SCRAM over TLS only. Use SASL_SSL."
            )
        if protocol == "SASL_SSL" and is_controller:
            problems.append(
                "kafka_controller_listener: protocol SASL_SSL is not supported: controllers and brokers authenticate "
                "each other on the controller listener by their certificates (mutual TLS). Use SSL."
            )
        client_auth = item.get("client_auth")
        if client_auth is not None and (protocol != "SSL" or str(client_auth) not in TLS_CLIENT_AUTH):
            problems.append(
                f"listener {item.get('name')}: client_auth '{client_auth}' needs protocol SSL and one of "
                f"{', '.join(TLS_CLIENT_AUTH)} (ssl.client.auth; default: required on the controller listener, mutual "
                "TLS; none on the others)."
            )
        name = str(item.get("name"))
        if not LISTENER_NAME.match(name):
            problems.append(
                f"listener name '{name}' must be upper case letters, digits and _ "
                "(kafka_listeners / kafka_controller_listener)."
            )
        if str(item.get("protocol", "PLAINTEXT")) not in SECURITY_PROTOCOLS:
            problems.append(
                f"listener {name}: protocol '{item.get('protocol')}' is not one of {sorted(SECURITY_PROTOCOLS)}."
            )
        if not is_port(item.get("port")):
            problems.append(f"listener {name}: port '{item.get('port')}' is not a TCP port number.")
        known_keys = CONTROLLER_LISTENER_KEYS if is_controller else LISTENER_KEYS
        unknown = sorted(set(item) - known_keys)
        if unknown:
            problems.append(
                f"listener {name}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known_keys))})."
            )
        networks = item.get("client_networks")
        if networks is not None and not isinstance(networks, list):
            problems.append(f"listener {name}: client_networks must be a list of networks (CIDR), e.g. [192.0.2.0/24].")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(
            f"kafka_listeners defines {', '.join(duplicates)} more than once: listener names must be unique."
        )
    if controller_listener is not None and str(controller_listener.get("name")) in names:
        problems.append(
            f"kafka_controller_listener.name '{controller_listener.get('name')}' is also in kafka_listeners: "
            "the controller listener must be its own listener, never advertised to clients."
        )
    if inter_broker_name not in names:
        problems.append(
            f"kafka_inter_broker_listener_name '{inter_broker_name}' is not defined in kafka_listeners "
            f"(defined: {', '.join(names)})."
        )
    elif any(item.get("external") for item in listeners if str(item.get("name")) == inter_broker_name):
        problems.append(
            f"kafka_inter_broker_listener_name '{inter_broker_name}' names an external listener: brokers would "
            "replicate through NAT addresses meant for outside clients. Replicate over an internal listener."
        )


VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
SHA512 = re.compile(r"^[0-9a-fA-F]{128}$")
HEAP_SIZE = re.compile(r"^[0-9]+[kmgKMG]$")
CLUSTER_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")


def _listener_list(value: Any, variable: str, problems: list[str]) -> list[Mapping[str, Any]]:
    """The listeners of kafka_listeners, each a mapping; anything else is reported, not raised."""
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        problems.append(
            f"{variable} must be a list of listeners (each with name, port, protocol), not {value!r}: e.g. "
            "[{name: INTERNAL, port: 9092, protocol: PLAINTEXT}]."
        )
        return []
    good = []
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            good.append(item)
        else:
            problems.append(f"{variable}[{index}] is {item!r}, not a listener (a mapping with name, port, protocol).")
    return good


def _host_overrides(host: str, value: Any, problems: list[str]) -> dict[str, Mapping[str, Any]]:
    """A host's kafka_listener_overrides: listener name -> mapping; anything else is reported, not raised."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        problems.append(
            f"{host}: kafka_listener_overrides must be a mapping of listener name to settings, not {value!r}: "
            f"e.g. {{EXTERNAL: {{advertised_host: kafka1.example.com}}}}. Fix it in host_vars/{host}."
        )
        return {}
    overrides = {}
    for name, override in value.items():
        if isinstance(override, Mapping):
            overrides[str(name)] = override
        else:
            problems.append(
                f"{host}: kafka_listener_overrides.{name} must be a mapping (advertised_host, advertised_port, "
                f"bind_host, port), not {override!r}."
            )
    return overrides


# server.properties keys the role derives from the inventory: overriding one through the custom properties
# would silently break the cluster model (two nodes sharing a node.id, a voter list no controller has).
OWNED_PROPERTIES = {
    "node.id": "kafka_node_id",
    "broker.id": "kafka_node_id",
    "process.roles": "the groups kafka_controller and kafka_broker",
    "controller.quorum.voters": "the group kafka_controller",
    "controller.quorum.bootstrap.servers": "the group kafka_controller",
    "controller.listener.names": "kafka_controller_listener",
    "listeners": "kafka_listeners and kafka_listener_overrides",
    "advertised.listeners": "kafka_listeners and kafka_listener_overrides",
    "listener.security.protocol.map": "kafka_listeners",
    "inter.broker.listener.name": "kafka_inter_broker_listener_name",
    "log.dirs": "kafka_data_dirs",
    "zookeeper.connect": "the group zookeeper and kafka_zookeeper_chroot",
}


def _check_owned_properties(hostvars: Mapping[str, Any], host: str, problems: list[str]) -> None:
    for variable in ("kafka_custom_properties", "kafka_host_custom_properties"):
        custom = get(hostvars, host, variable, {})
        if not isinstance(custom, Mapping):
            problems.append(f"{host}: {variable} must be a mapping of server properties, not {custom!r}.")
            continue
        for key in sorted(set(custom) & set(OWNED_PROPERTIES)):
            problems.append(
                f"{host}: {variable} sets {key}, which the role derives from {OWNED_PROPERTIES[key]}. Remove {key} "
                f"from {variable} and set {OWNED_PROPERTIES[key]} instead."
            )


# The name the metrics exporter's port goes by in the per-host port checks (listeners, ZooKeeper, instances).
METRICS_PORT_NAME = "metrics (kafka_metrics_port)"


def _metrics_port(
    hostvars: Mapping[str, Any], host: str, settings: Mapping[str, Any], problems: list[str]
) -> int | None:
    """The port of the host's JMX exporter agent, or None when metrics are off for it (kafka_metrics_enabled)."""
    raw_enabled = get(hostvars, host, "kafka_metrics_enabled", settings.get("metrics_enabled", False))
    enabled = as_bool(raw_enabled)
    if enabled is None:
        problems.append(f"{host}: kafka_metrics_enabled must be true or false, not {raw_enabled!r}.")
        return None
    if not enabled:
        return None
    raw = get(hostvars, host, "kafka_metrics_port", settings.get("metrics_port", 7071))
    if not is_port(raw):
        problems.append(
            f"{host}: kafka_metrics_port '{raw}' is not a TCP port number (1-65535). Fix kafka_metrics_port of {host}."
        )
        return None
    return as_int(raw)


def _check_settings(settings: Mapping[str, Any], problems: list[str]) -> None:
    """The cluster-wide values a run cannot go without, each named with its bad value and the fix."""
    version = str(settings.get("version") or "")
    if not VERSION.match(version):
        problems.append(f"kafka_version '{version}' is not a release number x.y.z (e.g. 4.3.1). Fix kafka_version.")
    source = str(settings.get("archive_source") or "url")
    sha512 = str(settings.get("archive_sha512") or "")
    if sha512 and not SHA512.match(sha512):
        problems.append(
            f"kafka_archive_sha512 '{sha512[:20]}...' is not a sha512 (128 hex digits). Copy it from the release's "
            ".sha512 file, or leave it empty with kafka_archive_source: url to use the published one."
        )
    if source == "local" and not sha512:
        problems.append(
            "kafka_archive_source is local but kafka_archive_sha512 is empty: a local archive is verified against "
            "the sha512 you pin. Set kafka_archive_sha512 (128 hex digits)."
        )
    if source == "local" and not str(settings.get("archive_local_path") or ""):
        problems.append(
            "kafka_archive_source is local but kafka_archive_local_path is empty. Set it to the archive's path on "
            "the controller."
        )
    data_dirs = settings.get("data_dirs")
    if not isinstance(data_dirs, list) or not data_dirs:
        problems.append(
            f"kafka_data_dirs {data_dirs!r} must be a non-empty list of absolute paths, e.g. [/var/lib/kafka/data]."
        )
    else:
        for item in data_dirs:
            if not isinstance(item, str) or not item.startswith("/"):
                problems.append(
                    f"kafka_data_dirs has {item!r}, which is not an absolute path: Kafka would resolve it against "
                    "its working directory. Write it from / (e.g. /var/lib/kafka/data)."
                )
    heap = str(settings.get("heap_size") or "")
    if not HEAP_SIZE.match(heap):
        problems.append(f"kafka_heap_size '{heap}' is not a JVM size such as 1g or 512m. Fix kafka_heap_size.")
    cluster_id = str(settings.get("cluster_id") or "")
    if cluster_id and not CLUSTER_ID.match(cluster_id):
        problems.append(
            f"kafka_cluster_id '{cluster_id}' is not a cluster id (22 base64url characters, as kafka-storage "
            "random-uuid prints). Fix it, or leave it empty to have one generated."
        )
    if cluster_id and settings.get("mode") == "zookeeper":
        problems.append(
            "kafka_cluster_id is set but kafka_mode is zookeeper: ZooKeeper assigns the cluster id in that mode. "
            "Leave kafka_cluster_id empty."
        )
    partitions = as_int(settings.get("num_partitions", 3))
    if partitions is None or partitions < 1:
        problems.append(
            f"kafka_num_partitions '{settings.get('num_partitions')}' must be a positive integer (num.partitions)."
        )


def _zookeeper_connect(
    hostvars: Mapping[str, Any], zookeepers: list[str], settings: Mapping[str, Any], problems: list[str], why: str
) -> str:
    """zookeeper.connect from the ensemble's addresses (why: the mode or phase that needs it)."""
    if not zookeepers:
        problems.append(
            f"{why} but the ZooKeeper group is empty or missing: put 1, 3 or 5 hosts in group "
            "zookeeper (kafka_zookeeper_group)."
        )
    port = as_int(settings.get("zookeeper_client_port"))
    if not is_port(port):
        problems.append(
            f"kafka_zookeeper_client_port '{settings.get('zookeeper_client_port')}' is not a TCP port number."
        )
    chroot = str(settings.get("zookeeper_chroot") or "")
    if chroot and not ZOOKEEPER_CHROOT.match(chroot):
        problems.append(
            f"kafka_zookeeper_chroot '{chroot}' is not a ZooKeeper path: it must start with /, not end with /, "
            "and use only letters, digits, _ . - between slashes (e.g. /kafka), or be empty."
        )
    servers = []
    for host in zookeepers:
        address = checked_address(hostvars, host, ZOOKEEPER_ADDRESS, problems, " for ZooKeeper")
        if address:
            servers.append(f"{address}:{port}")
    return ",".join(servers) + chroot


def _check_zookeeper_mode(settings: Mapping[str, Any], problems: list[str]) -> None:
    """The ZooKeeper-mode rules that involve Kafka's release."""
    version = str(settings.get("version") or "")
    major = _major(version)
    if major is not None and major >= 4:
        problems.append(
            f"kafka_mode is zookeeper but kafka_version is {version}: Kafka 4 removed ZooKeeper mode (it runs "
            f"KRaft only). Pin kafka_version: {ZOOKEEPER_MODE_RELEASE} (the newest 3.9.x) for ZooKeeper mode, "
            "or set kafka_mode: kraft."
        )


def _check_migration(
    controllers: list[str], brokers: list[str], settings: Mapping[str, Any], phase: str, problems: list[str]
) -> None:
    """The rules of a ZooKeeper -> KRaft migration (Kafka 3.9's operations docs)."""
    if phase not in MIGRATION_PHASES:
        problems.append(
            f"kafka_migration_phase '{phase}' is not one of: {', '.join(MIGRATION_PHASES)}. It is set by "
            "playbooks/migrate_to_kraft.yml and rollback_to_zookeeper.yml, not in the inventory."
        )
    version = str(settings.get("version") or "")
    if not MIGRATION_RELEASE.match(version):
        problems.append(
            f"the ZooKeeper -> KRaft migration runs on Kafka 3.9 but kafka_version is {version}. Keep kafka_version: "
            f"{ZOOKEEPER_MODE_RELEASE} for the migration, and upgrade with playbooks/upgrade.yml once it is finalized."
        )
    if str(settings.get("mode") or "kraft") != "kraft":
        problems.append(
            f"the ZooKeeper -> KRaft migration moves the cluster to KRaft but kafka_mode is {settings.get('mode')}. "
            "Set kafka_mode: kraft (the target) in the inventory, and keep the ensemble in group zookeeper."
        )
    for host in controllers:
        if host in brokers:
            problems.append(
                f"{host}: is in both kafka_controller and kafka_broker, but Kafka 3.9 migrates to dedicated KRaft "
                "controllers only (not combined broker+controller nodes). Give the controllers their own hosts."
            )


def _check_machines(
    hostvars: Mapping[str, Any],
    hosts: list[str],
    nodes: dict[str, dict[str, Any]],
    host_ports: dict[str, dict[int, str]],
    zookeepers: list[str],
    settings: Mapping[str, Any],
    problems: list[str],
) -> None:
    """Inventory hosts that reach one machine (ansible_host) run one Kafka instance each: every one names its
    instance, and no two share a name, a port (ZooKeeper's on that machine included) or a data dir."""
    by_machine: dict[str, list[str]] = {}
    for host in hosts:
        by_machine.setdefault(nodes[host]["machine"], []).append(host)
    for where, members in by_machine.items():
        if len(members) < 2:
            continue
        plain = [h for h in members if not nodes[h]["instance"]]
        if plain:
            problems.append(
                f"{', '.join(members)}: these inventory hosts reach one machine ({where}, their ansible_host) but "
                f"{', '.join(plain)} set no kafka_instance, so two Kafka services would share one unit, one config "
                "and one data dir. Give each host there its own kafka_instance (e.g. 1, 2, 3) in host_vars, or "
                "point them at different machines."
            )
        named: dict[str, str] = {}
        used: dict[int, str] = {}
        for host in members:
            node = nodes[host]
            instance = node["instance"]
            if instance and instance in named:
                problems.append(
                    f"{host}: kafka_instance '{instance}' is also {named[instance]}'s on machine {where}: each "
                    f"instance on a machine needs its own name. Change kafka_instance of {host}."
                )
            named.setdefault(instance, host)
            for port, listener in host_ports[host].items():
                owner = f"{host} (instance {instance or '-'}, listener {listener})"
                if port in used:
                    problems.append(
                        f"{host}: instance {instance or '-'} on machine {where} opens port {port} (listener "
                        f"{listener}), which {used[port]} opens too. Give each instance its own ports: "
                        f"kafka_listener_overrides.<LISTENER>.port and kafka_controller_port in host_vars/{host}."
                    )
                else:
                    used[port] = owner
        for zk in zookeepers:
            if machine(hostvars, zk) != where:
                continue
            for what in ("client", "peer", "election"):
                port = as_int(settings.get(f"zookeeper_{what}_port"))
                if port in used:
                    problems.append(
                        f"{zk}: ZooKeeper's {what} port {port} on machine {where} is also opened by {used[port]}. "
                        "Give the Kafka instance another port (kafka_listener_overrides / kafka_controller_port)."
                    )
        dirs = [(host, d) for host in members for d in nodes[host]["data_dirs"]]
        for i, (host, one) in enumerate(dirs):
            for other_host, other in dirs[i + 1 :]:
                if other_host == host:
                    continue
                a, b = one.rstrip("/") + "/", other.rstrip("/") + "/"
                if a.startswith(b) or b.startswith(a):
                    problems.append(
                        f"{host}: data dir {one} (instance {nodes[host]['instance'] or '-'}) overlaps {other} of "
                        f"{other_host} on machine {where}: two instances would write one log dir. Each instance's "
                        f"dirs are kafka_data_dirs plus its kafka_instance: give {host} dirs of its own."
                    )


def kafka_cluster_model(
    hostvars: Mapping[str, Any],
    controllers: Iterable[str],
    brokers: Iterable[str],
    settings: Mapping[str, Any],
    zookeepers: Iterable[str] = (),
) -> dict[str, Any]:
    """Build the cluster model from the inventory and list every problem found in it.

    settings: mode, version, listeners, controller_listener, inter_broker_listener_name,
    default_replication_factor, min_insync_replicas, data_dirs, zookeeper_client_port,
    zookeeper_chroot (the role's variables, passed in so this stays pure).
    zookeepers: the hosts of the ZooKeeper group (used in ZooKeeper mode; must be empty in KRaft mode).
    Returns {"mode": str, "nodes": {host: node}, "quorum_voters": str, "controller_bootstrap": str,
    "bootstrap_servers": str, "zookeeper_connect": str, "problems": [str]}.
    """
    controllers = list(controllers)
    brokers = list(brokers)
    zookeepers = list(zookeepers)
    problems: list[str] = []
    mode = str(settings.get("mode") or "kraft")
    zookeeper_mode = mode == "zookeeper"
    if mode not in MODES:
        problems.append(f"kafka_mode '{mode}' is not one of: {', '.join(MODES)}.")
    _check_settings(settings, problems)
    listeners = _listener_list(settings.get("listeners"), "kafka_listeners", problems)
    raw_controller = settings.get("controller_listener") or {}
    controller_listener = dict(raw_controller) if isinstance(raw_controller, Mapping) else {}
    if not zookeeper_mode and not controller_listener:
        problems.append(
            f"kafka_controller_listener must be a mapping (name, port, protocol), not {raw_controller!r}: "
            "e.g. {name: CONTROLLER, port: 9093, protocol: PLAINTEXT}."
        )
    inter_broker_name = str(settings.get("inter_broker_listener_name") or "")
    checked_controller = controller_listener if controller_listener and not zookeeper_mode else None
    _check_listener_definitions(listeners, checked_controller, inter_broker_name, problems)

    zookeeper_connect = ""
    phase = str(settings.get("migration_phase") or "")
    tls_listeners = [
        str(item.get("name"))
        for item in [*listeners, controller_listener]
        if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS
    ]
    tls = bool(tls_listeners)
    if tls and (zookeeper_mode or phase):
        problems.append(
            f"listener(s) {', '.join(tls_listeners)} (kafka_listeners / kafka_controller_listener) run TLS (SSL or "
            "SASL_SSL), but the "
            "cluster runs on ZooKeeper or migrates off it "
            f"(kafka_mode {mode}, kafka_migration_phase '{phase}'): TLS is supported in KRaft mode only for now. "
            "Keep PLAINTEXT (kafka_listeners, kafka_controller_listener) until the migration is finalized, then set "
            "SSL."
        )
    standby: list[str] = []
    if zookeeper_mode:
        _check_zookeeper_mode(settings, problems)
        zookeeper_connect = _zookeeper_connect(hostvars, zookeepers, settings, problems, "kafka_mode is zookeeper")
        # Prepared for the migration (Java, firewall), but no Kafka runs there until migrate_to_kraft.yml.
        standby, controllers = controllers, []
    elif phase:
        _check_migration(controllers, brokers, settings, phase, problems)
        zookeeper_connect = _zookeeper_connect(
            hostvars, zookeepers, settings, problems, "the ZooKeeper -> KRaft migration reads from ZooKeeper"
        )
    elif zookeepers:
        problems.append(
            f"the ZooKeeper group has hosts ({', '.join(zookeepers)}) but kafka_mode is kraft, so no broker would "
            "use them. Set kafka_mode: zookeeper (with kafka_version 3.9.x), or empty group zookeeper "
            "(kafka_zookeeper_group). To move a ZooKeeper-mode cluster to KRaft, run playbooks/migrate_to_kraft.yml "
            "(or rollback_to_zookeeper.yml); empty the group once the migration is finalized."
        )
    if not zookeeper_mode and not controllers:
        problems.append(
            "the KRaft controller group is empty: put 1, 3 or 5 hosts in group kafka_controller "
            "(kafka_controller_group)."
        )
    elif not zookeeper_mode and len(controllers) % 2 == 0 and not settings.get("quorum_change"):
        problems.append(
            f"the KRaft controller quorum has {len(controllers)} hosts ({', '.join(controllers)}): it must be odd "
            "(1, 3 or 5) so a majority survives a failure. An even count is allowed only while the quorum changes: "
            "run playbooks/add_controller.yml or remove_controller.yml for the host you add or remove."
        )
    if not brokers:
        problems.append("the broker group is empty: put at least one host in group kafka_broker (kafka_broker_group).")

    hosts = list(dict.fromkeys([*controllers, *brokers]))
    # In ZooKeeper mode kafka_node_id becomes broker.id; the messages say so.
    becomes = " (it becomes broker.id)" if zookeeper_mode else ""
    # Node ids are non-negative; with broker.id.generation.enable (on by default in ZooKeeper mode) ids above
    # reserved.broker.max.id are refused by the broker.
    valid_ids = range(RESERVED_BROKER_MAX_ID + 1) if zookeeper_mode else range(2**31)
    why_ids = "ZooKeeper mode refuses ids above reserved.broker.max.id" if zookeeper_mode else "KRaft node ids"
    node_ids = unique_ids(hostvars, hosts, "kafka_node_id", valid_ids, "every Kafka host", why_ids, problems, becomes)
    nodes: dict[str, dict[str, Any]] = {}
    host_ports: dict[str, dict[int, str]] = {}
    for host in hosts:
        node_id = node_ids[host]
        address = checked_address(hostvars, host, KAFKA_ADDRESS, problems)
        overrides = _host_overrides(host, get(hostvars, host, "kafka_listener_overrides", {}), problems)
        host_listeners = _host_listeners(host, listeners, overrides, address, problems) if host in brokers else []
        instance = str(get(hostvars, host, "kafka_instance", ""))
        if instance and not INSTANCE_NAME.match(instance):
            problems.append(
                f"{host}: kafka_instance '{instance}' is not an instance name (1 to 32 letters, digits, _ or -): it "
                f"names the unit kafka@<name>, /etc/kafka/<name> and the data dirs. Fix kafka_instance of {host}."
            )
            instance = ""
        raw_port = get(hostvars, host, "kafka_controller_port")
        controller_port = as_int(controller_listener.get("port"))
        if raw_port is not None:
            if is_port(raw_port):
                controller_port = as_int(raw_port)
            else:
                problems.append(
                    f"{host}: kafka_controller_port '{raw_port}' is not a TCP port number. Fix it in host_vars/{host}."
                )
        metrics_port = _metrics_port(hostvars, host, settings, problems)
        ports: dict[int, str] = {}
        for item in [
            *host_listeners,
            {"name": controller_listener.get("name"), "port": controller_port},
            {"name": METRICS_PORT_NAME, "port": metrics_port},
        ]:
            if item["port"] is None:
                continue
            if host not in controllers and item["name"] == controller_listener.get("name"):
                continue
            if item["port"] in ports and METRICS_PORT_NAME in (item["name"], ports[item["port"]]):
                other = ports[item["port"]] if item["name"] == METRICS_PORT_NAME else item["name"]
                problems.append(
                    f"{host}: kafka_metrics_port {item['port']} is also the port of listener {other}. Give the "
                    f"metrics exporter another port (kafka_metrics_port of {host}, default 7071)."
                )
            elif item["port"] in ports:
                problems.append(
                    f"{host}: listeners {ports[item['port']]} and {item['name']} both use port {item['port']}. "
                    "Give each listener its own port (kafka_listeners / kafka_listener_overrides)."
                )
            ports[item["port"]] = str(item["name"])
        if (zookeeper_mode or phase) and host in zookeepers:
            for what, variable in (
                ("client", "kafka_zookeeper_client_port / zookeeper_client_port"),
                ("peer", "zookeeper_peer_port"),
                ("election", "zookeeper_election_port"),
            ):
                zk_port = as_int(settings.get(f"zookeeper_{what}_port"))
                if zk_port in ports:
                    problems.append(
                        f"{host}: runs a ZooKeeper server on {what} port {zk_port} ({variable}), which listener "
                        f"{ports[zk_port]} also uses. Give one of them another port."
                    )
        _check_owned_properties(hostvars, host, problems)
        roles = [r for r, group in (("broker", brokers), ("controller", controllers)) if host in group]
        if zookeeper_mode:
            stage = "zookeeper"
        elif phase in MIGRATION_PHASES:
            stage = MIGRATION_PHASES[phase][0 if host in brokers else 1]
        else:
            stage = "kraft"
        host_ports[host] = ports
        host_dirs = get(hostvars, host, "kafka_data_dirs", settings.get("data_dirs"))
        nodes[host] = {
            "host": host,
            "node_id": node_id,
            "address": str(address or ""),
            "roles": roles,
            "listeners": host_listeners,
            "stage": stage,
            # Several inventory hosts on one machine run one Kafka instance each (kafka@<instance>).
            "instance": instance,
            "machine": machine(hostvars, host),
            "controller_port": controller_port if host in controllers else None,
            "data_dirs": instance_dirs(host_dirs if isinstance(host_dirs, list) else [], instance),
            # The JMX exporter agent's port (None: no agent on this node).
            "metrics_port": metrics_port,
            # What the node's TLS certificate names (subjectAltName): every name and address it is reached by.
            "tls_names": list(
                dict.fromkeys(
                    n for n in [host, str(address or ""), *(item["advertised_host"] for item in host_listeners)] if n
                )
            ),
        }
    _check_machines(
        hostvars, hosts, nodes, host_ports, zookeepers if (zookeeper_mode or phase) else [], settings, problems
    )
    instance_hosts = [h for h in hosts if nodes[h]["instance"]]
    if phase and instance_hosts:
        problems.append(
            f"the ZooKeeper -> KRaft migration (kafka_migration_phase {phase}) does not migrate clusters whose hosts "
            f"run several Kafka instances (kafka_instance set on {', '.join(instance_hosts)}): "
            "rebuild such a lab cluster in KRaft mode instead."
        )

    advertised_by: dict[tuple[str, int], str] = {}
    for host in brokers:
        for item in nodes.get(host, {}).get("listeners", []):
            if not item["advertised_host"] or item["advertised_port"] is None:
                continue
            key = (item["advertised_host"], item["advertised_port"])
            where = f"{host} {item['name']}"
            if key in advertised_by:
                problems.append(
                    f"{host}: listener {item['name']} advertises {key[0]}:{key[1]}, which {advertised_by[key]} "
                    "advertises too: clients would reach one broker for two. Give each its own advertised_port "
                    f"(kafka_listener_overrides.{item['name']}.advertised_port)."
                )
            else:
                advertised_by[key] = where

    problems += replication_problems(
        settings.get("default_replication_factor"),
        settings.get("min_insync_replicas"),
        len(brokers),
        rf_name="kafka_default_replication_factor",
        min_isr_name="kafka_min_insync_replicas",
    )

    controller_port = as_int(controller_listener.get("port"))
    voters = ",".join(
        f"{nodes[h]['node_id']}@{nodes[h]['address']}:{nodes[h]['controller_port']}" for h in controllers if h in nodes
    )
    bootstrap = ",".join(
        f"{item['advertised_host']}:{item['advertised_port']}"
        for h in brokers
        for item in nodes[h]["listeners"]
        if item["name"] == inter_broker_name
    )
    controller_bootstrap = ",".join(
        f"{nodes[h]['address']}:{nodes[h]['controller_port']}" for h in controllers if h in nodes
    )
    inter_broker_protocol = next(
        (str(item["protocol"]) for h in brokers for item in nodes[h]["listeners"] if item["name"] == inter_broker_name),
        "PLAINTEXT",
    )
    # Where the controller machine's clients of bootstrap_servers find their TLS settings (kafka_tls_ca_dir), when
    # that listener runs TLS; '' otherwise.
    ca_dir = str(settings.get("tls_ca_dir") or "").rstrip("/")
    client_tls_dir = (
        ca_dir if inter_broker_protocol in TLS_PROTOCOLS and tls and not zookeeper_mode and not phase else ""
    )
    zookeeper_tls = as_bool(settings.get("zookeeper_tls", False))
    if zookeeper_tls is None:
        problems.append(
            f"kafka_zookeeper_tls (zookeeper_tls) must be true or false, not {settings.get('zookeeper_tls')!r}."
        )
    return {
        "mode": mode,
        "migration_phase": phase,
        "standby_controllers": standby,
        # TLS between the Kafka nodes that talk to ZooKeeper (zookeeper_clients) and the ensemble.
        "zookeeper_tls": bool(zookeeper_connect) and bool(zookeeper_tls),
        # Who talks to ZooKeeper: the brokers, and during a migration the controllers too.
        "zookeeper_clients": (brokers + controllers) if phase else (brokers if zookeeper_mode else []),
        "inter_broker_protocol": inter_broker_protocol,
        # The settings file (Kafka client properties) the controller machine's clients of bootstrap_servers read:
        # the project CA to trust, written by tasks/tls.yml; '' when that listener is PLAINTEXT (nothing to read).
        "client_config": f"{client_tls_dir}/client.properties" if client_tls_dir else "",
        # What those clients trust (beside client_config): trust.pem, the project CA, or both CAs in the middle of a
        # CA rotation (roles/pki); '' with client_config. The lag exporter and the Spark job get a copy.
        "client_ca": f"{client_tls_dir}/trust.pem" if client_tls_dir else "",
        # The project CA's directory on the controller machine (kafka_tls_ca_dir): the CA, the client settings, and
        # which SCRAM passwords were set last (roles/kafka_topics).
        "tls_ca_dir": ca_dir,
        # Per client listener that runs TLS, by name: the settings file (beside the CA) for a client on the
        # controller machine of that listener (its CA, and on SASL_SSL the admin's login), written by tasks/tls.yml.
        # The nodes' admin tools get the same per listener, as <conf_dir>/client-<name>.properties.
        "listener_client_configs": {
            str(item.get("name")): f"{ca_dir}/client-{str(item.get('name')).lower()}.properties"
            for item in listeners
            if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS and tls and not zookeeper_mode and not phase
        },
        # TLS on any listener (the controller's, a client or the inter-broker one): every node has a key and a
        # certificate from the project CA (tasks/tls.yml).
        "tls": tls and not zookeeper_mode and not phase,
        # The listeners (by name) that run TLS, with their ssl.client.auth.
        "tls_listeners": {
            str(item.get("name")): str(
                item.get("client_auth") or ("required" if item is controller_listener else "none")
            )
            for item in [*listeners, *([controller_listener] if not zookeeper_mode else [])]
            if str(item.get("protocol", "PLAINTEXT")) in TLS_PROTOCOLS
        },
        # The listeners (by name) whose clients log in with SCRAM-SHA-512 users (kafka_users; kafka_sasl.py).
        "sasl_listeners": sorted(
            str(item.get("name"))
            for item in listeners
            if str(item.get("protocol", "PLAINTEXT")) == "SASL_SSL" and not zookeeper_mode and not phase
        ),
        "version": str(settings.get("version") or ""),
        "nodes": nodes,
        "inter_broker_listener_name": inter_broker_name,
        "controller_listener": (
            {}
            if zookeeper_mode
            else {
                "name": str(controller_listener.get("name")),
                "port": controller_port,
                "protocol": str(controller_listener.get("protocol", "PLAINTEXT")),
                "client_auth": str(
                    controller_listener.get("client_auth")
                    or ("required" if str(controller_listener.get("protocol")) == "SSL" else "none")
                ),
            }
        ),
        "quorum_voters": voters,
        "controller_bootstrap": controller_bootstrap,
        "bootstrap_servers": bootstrap,
        "zookeeper_connect": zookeeper_connect,
        "problems": problems,
    }


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_cluster_model": kafka_cluster_model,
        }
