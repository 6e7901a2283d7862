#!/usr/bin/python
"""Ansible module: spread partitions over the brokers, or drain one, with a replication throttle."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_reassign
short_description: Reassign partitions (rebalance over the brokers, or drain one) and wait until done
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Runs on a Kafka node with the installed command-line tools (kafka-topics, kafka-reassign-partitions,
    kafka-leader-election, kafka-log-dirs, kafka-cluster).
  - C(state=describe) reads which brokers hold which replicas, and the registered brokers (and with I(node_id), the
    bytes that broker holds on disk). Read-only.
  - C(state=balanced) spreads every topic's replicas and preferred leaders over I(brokers) with the fewest moves
    (module_utils/kafka_reassign_plan.py); C(state=drained) moves every replica off I(node_id) first. The plan runs
    with kafka-reassign-partitions --execute --throttle I(throttle) (bytes/s per broker, the replication traffic
    the move may use), waits with --verify until every partition has moved (which also removes the throttle),
    then elects the preferred leaders of the moved partitions (and of any other partition whose in-sync preferred
    leader does not lead). A balanced cluster is left alone (changed=false).
    With broker.rack set on the brokers (as kafka-broker-api-versions reports them), no move lowers the number of
    racks a partition's replicas span.
  - A run that stopped while a reassignment it started was still moving (killed, timed out) leaves its plan in
    I(work_dir); the next run first waits for that one to finish and its throttle to be removed. A reassignment
    this module did not start is refused (named), never cancelled.
  - C(state=unregistered) removes a stopped, drained broker's registration (kafka-cluster unregister; KRaft only).
extends_documentation_fragment:
  - kafkalab.kafka.kafka_tools
options:
  state:
    description: "What to do."
    type: str
    choices: [describe, balanced, drained, unregistered]
    default: describe
  bootstrap_servers:
    description: "The brokers' bootstrap list."
    type: str
    required: true
  brokers:
    description: "The brokers the cluster keeps (ids)."
    type: list
    elements: int
    default: []
  node_id:
    description: "The broker to drain or unregister."
    type: int
  throttle:
    description: "Replication throttle in bytes/s during the move (0 = none)."
    type: int
    default: 0
  timeout:
    description: "Seconds to wait for the move (and the leader election)."
    type: int
    default: 3600
  work_dir:
    description: Where the running plan and the rollback plans are kept.
    type: path
    default: /var/lib/kafkalab/reassign
"""

EXAMPLES = r"""
- name: Move every replica off node 3 before it is removed
  kafkalab.kafka.kafka_reassign:
    state: drained
    bootstrap_servers: kafka1:9092
    node_id: 3
"""

RETURN = r"""
replicas: {description: broker id -> partitions it holds (state=describe)., returned: always, type: dict}
on_disk_bytes: {description: Bytes node_id holds on disk., returned: state=describe with node_id, type: int}
sole: {description: Partitions node_id is the only replica of., returned: state=describe with node_id, type: list}
registered:
  description: Broker ids registered (fenced or not), when the release can list them.
  returned: always
  type: list
moved_partitions: {description: Partitions whose replicas changed., returned: balanced/drained, type: int}
moved_replicas: {description: Replicas copied to a new broker., returned: balanced/drained, type: int}
moved_bytes:
  description: Bytes the copies took (each partition's size on its leader).
  returned: balanced/drained
  type: int
seconds:
  description: Seconds from --execute until every partition had moved.
  returned: balanced/drained
  type: float
counts:
  description: broker -> replicas held and partitions led, afterwards.
  returned: balanced/drained
  type: dict
racks: {description: 'broker id -> broker.rack, when any broker has one.', returned: when racks are set, type: dict}
layout: {description: 'The same as text: "broker: replicas/leaders, ...".', returned: balanced/drained, type: str}
on_disk:
  description: Partitions the drained broker still reports on disk (0 once it deleted them).
  returned: drained
  type: int
"""

