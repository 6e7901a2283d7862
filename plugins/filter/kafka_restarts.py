"""The order in which a rolling restart (or upgrade) takes the Kafka nodes down, one at a time.

Pure functions over the cluster model, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import java_text
from ansible_collections.kafkalab.kafka.plugins.module_utils.share_groups import share_version_change


def kafka_restart_order(
    hosts: Iterable[str], model: Mapping[str, Any], leader_id: int | None, controllers_first: bool = False
) -> list[str]:
    """The hosts to restart, in inventory order within each group, the active controller always last.

    A config roll takes broker-only nodes first and the controllers after them; an upgrade
    (controllers_first) takes the KRaft controllers first, as Kafka's upgrade notes ask. In both the
    node that is the active controller (KRaft quorum leader, or the ZooKeeper-mode controller broker)
    goes last, so the run causes at most one controller election.
    """
    nodes = model["nodes"]
    chosen = [h for h in hosts if h in nodes]

    def is_controller(host: str) -> bool:
        return "controller" in nodes[host]["roles"]

    controllers = [h for h in chosen if is_controller(h)]
    brokers = [h for h in chosen if not is_controller(h)]
    ordered = controllers + brokers if controllers_first else brokers + controllers
    leader = [h for h in ordered if leader_id is not None and int(nodes[h]["node_id"]) == int(leader_id)]
    return [h for h in ordered if h not in leader] + leader


def kafka_dynamic_properties(properties: Mapping[str, Any], update_modes: Mapping[str, str]) -> dict[str, str]:
    """The properties Kafka lets every broker change at run time ("cluster-wide" in its config reference).

    update_modes is the release's own broker config reference (name -> read-only, per-broker or
    cluster-wide), read from its KafkaConfig at artifact time. Per-broker ones (listeners, keystores) go
    through a restart: a listener change also changes what the node registers.
    """
    return {key: java_text(value) for key, value in properties.items() if update_modes.get(key) == "cluster-wide"}


_FEATURE = re.compile(
    r"Feature:\s*(?P<name>\S+)\s+SupportedMinVersion:\s*(?P<min>\S+)\s+SupportedMaxVersion:\s*(?P<max>\S+)\s+"
    r"FinalizedVersionLevel:\s*(?P<level>\S+)"
)
# Never raised by upgrade.yml: on a static quorum kraft.version 1 cannot be undone (KAFKA-21426); moving to a
# dynamic quorum is its own operation.
KEPT_FEATURES = ("kraft.version",)


def kafka_finalized_features(describe: str) -> dict[str, Any]:
    """feature -> finalized level from `kafka-features describe` (metadata.version as its name, e.g. 4.2-IV1;
    0 for a feature the cluster has not finalized)."""
    levels: dict[str, Any] = {}
    for match in _FEATURE.finditer(describe):
        level = match["level"]
        if match["name"] == "metadata.version":
            levels[match["name"]] = level
        else:
            levels[match["name"]] = int(level) if level.isdigit() else 0
    return levels


def metadata_version_key(name: str) -> tuple[int, int, int]:
    """4.3-IV0 -> (4, 3, 0); 3.3-IV3 -> (3, 3, 3); a bare release 4.3 -> (4, 3, 0)."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:-IV(\d+))?", str(name).strip())
    if not match:
        raise ValueError(f"not a metadata.version name: {name!r}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def kafka_features_to_raise(finalized: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, int]:
    """The features (and levels) to name in `kafka-features upgrade --feature`: those the new release
    finalizes by default (its features.json) above the cluster's, kraft.version excepted. Never lowers."""
    raise_to: dict[str, int] = {}
    for name, level in sorted(target.items()):
        if name.endswith(".name") or name in KEPT_FEATURES:
            continue
        if name == "metadata.version":
            current = finalized.get(name)
            if current is None or metadata_version_key(current) < metadata_version_key(target["metadata.version.name"]):
                raise_to[name] = int(level)
        elif int(finalized.get(name, 0)) < int(level):
            raise_to[name] = int(level)
    return raise_to


def kafka_release_lowers_metadata(finalized: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """True when the cluster's finalized metadata.version is newer than the target release's own: Kafka
    cannot lower a finalized metadata.version, so that release could not run this cluster."""
    current = finalized.get("metadata.version")
    if current is None or "metadata.version.name" not in target:
        return False
    return metadata_version_key(current) > metadata_version_key(target["metadata.version.name"])


def kafka_share_version_change(finalized: Mapping[str, Any], enabled: Any, target: Mapping[str, Any]) -> dict[str, Any]:
    """kafka_share_groups_enabled against the cluster's finalized share.version (share_groups.share_version_change),
    the release's default level from its features.json."""
    return share_version_change(finalized, bool(enabled), int(target.get("share.version", 0) or 0))


def kafka_release_features_wanted(target: Mapping[str, Any], share_groups_enabled: Any) -> dict[str, Any]:
    """The release's default feature levels the cluster is raised to: share.version left out while share groups
    are off (kafka_share_groups_enabled), so that an upgrade does not turn them on."""
    return {k: v for k, v in target.items() if bool(share_groups_enabled) or k != "share.version"}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "kafka_share_version_change": kafka_share_version_change,
            "kafka_release_features_wanted": kafka_release_features_wanted,
            "kafka_restart_order": kafka_restart_order,
            "kafka_dynamic_properties": kafka_dynamic_properties,
            "kafka_finalized_features": kafka_finalized_features,
            "kafka_features_to_raise": kafka_features_to_raise,
            "kafka_release_lowers_metadata": kafka_release_lowers_metadata,
        }
