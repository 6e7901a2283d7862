#!/usr/bin/python
"""Ansible module: apply a broker's run-time changeable properties without a restart (kafka-configs)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_dynamic_configs
short_description: Make a running broker use the dynamic properties its server.properties declares
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Reads the broker's effective configuration (C(kafka-configs --describe --all)) and sets, as per-broker
    dynamic configs, the declared properties whose effective value differs; deletes the per-broker
    dynamic configs this module set before and that are no longer declared.
  - >-
    Only properties Kafka marks as changeable at run time belong in I(configs) (the kafka role takes them
    from the release's own broker config reference); a restart applies the rest.
  - >-
    The names in I(cluster_level) are set as the cluster-wide default (C(--entity-default)), never per broker:
    with eligible leader replicas on (KRaft, the default since 4.1) Kafka refuses a per-broker
    min.insync.replicas and keeps one cluster-level value, seeded once from the active controller's static
    config. A per-broker override of such a name that this module set before is deleted.
  - Check mode and diff show the changes without making them.
extends_documentation_fragment:
  - kafkalab.kafka.kafka_tools
options:
  node_id:
    description: "The broker's node.id (broker.id)."
    type: int
    required: true
  configs:
    description: Declared dynamic properties (name -> value as written to server.properties).
    type: dict
    required: true
  bootstrap_server:
    description: "Where kafka-configs connects."
    type: str
    required: true
  state_file:
    description: "The names this module manages on this broker (root-only JSON)."
    type: path
    required: true
  cluster_level:
    description: Names set as the cluster-wide default instead of per broker.
    type: list
    elements: str
    default: [min.insync.replicas]
"""

EXAMPLES = r"""
- name: Make the running broker use its declared dynamic properties
  kafkalab.kafka.kafka_dynamic_configs:
    node_id: 1
    configs: {log.retention.ms: "604800000", min.insync.replicas: "2"}
    bootstrap_server: kafka1:9092
    state_file: /var/lib/kafkalab/restart/kafka.dynamic.json
"""

RETURN = r"""
set:
  description: Properties set on this broker (name -> value).
  returned: always
  type: dict
set_cluster_default:
  description: Properties set as the cluster-wide default (name -> value).
  returned: always
  type: dict
deleted:
  description: Per-broker dynamic properties deleted (no longer declared).
  returned: always
  type: list
"""

import json
import os
import re
import tempfile
from collections.abc import Collection
from typing import Any

from ansible.module_utils.basic import AnsibleModule

# "  log.retention.ms=604800000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=..., ...}"
_ENTRY = re.compile(
    r"^\s+(?P<name>[A-Za-z0-9._-]+)=(?P<value>.*?) sensitive=(?P<sensitive>true|false)"
    r" synonyms=\{(?P<synonyms>.*)\}\s*$"
)


def parse_describe(text: str) -> dict[str, dict[str, Any]]:
    """name -> {value, sensitive, per_broker (a per-broker dynamic config is set)} from `--describe --all`."""
    entries: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        match = _ENTRY.match(line)
        if match:
            entries[match["name"]] = {
                "value": match["value"],
                "sensitive": match["sensitive"] == "true",
                "per_broker": f"DYNAMIC_BROKER_CONFIG:{match['name']}=" in match["synonyms"],
            }
    return entries


def plan(
    declared: dict[str, str],
    effective: dict[str, dict[str, Any]],
    managed: list[str],
    cluster_level: Collection[str] = (),
) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """(to set on the broker, to delete from the broker, to set as the cluster default): declared values the
    broker does not use, split by where they are set; managed per-broker overrides no longer declared, or of
    a cluster-level name (they would shadow the cluster default)."""
    differs = {
        name: value
        for name, value in sorted(declared.items())
        if name not in effective or (not effective[name]["sensitive"] and effective[name]["value"] != value)
    }
    to_set = {name: value for name, value in differs.items() if name not in cluster_level}
    to_delete = sorted(
        name
        for name in managed
        if (name not in declared or name in cluster_level) and effective.get(name, {}).get("per_broker")
    )
    # A cluster-level name whose per-broker override goes: the cluster default takes over, so set it too.
    to_default = {
        name: value
        for name, value in sorted(declared.items())
        if name in cluster_level and (name in differs or name in to_delete)
    }
    return to_set, to_delete, to_default


