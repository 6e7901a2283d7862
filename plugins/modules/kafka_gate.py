#!/usr/bin/python
"""Ansible module: the health gate before stopping and after starting one Kafka node."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_gate
short_description: Wait until one Kafka node may stop, or is back, as the cluster's own tools report it
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Runs on a Kafka node with the installed command-line tools and looks at the whole cluster, retrying
    until every condition holds or I(timeout) runs out; then it fails with what still does not hold.
  - >-
    C(phase=before) (the node is about to stop) - no partition is offline, under-replicated or under
    min ISR, and none the node is in sync for would drop below its min.insync.replicas without it (named);
    every broker is registered (and unfenced in KRaft mode); for a controller, the quorum has a leader,
    the node is caught up with it, and the other caught-up voters are a majority.
  - >-
    C(phase=after) (the node was started) - the same, minus the "without it" rules, so the node is
    registered and unfenced, its replicas are back in sync, and, for a controller, it has caught up.
  - >-
    C(phase=after) with I(next_nodes) - once the gate holds, its last look also answers the gate before the stop
    of each of those nodes (the same conditions, on the same tools' answers): the result's C(may_stop) names the
    ones that may stop now, so a rolling restart stops the next node on that look instead of starting the three
    tools again. A node it does not name goes through its own gate before, which waits.
  - Read-only; runs in check mode too.
extends_documentation_fragment:
  - kafkalab.kafka.kafka_tools
options:
  phase:
    description: "before or after."
    type: str
    choices: [before, after]
    required: true
  node_id:
    description: "The node's node.id (broker.id in ZooKeeper mode)."
    type: int
    required: true
  roles:
    description: "The node's roles (broker, controller)."
    type: list
    elements: str
    required: true
  mode:
    description: "kraft or zookeeper."
    type: str
    choices: [kraft, zookeeper]
    required: true
  bootstrap_servers:
    description: "The brokers' bootstrap list."
    type: str
    required: true
  bootstrap_controller:
    description: "The controllers' bootstrap list (KRaft)."
    type: str
    default: ""
  zookeeper_connect:
    description: "The ZooKeeper connect string (ZooKeeper mode)."
    type: str
    default: ""
  brokers:
    description: "Every broker id the cluster must have registered."
    type: list
    elements: int
    required: true
  default_min_insync_replicas:
    description: "The brokers' min.insync.replicas."
    type: int
    required: true
  controller_lag_max:
    description: Records a controller may trail the leader and count as caught up.
    type: int
    default: 1000
  timeout:
    description: "Seconds to keep looking."
    type: int
    default: 300
  unprotected_topics:
    description: Topics whose partitions a stop may take offline or below min ISR (declared by the operator).
    type: list
    elements: str
    default: []
  wait_ports:
    description:
      - >-
        C(phase=after) only: the TCP ports of the node (its listeners, and the controller port of a controller) to
        wait for on I(host) before the first look, polled every quarter second within I(timeout) (one task for what
        was a wait per port). The result's C(ports_open_after) says how long they took.
    type: list
    elements: int
    default: []
  host:
    description: "The address to reach I(wait_ports) on (the node's own)."
    type: str
    default: ""
  next_nodes:
    description:
      - >-
        C(phase=after) only: the nodes (node id -> their roles) whose gate before the stop the last look also
        answers, for C(may_stop).
    type: dict
    default: {}
  formatted:
    description:
      - >-
        The node came back with an empty log dir (a replaced disk, formatted by this run). An offline partition
        whose only replicas were on it cannot refill by replication: the gate fails at once, naming it and the
        explicit ways back, instead of waiting out I(timeout).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Wait until this broker may stop
  kafkalab.kafka.kafka_gate:
    phase: before
    node_id: 1
    roles: [broker, controller]
    mode: kraft
    bootstrap_servers: kafka1:9092,kafka2:9092,kafka3:9092
    bootstrap_controller: kafka1:9093,kafka2:9093,kafka3:9093
    brokers: [1, 2, 3]
    default_min_insync_replicas: 2
"""

RETURN = r"""
leader_id:
  description: The active controller (KRaft quorum leader, or the ZooKeeper-mode controller broker).
  returned: always
  type: int
waited:
  description: Seconds spent until the gate held (after the ports opened, with I(wait_ports)).
  returned: always
  type: float
ports_open_after:
  description: Seconds until every port of I(wait_ports) accepted a connection (0 without I(wait_ports)).
  returned: always
  type: float
problems:
  description: What the last look found wrong (empty when the gate held).
  returned: always
  type: list
  elements: str
waited_for:
  description: What the first look found wrong when the gate had to wait (empty when it held at once).
  returned: always
  type: list
  elements: str
may_stop:
  description: The ids of I(next_nodes) that the gate's last look lets stop now (empty when the gate failed).
  returned: always
  type: list
  elements: int
"""

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    Health,
    broker_problems,
    lost_partitions,
    parse_brokers,
    parse_topics,
    parse_voters,
    parse_zookeeper_controller,
    parse_zookeeper_ids,
    partition_problems,
    quorum_problems,
)


