#!/usr/bin/python
"""Ansible module: apply declared Kafka topics through the Admin API (kafka-python), on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_topics
short_description: Create, grow, configure or (when declared absent) delete Kafka topics
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Talks to the cluster through the Kafka Admin API with kafka-python, from wherever it runs
    (the role runs it on the controller).
  - >-
    Creates missing topics, adds partitions, sets declared topic configs (incrementally: undeclared
    configs are left alone) and deletes topics declared C(state=absent) only.
  - >-
    Refuses, before changing anything, to lower a partition count or change a replication factor,
    and any invalid declaration (name, replication factor above the broker count,
    min.insync.replicas above the replication factor, unknown config key).
  - Check mode reports the plan (and diff) after the broker validated it, without changing anything.
options:
  topics:
    description: Declared topics, each with name, partitions, replication_factor, configs, state.
    type: list
    elements: dict
    required: true
  bootstrap_servers:
    description: Comma-separated host:port list. Required unless static_check_only.
    type: str
  static_check_only:
    description: Only check the declaration itself (no connection), against I(broker_count).
    type: bool
    default: false
  broker_count:
    description: Number of brokers, for static_check_only.
    type: int
  known_configs:
    description: >-
      The topic configs the release knows (its LogConfig's list), for static_check_only; omitted,
      the config names are left to the broker.
    type: list
    elements: str
  client_config:
    description: >-
      Kafka client properties for the brokers (security.protocol SSL, the CA as a PEM trust store), as
      the kafka role writes them on the controller (kafka_cluster.client_config); empty, PLAINTEXT.
    type: path
    default: ""
  timeout:
    description: Seconds to wait for the cluster on each request.
    type: int
    default: 60
requirements: [kafka-python >= 3.0]
"""

EXAMPLES = r"""
- name: Apply the declared topics
  kafkalab.kafka.kafka_topics:
    topics:
      - {name: events, partitions: 6, replication_factor: 3, configs: {min.insync.replicas: "2"}}
    bootstrap_servers: kafka1:9092,kafka2:9092
    broker_count: 3
"""

RETURN = r"""
changes:
  description: One line per change made (or, in check mode, that would be made).
  returned: always
  type: list
  elements: str
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_topics_plan import check, describe, has_changes, plan

try:
    from kafka.admin import ConfigResource, KafkaAdminClient, NewPartitions

    HAS_KAFKA = True
except ImportError:  # reported through fail_json below
    HAS_KAFKA = False


def _current(admin: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """Partitions, replication factor and the topic's own configs, for the declared topics that exist."""
    existing = [n for n in names if n in set(admin.list_topics())]
    if not existing:
        return {}
    described = {t["name"]: t for t in admin.describe_topics(existing)}
    configs = admin.describe_configs([ConfigResource("topic", n) for n in existing])
    out = {}
    for name in existing:
        partitions = described[name]["partitions"]
        own = {
            key: data["value"]
            for key, data in configs.get("topic", {}).get(name, {}).items()
            if data.get("config_source") == "DYNAMIC_TOPIC_CONFIG"
        }
        out[name] = {
            "partitions": len(partitions),
            "replication_factor": max(len(p["replica_nodes"]) for p in partitions),
            "configs": own,
        }
    return out


def _known_topic_configs(admin: Any) -> set[str] | None:
    """Config names this cluster accepts for topics, read from any existing topic (None if there is none)."""
    topics = admin.list_topics()
    if not topics:
        return None
    described = admin.describe_configs([ConfigResource("topic", topics[0])], config_filter="all")
    return set(described.get("topic", {}).get(topics[0], {}))