def _load_managed(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return [str(name) for name in data] if isinstance(data, list) else []
    except (FileNotFoundError, ValueError):
        return []


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "node_id": {"type": "int", "required": True},
            "configs": {"type": "dict", "required": True},
            "bootstrap_server": {"type": "str", "required": True},
            "bin_dir": {"type": "path", "default": "/usr/local/bin"},
            "state_file": {"type": "path", "required": True},
            "cluster_level": {"type": "list", "elements": "str", "default": ["min.insync.replicas"]},
        },
        supports_check_mode=True,
    )
    p = module.params
    declared = {str(k): ("true" if v is True else "false" if v is False else str(v)) for k, v in p["configs"].items()}
    tool = f"{p['bin_dir']}/kafka-configs"
    brokers = [tool, "--bootstrap-server", p["bootstrap_server"], "--entity-type", "brokers"]
    base = [*brokers, "--entity-name", str(p["node_id"])]
    rc, out, err = module.run_command([*base, "--describe", "--all"])
    if rc != 0:
        module.fail_json(
            msg=f"kafka-configs --describe for broker {p['node_id']} failed (exit {rc}): {(err or out).strip()[-400:]}"
        )
    managed = _load_managed(p["state_file"])
    effective = parse_describe(out)
    to_set, to_delete, to_default = plan(declared, effective, managed, p["cluster_level"])
    changed = bool(to_set or to_delete or to_default)
    after = {**to_set, **to_default}
    diff = {
        "before": "".join(
            f"{n}={effective.get(n, {}).get('value', '(unset)')}\n"
            for n in sorted(set(to_set) | set(to_delete) | set(to_default))
        ),
        "after": "".join(f"{n}={after[n]}\n" for n in sorted(after)),
    }
    if changed and not module.check_mode:
        if to_default:
            pairs = ",".join(f"{n}={v}" for n, v in to_default.items())
            rc, out, err = module.run_command([*brokers, "--entity-default", "--alter", "--add-config", pairs])
            if rc != 0:
                module.fail_json(
                    msg=f"kafka-configs --alter of the cluster default refused {sorted(to_default)} (exit {rc}): "
                    f"{(err or out).strip()[-400:]}"
                )
        if to_set:
            with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False, encoding="utf-8") as handle:
                handle.write("".join(f"{n}={v}\n" for n, v in to_set.items()))
                path = handle.name
            try:
                rc, out, err = module.run_command([*base, "--alter", "--add-config-file", path])
            finally:
                os.unlink(path)
            if rc != 0:
                module.fail_json(
                    msg=f"kafka-configs --alter for broker {p['node_id']} refused {sorted(to_set)} (exit {rc}): "
                    f"{(err or out).strip()[-400:]}"
                )
        if to_delete:
            rc, out, err = module.run_command([*base, "--alter", "--delete-config", ",".join(to_delete)])
            if rc != 0:
                module.fail_json(
                    msg=f"kafka-configs --delete-config for broker {p['node_id']} failed (exit {rc}): "
                    f"{(err or out).strip()[-400:]}"
                )
    wanted_managed = sorted(set(declared))
    if wanted_managed != sorted(managed) and not module.check_mode:
        os.makedirs(os.path.dirname(p["state_file"]), mode=0o700, exist_ok=True)
        with open(p["state_file"], "w", encoding="utf-8") as handle:
            json.dump(wanted_managed, handle)
        os.chmod(p["state_file"], 0o600)
    module.exit_json(changed=changed, set=to_set, set_cluster_default=to_default, deleted=to_delete, diff=diff)


if __name__ == "__main__":
    main()
