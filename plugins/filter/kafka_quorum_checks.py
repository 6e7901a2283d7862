"""The KRaft controller quorum as the nodes hold it, against what the inventory says (KIP-853).

A new cluster gets a dynamic quorum: every node finds the controllers through
controller.quorum.bootstrap.servers, and the voters live in the metadata log, written there when the initial
controllers are formatted (--initial-controllers). A cluster formatted with a static voter list
(controller.quorum.voters) keeps it. Voters change only through playbooks/add_controller.yml and
remove_controller.yml; everything else that would change them is refused here, before any host changes:
a controller added or removed by editing the inventory alone, and a controller whose metadata dir is empty
in a cluster that has already run (its disk was lost, or it is new: either way it must not vote as itself).

Pure functions over what the host preflight read (tasks/preflight_host.yml): unit-tested without a cluster.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties

# Fixed namespace of the directory ids this project derives (uuid5 of "<cluster id>/<node id>").
_NAMESPACE = uuid.UUID("6f1c2b1e-3f5d-4c59-9a57-4b7f2d1e0c11")


def kafka_directory_id(cluster_id: str, node_id: Any) -> str:
    """The metadata directory id of an initial controller, derived from the cluster id and its node id.

    Derived, not random, so that a first install killed between two controllers' formats formats the rest
    with the same --initial-controllers list (it must be the same on every node). Only initial controllers
    get one: a controller added later is formatted with --no-initial-controllers and draws a random id, and
    a controller whose disk was lost is refused (kafka_quorum_problems), so no id is ever used twice.
    Kafka's string form: URL-safe base64 of the 16 bytes, no padding, never starting with '-'.
    """
    salt = 0
    while True:
        raw = uuid.uuid5(_NAMESPACE, f"{cluster_id}/{node_id}/{salt}" if salt else f"{cluster_id}/{node_id}").bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-"):
            return text
        salt += 1


def kafka_initial_controllers(model: Mapping[str, Any], cluster_id: str) -> str:
    """The --initial-controllers argument: id@host:port:directory-id of every controller of the inventory."""
    controllers = [node for node in model["nodes"].values() if "controller" in node["roles"]]
    return ",".join(
        f"{n['node_id']}@{n['address']}:{n['controller_port']}:{kafka_directory_id(cluster_id, n['node_id'])}"
        for n in controllers
    )


def kafka_quorum_kind(configs: Iterable[str | None], requested: str, migration_phase: str = "") -> str:
    """dynamic or static: what the nodes' server.properties already use, else (a new cluster) `requested`.

    A node renders controller.quorum.bootstrap.servers without controller.quorum.voters only for a dynamic quorum
    (a new one, or one that playbooks/quorum_to_dynamic.yml moved to kraft.version 1): one such node makes the
    cluster dynamic, also while a move killed halfway left the others with their static voters (the next run
    renders them alike). A ZooKeeper -> KRaft migration runs a static quorum (Kafka 3.9 migrates only those).
    """
    kinds = set()
    for text in configs:
        if not text:
            continue
        props = parse_properties(text)
        if "process.roles" not in props and "controller.quorum.voters" not in props:
            continue
        if props.get("controller.quorum.voters", "").strip():
            kinds.add("static")
        elif props.get("controller.quorum.bootstrap.servers", "").strip():
            kinds.add("dynamic")
    if "dynamic" in kinds and not migration_phase:
        return "dynamic"
    if kinds or migration_phase:
        return "static"
    return requested


def kafka_quorum_witness(model: Mapping[str, Any], disks: Mapping[str, Mapping[str, Any]]) -> str:
    """A controller that has run (its metadata dir holds quorum-state): it has the tools and answers for the
    quorum. '' for a new cluster."""
    return next(
        (h for h, d in disks.items() if d.get("ran") and "controller" in model["nodes"].get(h, {}).get("roles", [])),
        "",
    )


def _voter_ids(text: str | None) -> set[int] | None:
    if not text:
        return None
    voters = parse_properties(text).get("controller.quorum.voters", "").strip()
    if not voters:
        return None
    return {int(item.split("@", 1)[0]) for item in voters.split(",") if "@" in item}


def kafka_quorum_problems(
    model: Mapping[str, Any],
    disks: Mapping[str, Mapping[str, Any]],
    kind: str,
    live_voters: Iterable[Any] | None = None,
    change: Mapping[str, Any] | None = None,
) -> list[str]:
    """Every way the inventory's controllers differ from the quorum the nodes hold, each with its fix.

    disks: host -> {config: server.properties text or '', meta: bool (the metadata dir holds meta.properties),
    ran: bool (the metadata dir holds quorum-state: the node has run), dir: the metadata dir}, for the hosts
    this run reads. live_voters: the voter ids the running quorum reports (dynamic quorum), or None when it
    did not answer. change: {"add": host} while add_controller.yml runs, {"remove": host} for remove_controller.yml.
    """
    change = change or {}
    nodes = model["nodes"]
    controllers = {h: int(n["node_id"]) for h, n in nodes.items() if "controller" in n["roles"]}
    by_id = {v: h for h, v in controllers.items()}
    problems: list[str] = []
    # A ZooKeeper -> KRaft migration formats its controllers afresh by design (and a rollback removes them).
    has_run = [] if model.get("migration_phase") else sorted(h for h, d in disks.items() if d.get("ran"))
    adding = str(change.get("add") or "")
    removing = str(change.get("remove") or "")
    removing_id = int(nodes[removing]["node_id"]) if removing in nodes else None

    if has_run:
        for host in sorted(controllers):
            disk = disks.get(host)
            if disk is None or disk.get("meta") or host == adding:
                continue
            problems.append(
                f"{host}: is a KRaft controller (node {controllers[host]}) but its metadata dir {disk.get('dir', '?')} "
                f"holds no meta.properties, while the cluster has run ({', '.join(has_run[:3])} hold its quorum "
                "state). Either it is new or its disk was lost; formatted and started as itself, it could vote with "
                "an empty log and lose committed metadata. "
                + (
                    f"If it is new, run playbooks/add_controller.yml -e kafka_add_controller={host}. If its disk was "
                    f"lost, run playbooks/remove_controller.yml -e kafka_remove_controller={host} (removes the lost "
                    "voter), then add_controller.yml for it (it joins with a new directory id)."
                    if kind == "dynamic"
                    else "A static quorum (controller.quorum.voters) cannot replace a voter: restore the disk, or move "
                    "the cluster to a dynamic quorum (kraft.version 1; see roles/kafka/README.md) and use "
                    "add_controller.yml."
                )
                + " Nothing was changed."
            )

    if kind == "static":
        wanted = set(controllers.values())
        for host in sorted(disks):
            held = _voter_ids(disks[host].get("config"))
            if held is None or held == wanted:
                continue
            problems.append(
                f"{host}: runs the static controller quorum {sorted(held)} (controller.quorum.voters) but the "
                f"inventory's kafka_controller group gives {sorted(wanted)}. A static quorum cannot change its voters "
                "by a new voter list (nodes with different lists form two quorums). Put the group back as it was; to "
                "change the controllers, move the cluster to a dynamic quorum first (kraft.version 1; see "
                "roles/kafka/README.md), then use add_controller.yml / remove_controller.yml. Nothing was changed."
            )
            break
        return problems

    if live_voters is None:
        return problems
    live = {int(v) for v in live_voters}
    wanted = set(controllers.values()) - {removing_id}
    for node_id in sorted(wanted - live):
        host = by_id[node_id]
        if host == adding:
            continue
        problems.append(
            f"{host}: is in the kafka_controller group (node {node_id}) but not a voter of the running quorum "
            f"{sorted(live)}. Editing the inventory does not add a voter: run playbooks/add_controller.yml "
            f"-e kafka_add_controller={host} (it catches the node up before it votes), or take {host} out of the "
            "group. Nothing was changed."
        )
    for node_id in sorted(live - wanted - {removing_id}):
        problems.append(
            f"node {node_id} is a voter of the running quorum {sorted(live)} but no host of the kafka_controller "
            "group has kafka_node_id " + str(node_id) + ". Editing the inventory does not remove a voter: put the "
            "host back and run playbooks/remove_controller.yml -e kafka_remove_controller=<that host> first, "
            "then take it out of the inventory. Nothing was changed."
        )
    return problems


def kafka_quorum_change_problems(
    model: Mapping[str, Any], kind: str, live_voters: Iterable[Any] | None, change: Mapping[str, Any]
) -> list[str]:
    """What makes the asked-for voter change impossible (add_controller.yml, remove_controller.yml)."""
    problems: list[str] = []
    nodes = model["nodes"]
    host = str(change.get("add") or change.get("remove") or "")
    verb = "kafka_add_controller" if change.get("add") else "kafka_remove_controller"
    if kind != "dynamic":
        problems.append(
            f"{verb}={host}: the cluster runs a static controller quorum (controller.quorum.voters), whose voters "
            "cannot change. Move it to a dynamic quorum first (kraft.version 1; see roles/kafka/README.md)."
        )
        return problems
    if host not in nodes or "controller" not in nodes[host]["roles"]:
        problems.append(
            f"{verb}={host}: {host} is not a host of the kafka_controller group. Put it in the group (the playbook "
            "needs its address and node id), then run again."
        )
        return problems
    if live_voters is None:
        problems.append(
            f"{verb}={host}: the running controller quorum did not answer, so the voters cannot be changed now. Bring "
            "the controllers up (playbooks/kafka.yml) and run again."
        )
        return problems
    live = {int(v) for v in live_voters}
    node_id = int(nodes[host]["node_id"])
    if change.get("remove") and "broker" in nodes[host]["roles"]:
        problems.append(
            f"kafka_remove_controller={host}: {host} is a broker too (combined mode); removing its controller stops "
            "the node, and the broker with it, while it still holds replicas. Remove dedicated controllers only; move "
            "a combined node's partitions away first."
        )
    if change.get("remove") and node_id in live and len(live) == 1:
        problems.append(
            f"kafka_remove_controller={host}: node {node_id} is the only voter; removing it leaves no quorum. Add "
            "another controller first (playbooks/add_controller.yml)."
        )
    return problems


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_directory_id": kafka_directory_id,
            "kafka_initial_controllers": kafka_initial_controllers,
            "kafka_quorum_kind": kafka_quorum_kind,
            "kafka_quorum_witness": kafka_quorum_witness,
            "kafka_quorum_problems": kafka_quorum_problems,
            "kafka_quorum_change_problems": kafka_quorum_change_problems,
        }
