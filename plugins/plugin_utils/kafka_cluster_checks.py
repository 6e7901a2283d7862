"""The settings rules of the Kafka cluster model (filter kafka_cluster.py).

The cluster-wide values (release, archive, data dirs, heap, cluster id), what ZooKeeper mode and the
ZooKeeper -> KRaft migration require, the custom properties and instance names a host may not use, and the
machines several inventory hosts share. Each check appends its problems, naming the variable and the fix.
Kept out of the model's file so that it reads as the order of its rules; pure functions over plain data,
unit-tested through the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import (
    ZOOKEEPER_ADDRESS,
    as_bool,
    as_int,
    checked_address,
    get,
    is_port,
    machine,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.share_groups import check as check_share_groups

# A ZooKeeper path: one or more /elements, none of them `.` or `..` (ZooKeeper refuses those).
ZOOKEEPER_CHROOT = re.compile(r"^(/(?!\.\.?(/|$))[A-Za-z0-9_.-]+)+$")
# The newest release line with ZooKeeper mode: Kafka 4.0 removed it.
ZOOKEEPER_MODE_RELEASE = "3.9.2"
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
VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
SHA512 = re.compile(r"^[0-9a-fA-F]{128}$")
HEAP_SIZE = re.compile(r"^[0-9]+[kmgKMG]$")
CLUSTER_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")
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


def _major(version: Any) -> int | None:
    head = str(version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


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
    check_share_groups(settings, problems)


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
                zk_port = as_int(settings.get(f"zookeeper_{what}_port"))
                if zk_port in used:
                    problems.append(
                        f"{zk}: ZooKeeper's {what} port {zk_port} on machine {where} is also opened by "
                        f"{used[zk_port]}. "
                        "Give the Kafka instance another port (kafka_listener_overrides / kafka_controller_port)."
                    )
        _check_machine_dirs(where, members, nodes, problems)


def _check_machine_dirs(where: str, members: list[str], nodes: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """No two instances on one machine write one log dir (neither holds the other)."""
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


def _check_instance_name(hostvars: Mapping[str, Any], host: str, problems: list[str]) -> str:
    """The host's kafka_instance ('' when unset, or when not a name: reported)."""
    instance = str(get(hostvars, host, "kafka_instance", ""))
    if instance and not INSTANCE_NAME.match(instance):
        problems.append(
            f"{host}: kafka_instance '{instance}' is not an instance name (1 to 32 letters, digits, _ or -): it "
            f"names the unit kafka@<name>, /etc/kafka/<name> and the data dirs. Fix kafka_instance of {host}."
        )
        instance = ""
    return instance


def _check_migration_instances(
    hosts: list[str], nodes: dict[str, dict[str, Any]], phase: str, problems: list[str]
) -> None:
    """The migration refuses hosts that name a kafka_instance (several Kafka instances on one machine)."""
    instance_hosts = [h for h in hosts if nodes[h]["instance"]]
    if phase and instance_hosts:
        problems.append(
            f"the ZooKeeper -> KRaft migration (kafka_migration_phase {phase}) does not migrate clusters whose hosts "
            f"run several Kafka instances (kafka_instance set on {', '.join(instance_hosts)}): "
            "rebuild such a lab cluster in KRaft mode instead."
        )