def _tools(module: AnsibleModule, calls: list[tuple[str, ...]]) -> list[tuple[str | None, str]]:
    """Run the tools of one look side by side (each starts a JVM: seconds apart, they add up on every
    restart); per call (stdout, "") or (None, why it failed)."""

    def one(call: tuple[str, ...]) -> tuple[str | None, str]:
        name, *args = call
        rc, out, err = module.run_command([f"{module.params['bin_dir']}/{name}", *args])
        if rc != 0:
            tail = (err or out).strip()[-300:]
            return None, f"{name} {' '.join(args[-2:])} failed (exit {rc}): {tail}"
        return out, ""

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(one, calls))


def _calls(p: dict[str, Any], phase: str, roles: list[str]) -> dict[str, tuple[str, ...]]:
    """The tools a look of this phase runs, for a node of these roles (the after phase asks for every one a
    before phase would: its look answers both)."""
    calls: dict[str, tuple[str, ...]] = {
        "topics": ("kafka-topics", "--bootstrap-server", p["bootstrap_servers"], "--describe"),
    }
    if p["mode"] == "kraft":
        calls["quorum"] = (
            "kafka-metadata-quorum",
            "--bootstrap-controller",
            p["bootstrap_controller"],
            "describe",
            "--replication",
        )
        if "broker" in roles or phase == "after":
            calls["brokers"] = ("kafka-broker-api-versions", "--bootstrap-server", p["bootstrap_servers"])
    else:
        calls["ids"] = ("zookeeper-shell", p["zookeeper_connect"], "ls", "/brokers/ids")
        calls["controller"] = ("zookeeper-shell", p["zookeeper_connect"], "get", "/controller")
    return calls


def ask(module: AnsibleModule) -> dict[str, tuple[str | None, str]]:
    """The tools' answers for one look of this gate's phase (tool -> (stdout, "") or (None, why it failed))."""
    p = module.params
    calls = _calls(p, p["phase"], p["roles"])
    return dict(zip(calls, _tools(module, list(calls.values())), strict=True))


def judge(
    p: dict[str, Any], got: dict[str, tuple[str | None, str]], phase: str, node_id: int, roles: list[str]
) -> Health:
    """What one look's answers say for a node of these roles in this phase (only the tools that phase asks)."""
    health = Health()
    stopping = phase == "before"
    wanted = _calls(p, phase, roles)
    if "quorum" in wanted:
        out, why = got["quorum"]
        if out is None:
            health.problems.append(why)
        else:
            voters = parse_voters(out)
            health.leader_id = next((v.node_id for v in voters if v.status == "Leader"), None)
            if "controller" in roles:
                health.problems += quorum_problems(voters, node_id, stopping, p["controller_lag_max"])
            elif health.leader_id is None:
                health.problems.append("the metadata quorum has no leader")
    if "brokers" in wanted:
        out, why = got["brokers"]
        health.problems += [why] if out is None else broker_problems(parse_brokers(out), p["brokers"])
    if "ids" in wanted:
        out, why = got["ids"]
        health.problems += [why] if out is None else broker_problems(parse_zookeeper_ids(out), p["brokers"])
        out, why = got["controller"]
        health.leader_id = parse_zookeeper_controller(out or "")
        if health.leader_id is None:
            health.problems.append("no active controller in ZooKeeper (/controller)" + (f": {why}" if why else ""))
    out, why = got["topics"]
    if out is None:
        health.problems.append(why)
    else:
        node = node_id if stopping and "broker" in roles else None
        partitions = parse_topics(out, p["default_min_insync_replicas"])
        health.problems += partition_problems(partitions, node, p["unprotected_topics"])
        if p["formatted"] and not stopping:
            health.lost = lost_partitions(partitions, node_id)
    return health


def look(module: AnsibleModule) -> Health:
    """One look at the cluster, as the gate of this phase sees it."""
    p = module.params
    return judge(p, ask(module), p["phase"], p["node_id"], p["roles"])


def may_stop(p: dict[str, Any], got: dict[str, tuple[str | None, str]]) -> list[int]:
    """The next nodes (p["next_nodes"]) whose gate before the stop holds on these answers of an after look."""
    return [
        int(node_id)
        for node_id, roles in p["next_nodes"].items()
        if judge(p, got, "before", int(node_id), list(roles)).ok
    ]


