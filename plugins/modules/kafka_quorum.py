#!/usr/bin/python
"""Ansible module: read or change the voters of a dynamic KRaft controller quorum (KIP-853)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_quorum
short_description: The voters of a KRaft controller quorum, and adding or removing one
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Runs on a Kafka node with the installed command-line tools (kafka-metadata-quorum).
  - >-
    C(state=describe) reads the quorum (describe --status). Read-only; runs in check mode too. A quorum that
    does not answer is not a failure here: C(voters) is then absent and C(msg) says why.
  - >-
    C(state=present) makes I(node_id) a voter. It first waits until the node, running as an observer, is within
    I(lag_max) records of the leader (a voter that has not caught up would slow every commit), then runs
    add-controller with the node's own server.properties (I(command_config)): run it on that node. A node that
    already votes is left alone (changed=false).
  - >-
    C(state=absent) removes I(node_id) (with the directory id the quorum reports for it) from the voters. A node
    that does not vote is left alone. It refuses to remove the last voter.
extends_documentation_fragment:
  - kafkalab.kafka.kafka_tools
options:
  state:
    description: "describe, present or absent."
    type: str
    choices: [describe, present, absent]
    default: describe
  bootstrap_controller:
    description: "The controllers' host:port list."
    type: str
    required: true
  node_id:
    description: "The controller to add or remove."
    type: int
  command_config:
    description: "The added node's server.properties (state=present)."
    type: path
  lag_max:
    description: "Records the observer may trail the leader and count as caught up."
    type: int
    default: 100
  timeout:
    description: "Seconds to wait for the catch-up and for the change to show."
    type: int
    default: 300
"""

EXAMPLES = r"""
- name: Read the controller quorum
  kafkalab.kafka.kafka_quorum:
    bootstrap_controller: kafka1:9093,kafka2:9093,kafka3:9093
  register: quorum

- name: Make this node a voter once it has caught up
  kafkalab.kafka.kafka_quorum:
    state: present
    bootstrap_controller: kafka1:9093,kafka2:9093,kafka3:9093
    node_id: 4
    command_config: /etc/kafka/server.properties
"""

RETURN = r"""
voters: {description: The voter ids after the module ran., returned: when the quorum answered, type: list}
observers: {description: The observer ids., returned: when the quorum answered, type: list}
leader_id: {description: The quorum leader., returned: when the quorum answered, type: int}
directory_ids: {description: node id -> directory id of each voter., returned: when the quorum answered, type: dict}
waited: {description: Seconds spent waiting for the observer to catch up., returned: state=present, type: float}
"""

import subprocess
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import parse_quorum_status, parse_replication


def _tool(module: AnsibleModule, *args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [f"{module.params['bin_dir']}/kafka-metadata-quorum", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, (proc.stdout if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()[-400:])


def _status(module: AnsibleModule) -> dict[str, Any] | None:
    rc, out = _tool(module, "--bootstrap-controller", module.params["bootstrap_controller"], "describe", "--status")
    if rc != 0:
        return None
    status = parse_quorum_status(out)
    return status if status["voters"] else None


def _result(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "voters": sorted(v["id"] for v in status["voters"]),
        "observers": sorted(o["id"] for o in status["observers"]),
        "leader_id": status["leader_id"],
        "directory_ids": {str(v["id"]): v["directory_id"] for v in status["voters"]},
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["describe", "present", "absent"], "default": "describe"},
            "bin_dir": {"type": "path", "default": "/usr/local/bin"},
            "bootstrap_controller": {"type": "str", "required": True},
            "node_id": {"type": "int"},
            "command_config": {"type": "path"},
            "lag_max": {"type": "int", "default": 100},
            "timeout": {"type": "int", "default": 300},
        },
        required_if=[("state", "present", ["node_id", "command_config"]), ("state", "absent", ["node_id"])],
        supports_check_mode=True,
    )
    p = module.params
    status = _status(module)
    if p["state"] == "describe":
        if status is None:
            module.exit_json(changed=False, msg="kafka-metadata-quorum describe --status failed or listed no voters")
            return
        module.exit_json(changed=False, **_result(status))
    if status is None:
        module.fail_json(
            msg=f"the controller quorum at {p['bootstrap_controller']} did not answer; nothing was changed"
        )
        return
    node_id = p["node_id"]
    voters = {v["id"]: v["directory_id"] for v in status["voters"]}
    if p["state"] == "present":
        if node_id in voters:
            module.exit_json(changed=False, waited=0.0, **_result(status))
        if module.check_mode:
            module.exit_json(changed=True, waited=0.0, **_result(status))
        start = time.monotonic()
        last = "it is not an observer yet"
        while True:
            rc, out = _tool(module, "--bootstrap-controller", p["bootstrap_controller"], "describe", "--replication")
            rows = {row.node_id: row for row in parse_replication(out)} if rc == 0 else {}
            leader = next((row for row in rows.values() if row.status == "Leader"), None)
            row = rows.get(node_id)
            if row is not None and leader is not None and row.status == "Observer" and row.lag <= p["lag_max"]:
                break
            if row is not None:
                last = f"it trails the leader by {row.lag} records ({row.status})"
            elif rc != 0:
                last = out
            if time.monotonic() - start > p["timeout"]:
                module.fail_json(
                    msg=f"node {node_id} did not catch up with the quorum within {p['timeout']} s ({last}); it was not "
                    "made a voter. Look at its log (journalctl) and run again."
                )
            time.sleep(2)
        waited = round(time.monotonic() - start, 1)
        rc, out = _tool(
            module,
            "--command-config",
            p["command_config"],
            "--bootstrap-controller",
            p["bootstrap_controller"],
            "add-controller",
        )
        if rc != 0 and "DuplicateVoterException" not in out:
            module.fail_json(msg=f"kafka-metadata-quorum add-controller failed (exit {rc}): {out}")
    else:
        if node_id not in voters:
            module.exit_json(changed=False, **_result(status))
        if len(voters) == 1:
            module.fail_json(msg=f"node {node_id} is the only voter: removing it leaves no quorum; nothing was changed")
        if module.check_mode:
            module.exit_json(changed=True, **_result(status))
        waited = 0.0
        rc, out = _tool(
            module,
            "--bootstrap-controller",
            p["bootstrap_controller"],
            "remove-controller",
            "--controller-id",
            str(node_id),
            "--controller-directory-id",
            voters[node_id],
        )
        if rc != 0 and "VoterNotFoundException" not in out:
            module.fail_json(msg=f"kafka-metadata-quorum remove-controller failed (exit {rc}): {out}")
    deadline = time.monotonic() + p["timeout"]
    while True:
        status = _status(module)
        if status is not None and (node_id in {v["id"] for v in status["voters"]}) == (p["state"] == "present"):
            module.exit_json(changed=True, waited=waited, **_result(status))
        if time.monotonic() > deadline:
            done = "added" if p["state"] == "present" else "removed"
            module.fail_json(msg=f"the quorum did not show node {node_id} {done} within {p['timeout']} s")
        time.sleep(2)


if __name__ == "__main__":
    main()
