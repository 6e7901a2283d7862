#!/usr/bin/python
"""Ansible module: where a ZooKeeper -> KRaft migration stands, asked of ZooKeeper and of the nodes."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_migration_state
short_description: Find the phase of a ZooKeeper -> KRaft migration, wait for the next one, or clear it
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Runs on a node with Kafka 3.9's zookeeper-shell. Reads /cluster/id, /brokers/ids (the brokers running in
    ZooKeeper mode), /controller (claimed by a KRaft controller during the migration) and /migration (its
    kraft_metadata_offset is set once the active controller has copied the metadata), and combines them with
    what each node is configured to run (I(properties)) into the furthest phase reached, and the problems that
    refuse the run (a cluster that is already KRaft, finalizing too early, rolling back a finalized one).
  - C(wait_for=migrated) waits until the metadata is migrated; C(wait_for=brokers_gone) until no broker is
    registered in ZooKeeper any more (every broker runs KRaft). Read-only, runs in check mode.
  - C(clear=true) (rollback_to_zookeeper.yml, after the controllers are stopped) deletes /controller when a
    KRaft controller holds it and /migration, as Kafka's rollback steps say, so a broker becomes the
    controller again and a later migration starts afresh.
extends_documentation_fragment:
  - kafkalab.kafka.kafka_tools
options:
  zookeeper_connect:
    description: "The ZooKeeper connect string."
    type: str
    required: true
  properties:
    description: "'Each node''s server.properties text (null: none yet).'"
    type: dict
    default: {}
  brokers:
    description: "The broker hosts."
    type: list
    elements: str
    default: []
  controllers:
    description: "The controller hosts."
    type: list
    elements: str
    default: []
  disk_cluster_ids:
    description: Cluster ids in the brokers' meta.properties.
    type: list
    elements: str
    default: []
  target:
    description: "migrate or rollback."
    type: str
    choices: [migrate, rollback]
    default: migrate
  finalize:
    description: "The run is to finalize the migration."
    type: bool
    default: false
  wait_for:
    description: none, migrated or brokers_gone.
    type: str
    default: none
    choices: [none, migrated, brokers_gone]
  timeout:
    description: "Seconds to wait."
    type: int
    default: 300
  clear:
    description: "Delete a KRaft controller's /controller and /migration."
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read where a ZooKeeper -> KRaft migration stands
  kafkalab.kafka.kafka_migration_state:
    zookeeper_connect: zk1:2181,zk2:2181,zk3:2181
    properties: {kafka1: "{{ lookup('ansible.builtin.file', 'kafka1.properties') }}"}
    brokers: [kafka1]
    controllers: [kraft1]
    disk_cluster_ids: []
  register: migration
"""

RETURN = r"""
phase:
  description: zookeeper, controllers, brokers_migration, brokers_kraft or finalized.
  returned: always
  type: str
problems: {description: Why the run must not go on (empty when it may)., returned: always, type: list}
summary: {description: One line for the operator., returned: always, type: str}
zookeeper:
  description: What ZooKeeper holds (cluster_id, brokers, controller, migration).
  returned: always
  type: dict
"""

import re
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_health import (
    migration_state,
    parse_zookeeper_ids,
    parse_zookeeper_json,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage

ABSENT = re.compile(r"Node does not exist|NoNodeException")


def _shell(module: AnsibleModule, *args: str) -> tuple[str, bool]:
    """(output, the znode exists); fails the module when ZooKeeper cannot be asked."""
    cmd = [f"{module.params['bin_dir']}/zookeeper-shell", module.params["zookeeper_connect"], *args]
    rc, out, err = module.run_command(cmd)
    text = f"{out}\n{err}"
    if ABSENT.search(text):
        return text, False
    if rc != 0:
        module.fail_json(msg=f"zookeeper-shell {' '.join(args)} failed (exit {rc}): {text.strip()[-400:]}")
    return text, True


def read_zookeeper(module: AnsibleModule) -> dict[str, Any]:
    """The znodes the migration leaves its traces in."""
    zk: dict[str, Any] = {}
    out, found = _shell(module, "get", "/cluster/id")
    zk["cluster_id"] = (parse_zookeeper_json(out) or {}).get("id") if found else None
    out, found = _shell(module, "ls", "/brokers/ids")
    zk["brokers"] = parse_zookeeper_ids(out) if found else []
    out, found = _shell(module, "get", "/controller")
    zk["controller"] = parse_zookeeper_json(out) if found else None
    out, found = _shell(module, "get", "/migration")
    zk["migration"] = parse_zookeeper_json(out) if found else None
    return zk


def kraft_claim(zk: dict[str, Any]) -> bool:
    """A KRaft controller, not a broker, holds /controller."""
    return int((zk.get("controller") or {}).get("kraftControllerEpoch", -1)) >= 0


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "bin_dir": {"type": "path", "default": "/usr/local/bin"},
            "zookeeper_connect": {"type": "str", "required": True},
            "properties": {"type": "dict", "default": {}},
            "brokers": {"type": "list", "elements": "str", "default": []},
            "controllers": {"type": "list", "elements": "str", "default": []},
            "disk_cluster_ids": {"type": "list", "elements": "str", "default": []},
            "target": {"type": "str", "choices": ["migrate", "rollback"], "default": "migrate"},
            "finalize": {"type": "bool", "default": False},
            "wait_for": {"type": "str", "choices": ["none", "migrated", "brokers_gone"], "default": "none"},
            "timeout": {"type": "int", "default": 300},
            "clear": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    changed = False
    if p["clear"]:
        zk = read_zookeeper(module)
        removed = []
        if kraft_claim(zk):
            removed.append("/controller")
        if zk["migration"] is not None:
            removed.append("/migration")
        if removed and not module.check_mode:
            for path in removed:
                _shell(module, "deleteall", path)
        changed = bool(removed)
    started = time.monotonic()
    while True:
        zk = read_zookeeper(module)
        migrated = int((zk.get("migration") or {}).get("kraft_metadata_offset", -1)) >= 0
        done = {"none": True, "migrated": migrated, "brokers_gone": not zk["brokers"]}[p["wait_for"]]
        if done or module.check_mode or time.monotonic() - started >= p["timeout"]:
            break
        time.sleep(3)
    stages = {host: kafka_stage(text) for host, text in p["properties"].items()}
    state = migration_state(
        zk, stages, p["brokers"], p["controllers"], p["disk_cluster_ids"], p["target"], p["finalize"]
    )
    result = {
        "changed": changed,
        "phase": state.phase,
        "problems": state.problems,
        "summary": state.summary,
        "zookeeper": zk,
        "waited": round(time.monotonic() - started, 1),
    }
    if not done and not module.check_mode:
        what = {
            "migrated": "the active KRaft controller to copy the metadata from ZooKeeper (/migration "
            "kraft_metadata_offset stays -1: are all brokers registered in migration mode? see the active "
            "controller's log for 'Completed migration of metadata')",
            "brokers_gone": f"every broker to leave ZooKeeper (still registered: {zk['brokers']})",
        }[p["wait_for"]]
        module.fail_json(msg=f"waited {result['waited']:.0f} s for {what}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