def wait_ports(host: str, ports: list[int], deadline: float) -> list[int]:
    """Poll until every port accepts a TCP connection on host, or the deadline passes; the ports still closed."""
    closed = list(ports)
    while True:
        for port in list(closed):
            try:
                with socket.create_connection((host, port), timeout=1):
                    closed.remove(port)
            except OSError:
                break  # the node opens its ports within moments of each other: look at this one again first
        if not closed or time.monotonic() >= deadline:
            return closed
        time.sleep(0.25)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "phase": {"type": "str", "choices": ["before", "after"], "required": True},
            "node_id": {"type": "int", "required": True},
            "roles": {"type": "list", "elements": "str", "required": True},
            "mode": {"type": "str", "choices": ["kraft", "zookeeper"], "required": True},
            "bin_dir": {"type": "path", "default": "/usr/local/bin"},
            "bootstrap_servers": {"type": "str", "required": True},
            "bootstrap_controller": {"type": "str", "default": ""},
            "zookeeper_connect": {"type": "str", "default": ""},
            "brokers": {"type": "list", "elements": "int", "required": True},
            "default_min_insync_replicas": {"type": "int", "required": True},
            "controller_lag_max": {"type": "int", "default": 1000},
            "timeout": {"type": "int", "default": 300},
            "unprotected_topics": {"type": "list", "elements": "str", "default": []},
            "formatted": {"type": "bool", "default": False},
            "wait_ports": {"type": "list", "elements": "int", "default": []},
            "host": {"type": "str", "default": ""},
            "next_nodes": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["wait_ports"] and not p["host"]:
        module.fail_json(msg="wait_ports needs host: the address the node's ports are reached on")
    if p["next_nodes"] and p["phase"] != "after":
        module.fail_json(msg="next_nodes is for phase=after: a gate before the stop answers for its own node")
    bad = [str(k) for k, v in p["next_nodes"].items() if not str(k).isdigit() or not isinstance(v, list)]
    if bad:
        module.fail_json(msg=f"next_nodes maps node ids to lists of roles; not so for: {', '.join(bad)}")
    started = time.monotonic()
    ports_open_after = 0.0
    if p["wait_ports"] and p["phase"] == "after":
        closed = wait_ports(p["host"], p["wait_ports"], started + p["timeout"])
        ports_open_after = round(time.monotonic() - started, 1)
        if closed:
            module.fail_json(
                msg=(
                    f"node {p['node_id']} did not open port(s) {', '.join(map(str, closed))} on {p['host']} within "
                    f"{p['timeout']} s of its start: see its log (journalctl -u <its unit>, and the log dir's "
                    "server.log) for why it did not come up."
                ),
                leader_id=None,
                waited=0.0,
                ports_open_after=ports_open_after,
                problems=[f"port {port} closed" for port in closed],
                waited_for=[],
                may_stop=[],
            )
        started = time.monotonic()
    deadline = started + p["timeout"]
    waited_for: list[str] = []  # what the first look found wrong, when the gate had to wait: said in the result
    while True:
        got = ask(module)
        health = judge(p, got, p["phase"], p["node_id"], p["roles"])
        if health.ok or health.lost or time.monotonic() >= deadline:
            break
        waited_for = waited_for or health.problems
        # A look costs seconds of JVM start already (three tools side by side): a short pause between looks.
        time.sleep(1.5)
    waited = round(time.monotonic() - started, 1)
    result: dict[str, Any] = {
        "changed": False,
        "leader_id": health.leader_id,
        "waited": waited,
        "ports_open_after": ports_open_after,
        "problems": health.problems,
        "waited_for": waited_for[:8],
        # The next node's gate before the stop, answered by this look (a rolling restart's next step).
        "may_stop": may_stop(p, got) if health.ok and not health.lost else [],
    }
    if health.lost:
        node, shown = module.params["node_id"], ", ".join(health.lost[:8])
        more = f" and {len(health.lost) - 8} more" if len(health.lost) > 8 else ""
        module.fail_json(
            msg=(
                f"node {node} came back with an empty log dir, and {len(health.lost)} partition(s) had their only "
                f"replica on it: {shown}{more}. Their data went with the old disk, and Kafka keeps them offline "
                "rather than make an empty replica their leader. To bring them back empty on purpose (consumers' "
                "committed offsets past the new end become out of range): kafka-leader-election --bootstrap-server "
                f"{module.params['bootstrap_servers']} --election-type UNCLEAN --topic <topic> --partition <n>, for "
                "each; or delete and recreate the topic. Then run the playbook again: it waits for the rest of the "
                "refill."
            ),
            **result,
        )
    if not health.ok:
        what = "may not stop" if module.params["phase"] == "before" else "is not back in a healthy cluster"
        module.fail_json(
            msg=f"node {module.params['node_id']} {what} after {waited:.0f} s: "
            + "; ".join(health.problems[:8])
            + (f" (and {len(health.problems) - 8} more)" if len(health.problems) > 8 else ""),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