def _as_text(topics: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name in sorted(topics):
        t = topics[name]
        lines.append(f"{name}: partitions={t['partitions']} replication_factor={t['replication_factor']}")
        lines += [f"  {k}={v}" for k, v in sorted(t["configs"].items())]
    return "\n".join(lines) + "\n"


def _apply(admin: Any, actions: dict[str, Any], validate_only: bool, timeout_ms: int) -> None:
    if actions["create"]:
        admin.create_topics(
            {
                t["name"]: {
                    "num_partitions": t["partitions"],
                    "replication_factor": t["replication_factor"],
                    "configs": t["configs"],
                }
                for t in actions["create"]
            },
            timeout_ms=timeout_ms,
            validate_only=validate_only,
        )
        if not validate_only:
            admin.wait_for_topics([t["name"] for t in actions["create"]], timeout_ms=timeout_ms)
    if actions["add_partitions"]:
        admin.create_partitions(
            {n: NewPartitions(total_count=new) for n, (_old, new) in actions["add_partitions"].items()},
            timeout_ms=timeout_ms,
            validate_only=validate_only,
        )
    if actions["set_configs"]:
        admin.alter_configs(
            [
                ConfigResource("topic", n, {k: new for k, (_old, new) in changes.items()})
                for n, changes in actions["set_configs"].items()
            ],
            validate_only=validate_only,
            incremental=True,
        )
    if actions["delete"] and not validate_only:
        admin.delete_topics(actions["delete"], timeout_ms=timeout_ms)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "topics": {"type": "list", "elements": "dict", "required": True},
            "bootstrap_servers": {"type": "str"},
            "static_check_only": {"type": "bool", "default": False},
            "broker_count": {"type": "int"},
            "known_configs": {"type": "list", "elements": "str"},
            "timeout": {"type": "int", "default": 60},
            "client_config": {"type": "path", "default": ""},
        },
        required_if=[("static_check_only", False, ["bootstrap_servers"])],
        supports_check_mode=True,
    )
    declared = module.params["topics"]
    if module.params["static_check_only"]:
        known = module.params["known_configs"]
        problems = check(declared, module.params["broker_count"], set(known) if known else None)
        if problems:
            module.fail_json(msg=["kafka_topics is invalid; nothing was changed.", *problems])
        module.exit_json(changed=False, changes=[])
    if not HAS_KAFKA:
        module.fail_json(msg="kafka-python is required on the host running this module (the controller).")

    timeout_ms = module.params["timeout"] * 1000
    try:
        # The project's one client-settings reader (TLS, the CA): this module runs on the controller, in its venv.
        from kafkalab import kafka_client

        security = kafka_client.settings(module.params["client_config"])
    except ImportError:
        if module.params["client_config"]:
            module.fail_json(msg="client_config needs the kafkalab package (the project's venv) on the controller.")
        security = {}
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    admin = KafkaAdminClient(
        **security,
        bootstrap_servers=module.params["bootstrap_servers"],
        client_id="ansible-kafka-topics",
        request_timeout_ms=timeout_ms,
    )
    try:
        broker_count = len(admin.describe_cluster()["brokers"])
        problems = check(declared, broker_count, _known_topic_configs(admin))
        if problems:
            module.fail_json(msg=["kafka_topics is invalid; nothing was changed.", *problems])
        names = [str(t["name"]) for t in declared]
        current = _current(admin, names)
        actions, refusals = plan(declared, current)
        if refusals:
            module.fail_json(msg=["kafka_topics asks for changes this role refuses; nothing was changed.", *refusals])
        changed = has_changes(actions)
        result: dict[str, Any] = {"changed": changed, "changes": describe(actions)}
        if module._diff and changed:
            after = {n: dict(v, configs=dict(v["configs"])) for n, v in current.items()}
            for t in actions["create"]:
                after[t["name"]] = {k: t[k] for k in ("partitions", "replication_factor", "configs")}
            for n, (_old, new) in actions["add_partitions"].items():
                after[n]["partitions"] = new
            for n, changes in actions["set_configs"].items():
                after[n]["configs"].update({k: new for k, (_old, new) in changes.items()})
            for n in actions["delete"]:
                after.pop(n, None)
            result["diff"] = {"before": _as_text(current), "after": _as_text(after)}
        if changed:
            try:
                # The broker validates the whole plan first, so a bad value stops the run unapplied.
                _apply(admin, actions, validate_only=True, timeout_ms=timeout_ms)
                if not module.check_mode:
                    _apply(admin, actions, validate_only=False, timeout_ms=timeout_ms)
            except Exception as exc:
                module.fail_json(msg=f"the cluster refused the change: {exc}", changes=result["changes"])
        module.exit_json(**result)
    finally:
        admin.close()


if __name__ == "__main__":
    main()