import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    broker_problems,
    parse_brokers,
    parse_racks,
    parse_topics,
    sole_replicas,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_reassign_plan import (
    PlanError,
    bytes_to_copy,
    counts,
    election_json,
    held_by,
    listed_reassignments,
    moved_replicas,
    parse_log_dirs,
    plan,
    plan_json,
    verify_state,
)

POLL = 3.0


class Tools:
    def __init__(self, module: AnsibleModule) -> None:
        self.module = module
        self.bin_dir = module.params["bin_dir"]
        self.bootstrap = module.params["bootstrap_servers"]

    def run(self, tool: str, *args: str, check: bool = True) -> tuple[int, str]:
        # kafka-cluster takes its subcommand first.
        head = [args[0]] if tool == "kafka-cluster" else []
        proc = subprocess.run(
            [f"{self.bin_dir}/{tool}", *head, "--bootstrap-server", self.bootstrap, *args[len(head) :]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        out = proc.stdout if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()[-600:]
        if check and proc.returncode != 0:
            self.module.fail_json(msg=f"{tool} {' '.join(args[:2])} failed (exit {proc.returncode}): {out}")
        return proc.returncode, out

    def partitions(self) -> list[Any]:
        return parse_topics(self.run("kafka-topics", "--describe")[1], 1)

    def brokers(self) -> dict[int, bool] | None:
        """Every registered broker -> fenced, fenced ones included (KIP-1073, Kafka 4.0+); None when the release
        cannot list them (3.9)."""
        rc, out = self.run("kafka-cluster", "list-endpoints", "--include-fenced-brokers", check=False)
        if rc != 0:
            return None
        found = {}
        for line in out.splitlines():
            cols = line.split()
            if len(cols) >= 6 and cols[0].isdigit() and cols[-1] == "broker":
                found[int(cols[0])] = cols[-2] == "fenced"
        return found

    def registered(self) -> list[int] | None:
        found = self.brokers()
        return None if found is None else sorted(found)

    def registration(self) -> dict[int, bool]:
        """broker -> fenced, from list-endpoints, or on 3.9 from kafka-broker-api-versions (unfenced ones only)."""
        found = self.brokers()
        return parse_brokers(self.run("kafka-broker-api-versions", check=False)[1]) if found is None else found

    def sizes(self, brokers: list[int], topics: list[str]) -> dict[int, dict[str, int]]:
        args = ["--describe", "--broker-list", ",".join(map(str, brokers))]
        if topics:
            args += ["--topic-list", ",".join(topics)]
        # Sizes are for the report only: a broker that does not answer leaves them unknown (0), not a failure.
        rc, out = self.run("kafka-log-dirs", *args, check=False)
        return parse_log_dirs(out) if rc == 0 else {}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _wait_for(tools: Tools, plan_file: Path, deadline: float) -> dict[str, Any]:
    """Polls --verify until no partition of the plan is still moving; --verify then removes the throttle."""
    while True:
        _ok, out = tools.run("kafka-reassign-partitions", "--reassignment-json-file", str(plan_file), "--verify")
        state = verify_state(out)
        if state["failed"]:
            tools.module.fail_json(
                msg=f"the reassignment in {plan_file} failed: {'; '.join(state['failed'][:5])}", **state
            )
        if not state["in_progress"]:
            return state
        if time.monotonic() >= deadline:
            tools.module.fail_json(
                msg=(
                    f"{len(state['in_progress'])} partition(s) still moving after the timeout: "
                    f"{', '.join(state['in_progress'][:10])}. Kafka goes on moving them (throttled); run the playbook "
                    f"again to wait for the rest (the plan is kept in {plan_file})."
                ),
                **state,
            )
        time.sleep(POLL)


def _elect(tools: Tools, keys: list[tuple[str, int]], work_dir: Path, deadline: float) -> str:
    """Preferred leader election for some partitions; returns a warning when some could not be elected."""
    if not keys:
        return ""
    path = work_dir / "election.json"
    _write(path, election_json(keys))
    while True:
        rc, out = tools.run(
            "kafka-leader-election", "--election-type", "PREFERRED", "--path-to-json-file", str(path), check=False
        )
        if rc == 0 and "Error completing leader election" not in out:
            path.unlink(missing_ok=True)
            return ""
        if time.monotonic() >= deadline:
            path.unlink(missing_ok=True)
            return f"the preferred leaders of some partitions were not elected: {out.strip()[-300:]}"
        time.sleep(POLL)


def reassign(module: AnsibleModule, tools: Tools) -> dict[str, Any]:
    p = module.params
    work_dir = Path(p["work_dir"])
    plan_file = work_dir / "plan.json"
    deadline = time.monotonic() + p["timeout"]
    result: dict[str, Any] = {"changed": False}
    if plan_file.exists():
        # A run before this one started this reassignment and stopped before it ended: finish it first.
        if module.check_mode:
            module.exit_json(changed=True, msg=f"an earlier reassignment ({plan_file}) would be finished first")
        _wait_for(tools, plan_file, deadline)
        plan_file.unlink()
        result["changed"] = True
        result["finished_earlier"] = True
    _ok, listed = tools.run("kafka-reassign-partitions", "--list")
    running = listed_reassignments(listed)
    if running:
        module.fail_json(
            msg=(
                f"partitions are being reassigned by someone else: {', '.join(running[:10])}. Wait for that "
                "reassignment to end (kafka-reassign-partitions --list), or cancel it yourself; nothing was changed."
            )
        )
    drain = p["node_id"] if p["state"] == "drained" else None
    # A broker that scale_out.yml just started may not have registered yet: nothing can move to it before.
    wanted = sorted(set(p["brokers"]) - {drain})
    while problems := broker_problems(tools.registration(), wanted):
        if time.monotonic() >= deadline:
            module.fail_json(msg=f"{'; '.join(problems)}: nothing moved")
        time.sleep(POLL)
    partitions = tools.partitions()
    # broker.rack as the brokers report it: no move lowers the racks a partition spans.
    racks = parse_racks(tools.run("kafka-broker-api-versions", check=False)[1])
    if any(racks.values()):
        result["racks"] = {str(b): r for b, r in sorted(racks.items())}
    try:
        changes = plan(partitions, p["brokers"], drain, racks)
    except PlanError as exc:
        module.fail_json(msg=f"cannot {'drain node ' + str(drain) if drain is not None else 'rebalance'}: {exc}")
    result["moved_partitions"] = len(changes)
    result["moved_replicas"] = moved_replicas(partitions, changes)
    result["moved_bytes"] = 0
    result["seconds"] = 0.0
    result["throttle"] = p["throttle"]
    if changes:
        topics = sorted({t for t, _partition in changes})
        result["moved_bytes"] = bytes_to_copy(
            partitions, changes, tools.sizes(sorted({x.leader for x in partitions if x.leader is not None}), topics)
        )
        result["changed"] = True
        if module.check_mode:
            result["plan"] = json.loads(plan_json(changes))
            return result
        _write(plan_file, plan_json(changes))
        args = ["--reassignment-json-file", str(plan_file), "--execute"]
        if p["throttle"] > 0:
            args += ["--throttle", str(p["throttle"])]
        started = time.monotonic()
        _ok, out = tools.run("kafka-reassign-partitions", *args)
        # The tool prints the assignment before the move: kept for a rollback by hand.
        before = next((line for line in out.splitlines() if line.startswith("{")), "")
        if before:
            rollback = work_dir / f"rollback-{time.strftime('%Y%m%dT%H%M%S')}.json"
            _write(rollback, before + "\n")
            result["rollback_plan"] = str(rollback)
        _wait_for(tools, plan_file, deadline)
        result["seconds"] = round(time.monotonic() - started, 1)
        plan_file.unlink()
        # The moved partitions, and any other whose preferred leader is in sync but does not lead (leadership left
        # behind by earlier restarts): the layout afterwards is the plan's.
        stray = {
            (x.topic, x.partition)
            for x in tools.partitions()
            if x.replicas and x.leader != x.replicas[0] and x.replicas[0] in x.isr
        }
        warning = _elect(tools, sorted(set(changes) | stray), work_dir, deadline)
        if warning:
            module.warn(warning)
    after = tools.partitions()
    result["counts"] = counts(after, p["brokers"])
    result["layout"] = ", ".join(f"{b}: {c['replicas']}/{c['leaders']}" for b, c in sorted(result["counts"].items()))
    if drain is not None:
        left = held_by(after, drain)
        if left:
            module.fail_json(msg=f"node {drain} still holds replicas of {', '.join(left[:10])}", **result)
        result["on_disk"] = _wait_empty(tools, drain, deadline)
    return result


def _wait_empty(tools: Tools, node: int, deadline: float) -> int:
    """The drained broker deletes the moved replicas' logs: waits until it reports none (returns how many)."""
    while True:
        held = len(tools.sizes([node], []).get(node, {}))
        if held == 0 or time.monotonic() >= deadline:
            return held
        time.sleep(POLL)


def unregister(module: AnsibleModule, tools: Tools) -> dict[str, Any]:
    node = module.params["node_id"]
    before = tools.registered()
    if before is not None and node not in before:
        return {"changed": False, "registered": before}
    if module.check_mode:
        return {"changed": True, "registered": before or []}
    rc, out = tools.run("kafka-cluster", "unregister", "--id", str(node), check=False)
    if rc != 0 and "not currently registered" not in out and "BROKER_ID_NOT_REGISTERED" not in out:
        module.fail_json(msg=f"kafka-cluster unregister --id {node} failed: {out}")
    after = tools.registered()
    if after is not None and node in after:
        module.fail_json(msg=f"node {node} is still registered after kafka-cluster unregister", registered=after)
    return {"changed": rc == 0, "registered": after or []}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {
                "type": "str",
                "choices": ["describe", "balanced", "drained", "unregistered"],
                "default": "describe",
            },
            "bin_dir": {"type": "path", "default": "/usr/local/bin"},
            "bootstrap_servers": {"type": "str", "required": True},
            "brokers": {"type": "list", "elements": "int", "default": []},
            "node_id": {"type": "int"},
            "throttle": {"type": "int", "default": 0},
            "timeout": {"type": "int", "default": 3600},
            "work_dir": {"type": "path", "default": "/var/lib/kafkalab/reassign"},
        },
        required_if=[
            ("state", "drained", ["node_id", "brokers"]),
            ("state", "unregistered", ["node_id"]),
            ("state", "balanced", ["brokers"]),
        ],
        supports_check_mode=True,
    )
    tools = Tools(module)
    state = module.params["state"]
    if state == "describe":
        # Two JVM tools that do not depend on each other, side by side (every preflight asks: seconds per run).
        # The registration never fails the module (check=False); the topics' describe may, from this thread.
        with ThreadPoolExecutor(1) as pool:
            registered = pool.submit(tools.registered)
            partitions = tools.partitions()
        replicas: dict[str, list[str]] = {}
        for x in partitions:
            for b in x.replicas:
                replicas.setdefault(str(b), []).append(x.name)
        result: dict[str, Any] = {"changed": False, "replicas": replicas, "registered": registered.result()}
        if module.params["node_id"] is not None:
            node = module.params["node_id"]
            result["on_disk_bytes"] = sum(tools.sizes([node], []).get(node, {}).values())
            result["sole"] = [x.name for x in sole_replicas(partitions, node)]
        module.exit_json(**result)
    if state == "unregistered":
        module.exit_json(**unregister(module, tools))
    module.exit_json(**reassign(module, tools))


if __name__ == "__main__":
    main()
