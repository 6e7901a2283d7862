"""The brokers of the inventory against the cluster's: what host preflight refuses before a shape change.

- A broker whose host left the inventory while it still holds replicas would strand them (under-replicated for
  good, or offline): refused, naming the partitions and playbooks/decommission.yml, which drains a broker first.
- playbooks/decommission.yml drains broker-only nodes of the inventory and keeps at least one broker.
Pure functions over the cluster model (kafka_cluster.py) and what kafka_reassign state=describe read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _broker_ids(model: Mapping[str, Any]) -> dict[int, str]:
    return {int(n["node_id"]): h for h, n in model["nodes"].items() if "broker" in n["roles"]}


def kafka_stranded_replicas(model: Mapping[str, Any], replicas: Mapping[Any, Iterable[str]] | None) -> list[str]:
    """Brokers that hold replicas but are no host of the inventory's broker group (replicas: id -> partitions)."""
    problems = []
    known = _broker_ids(model)
    for node, held in sorted(((int(k), sorted(v)) for k, v in (replicas or {}).items())):
        if node in known or not held:
            continue
        shown = ", ".join(held[:8]) + (f" and {len(held) - 8} more" if len(held) > 8 else "")
        problems.append(
            f"node {node} holds replicas of {len(held)} partition(s) ({shown}) but no host of the kafka_broker group "
            f"has kafka_node_id {node}: taking a broker out of the inventory would strand them. Put its host back "
            f"and run playbooks/decommission.yml -e kafka_decommission=<that host> (it moves every replica off, "
            f"stops the broker and unregisters it), then take the host out."
        )
    return problems


def kafka_unknown_brokers(model: Mapping[str, Any], registered: Iterable[Any] | None) -> list[int]:
    """Registered brokers (fenced or not) that no inventory host is: worth a warning, not a refusal."""
    known = _broker_ids(model)
    return sorted(int(b) for b in (registered or []) if int(b) not in known)


def kafka_decommission_problems(model: Mapping[str, Any], host: str) -> list[str]:
    """What makes kafka_decommission=<host> impossible before anything is read from the cluster."""
    nodes = model["nodes"]
    if host not in nodes or "broker" not in nodes[host]["roles"]:
        return [
            f"kafka_decommission={host}: {host} is not a host of the kafka_broker group. Name the broker to drain as "
            "the inventory has it (it stays in the inventory until this playbook has run)."
        ]
    if "controller" in nodes[host]["roles"]:
        return [
            f"kafka_decommission={host}: {host} is a controller too (combined mode). Take its controller out of the "
            f"quorum first (playbooks/remove_controller.yml needs a dedicated controller), or drain its partitions "
            f"with kafka_decommission on an inventory where it is a broker only."
        ]
    if len(_broker_ids(model)) < 2:
        return [f"kafka_decommission={host}: {host} is the only broker; there is nowhere to move its replicas."]
    return []


def kafka_bootstrap_without(model: Mapping[str, Any], host: str) -> str:
    """The brokers' bootstrap list without `host` (a broker being drained or already stopped)."""
    name = model["inter_broker_listener_name"]
    return ",".join(
        f"{item['advertised_host']}:{item['advertised_port']}"
        for h, n in model["nodes"].items()
        if h != host and "broker" in n["roles"]
        for item in n["listeners"]
        if item["name"] == name
    )


def kafka_replicas_witness(
    model: Mapping[str, Any], disks: Mapping[str, Mapping[str, Any]], quorum_witness: str = ""
) -> str:
    """Where to ask which brokers hold replicas: the KRaft quorum's witness (a controller that has run), else a
    broker of the inventory that has run (its log dir holds meta.properties; in ZooKeeper mode every broker
    writes one). '' for a cluster that has never run."""
    if quorum_witness:
        return quorum_witness
    return next(
        (h for h, d in disks.items() if d.get("meta") and "broker" in model["nodes"].get(h, {}).get("roles", [])), ""
    )


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_stranded_replicas": kafka_stranded_replicas,
            "kafka_unknown_brokers": kafka_unknown_brokers,
            "kafka_decommission_problems": kafka_decommission_problems,
            "kafka_bootstrap_without": kafka_bootstrap_without,
            "kafka_replicas_witness": kafka_replicas_witness,
        }
