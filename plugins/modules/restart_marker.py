#!/usr/bin/python
"""Ansible module: the persistent "restart pending" marker of a service (Kafka, ZooKeeper, the Spark job)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: restart_marker
short_description: Record what a service runs, and whether it must restart
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Fingerprints the inputs a service reads at start (config files, named values such as the release
    directory) and compares them with the fingerprint recorded when it last started (the applied file).
  - C(state=check) writes C(<state_dir>/<name>.pending) when they differ, so a run that dies before the
    restart leaves the restart visible, and the next run (which finds the same difference) finishes it.
    It removes a pending file whose inputs are back to what runs, unless an operator requested the restart.
  - C(state=requested) marks a restart an operator asked for (rolling_restart.yml), which stays pending until
    C(state=applied).
  - C(state=applied) records the inputs as what the service now runs and removes the pending file; call it
    only after the service (re)started and passed its health gate.
  - C(state=absent) forgets the service (both files), for a node that stops running it (a rolled-back
    migration's controllers).
  - Check mode reports without writing.
options:
  name:
    description: The service's name, used for the state file names.
    type: str
    required: true
  state:
    description: check, requested, applied or absent.
    type: str
    choices: [check, requested, applied, absent]
    default: check
  files:
    description: Files the service reads at start. A missing file is an input too (its absence).
    type: list
    elements: str
    default: []
  ignore_keys:
    description: Per file, properties keys applied at run time (not through a restart); left out of its fingerprint.
    type: dict
    default: {}
  values:
    description: Other inputs (name -> any JSON value), for example the release directory.
    type: dict
    default: {}
  state_dir:
    description: Where the applied and pending files live (root-only).
    type: path
    default: /var/lib/kafkalab/restart
"""

EXAMPLES = r"""
- name: Record whether the service must restart
  kafkalab.kafka.restart_marker:
    name: kafka
    files: [/etc/kafka/server.properties]
    values: {heap: 1g}
  register: pending
"""

RETURN = r"""
pending:
  description: Whether the service must restart.
  returned: always
  type: bool
reasons:
  description: The inputs that differ from what runs, and "requested" for an operator's request.
  returned: always
  type: list
  elements: str
"""

import json
import os
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.restart_state import (
    REQUESTED,
    file_digest,
    load_json,
    pending_reasons,
    value_digest,
)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _current(files: list[str], ignore_keys: dict[str, list[str]], values: dict[str, Any]) -> dict[str, str]:
    digests: dict[str, str] = {}
    for path in files:
        try:
            with open(path, "rb") as handle:
                digests[f"file:{path}"] = file_digest(path, handle.read(), ignore_keys.get(path, []))
        except FileNotFoundError:
            digests[f"file:{path}"] = "missing"
    for name, value in values.items():
        digests[f"value:{name}"] = value_digest(value)
    return digests


def _write(module: AnsibleModule, path: str, data: Any) -> None:
    """Atomically, root-only: a run killed mid-write leaves the old file or the new one, never half."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o600)
    module.atomic_move(tmp, path)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["check", "requested", "applied", "absent"], "default": "check"},
            "files": {"type": "list", "elements": "str", "default": []},
            "ignore_keys": {"type": "dict", "default": {}, "no_log": False},
            "values": {"type": "dict", "default": {}},
            "state_dir": {"type": "path", "default": "/var/lib/kafkalab/restart"},
        },
        supports_check_mode=True,
    )
    params = module.params
    applied_path = os.path.join(params["state_dir"], f"{params['name']}.applied")
    pending_path = os.path.join(params["state_dir"], f"{params['name']}.pending")
    current = _current(params["files"], params["ignore_keys"], params["values"])
    applied = load_json(_read(applied_path))
    pending = load_json(_read(pending_path))
    changed = False

    if params["state"] == "absent":
        gone = [path for path in (applied_path, pending_path) if os.path.exists(path)]
        if gone and not module.check_mode:
            for path in gone:
                os.unlink(path)
        module.exit_json(changed=bool(gone), pending=False, reasons=[])

    if params["state"] == "applied":
        reasons: list[str] = []
        if applied != current or pending is not None:
            changed = True
            if not module.check_mode:
                _write(module, applied_path, current)
                if os.path.exists(pending_path):
                    os.unlink(pending_path)
        module.exit_json(changed=changed, pending=False, reasons=reasons)

    reasons = pending_reasons(applied, current, pending)
    if params["state"] == "requested" and REQUESTED not in reasons:
        reasons.append(REQUESTED)
    if reasons:
        wanted = {
            "reasons": reasons,
            "since": (pending or {}).get("since") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if pending != wanted:
            changed = True
            if not module.check_mode:
                _write(module, pending_path, wanted)
    elif pending is not None:
        changed = True
        if not module.check_mode:
            os.unlink(pending_path)
    module.exit_json(changed=changed, pending=bool(reasons), reasons=reasons)


if __name__ == "__main__":
    main()
