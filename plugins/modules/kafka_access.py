#!/usr/bin/python
"""Ansible module: apply declared SCRAM users, ACLs and client quotas through the Admin API (kafka-python), on the
controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_access
short_description: Create, re-key or (when declared absent) delete SCRAM-SHA-512 users, add or remove ACLs, set quotas
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Logs in as the admin user (client_config) and talks to the cluster through the Kafka Admin API.
  - Users, ACLs and quota entities the inventory does not name are left alone.
  - >-
    Kafka keeps no password, only a salted key, so which password was set last is remembered in I(state_file)
    (a keyed hash per user, 0600): an unchanged password is not set again.
  - >-
    A quota entity the inventory declares present gets exactly the quotas it names (of producer_byte_rate,
    consumer_byte_rate, request_percentage, controller_mutation_rate): a key it no longer names is removed. One
    declared absent loses all four. Quotas need no SASL (client-id quotas work on any listener).
  - Check mode reports the plan (with --diff, each changed quota entity before and after) and sends no change.
options:
  users:
    description: Declared users by name, each with its state (present or absent); passwords are in I(passwords).
    type: dict
    default: {}
  passwords:
    description: Each present user's password, by name.
    type: dict
    default: {}
  acls:
    description: Declared ACLs, normalized (filter kafka_sasl_settings).
    type: list
    elements: dict
    default: []
  quotas:
    description: >-
      Declared client quotas, normalized (filter kafka_sasl_settings): user and client_id (a name, '<default>' or
      null), values (quota key to number) and state.
    type: list
    elements: dict
    default: []
  iterations:
    description: SCRAM iterations for the users this module sets.
    type: int
    default: 8192
  state_file:
    description: Where the marks of the passwords last set are kept (written 0600); needed when I(users) names any.
    type: path
    default: ""
  bootstrap_servers:
    description: Comma-separated host:port list.
    type: str
    required: true
  client_config:
    description: >-
      Kafka client properties with the admin user's login (kafka_cluster.client_config); empty, PLAINTEXT (quotas
      only: users and ACLs need a SASL_SSL listener).
    type: path
    default: ""
  timeout:
    description: Seconds to wait for the cluster on each request.
    type: int
    default: 60
requirements: [kafka-python >= 3.0]
"""

EXAMPLES = r"""
- name: Apply the declared SCRAM users and ACLs
  kafkalab.kafka.kafka_access:
    users: {app: {state: present}, retired: {state: absent}}
    passwords: {app: "{{ vault_app_password }}"}
    acls:
      - {principal: "User:app", resource_type: topic, resource_name: events, pattern_type: literal,
         operation: write, permission_type: allow, host: "*", state: present}
    quotas:
      - {user: app, client_id: null, values: {producer_byte_rate: 1048576}, state: present}
    state_file: /home/ops/.pki/scram-users.json
    bootstrap_servers: kafka1:9093,kafka2:9093
    client_config: /home/ops/.pki/admin-client.properties
"""

RETURN = r"""
changes:
  description: One line per change made (or, in check mode, that would be made). Never a password.
  returned: always
  type: list
  elements: str
diff:
  description: With --diff, the changed quota entities' quotas before and after, one line per key.
  returned: when quotas change and diff mode is on
  type: dict
"""

import json
import os
import secrets
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import (
    EntityKey,
    describe,
    describe_quotas,
    entity_label,
    password_mark,
    plan_acls,
    plan_quotas,
    plan_users,
    quotas_diff,
)

try:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    from kafka.errors import for_code
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

    HAS_KAFKA = True
except ImportError:  # reported through fail_json below
    HAS_KAFKA = False


def _read_state(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        if isinstance(state, dict) and isinstance(state.get("key"), str) and isinstance(state.get("users"), dict):
            return state
    except (OSError, ValueError):
        pass
    # No marks (first run, or the file was lost): every present user's password is set once more.
    return {"key": secrets.token_hex(32), "users": {}}


def _write_state(path: str, state: dict[str, Any]) -> None:
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".scram-users.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _current_users(admin: Any) -> dict[str, dict[str, int]]:
    described = admin.describe_user_scram_credentials()
    return {
        name: {
            str(info["mechanism"].name).replace("_", "-"): int(info["iterations"]) for info in entry["credential_infos"]
        }
        for name, entry in described.items()
        if not entry.get("error")
    }


def _acl_fields(acl: Any) -> dict[str, str]:
    pattern = acl.resource_pattern
    return {
        "principal": acl.principal,
        "resource_type": pattern.resource_type.name.lower(),
        "name": pattern.resource_name,
        "pattern_type": pattern.pattern_type.name.lower(),
        "operation": acl.operation.name.lower(),
        "permission": acl.permission_type.name.lower(),
        "host": acl.host,
    }


def _kafka_acl(acl: dict[str, str]) -> Any:
    return ACL(
        principal=acl["principal"],
        host=acl["host"],
        operation=ACLOperation[acl["operation"].upper()],
        permission_type=ACLPermissionType[acl["permission"].upper()],
        resource_pattern=ResourcePattern(
            ResourceType[acl["resource_type"].upper()],
            acl["name"],
            ACLResourcePatternType[acl["pattern_type"].upper()],
        ),
    )


def _current_acls(admin: Any) -> list[dict[str, str]]:
    everything = ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    acls, error = admin.describe_acls(everything)
    if error is not None and getattr(error, "errno", None):
        raise RuntimeError(f"describing the ACLs failed: {error.__name__ if isinstance(error, type) else error}")
    return [_acl_fields(acl) for acl in acls]


# kafka-python 3.0 has no client-quota methods on its admin client, only the protocol messages: they are sent the way
# its own admin methods send theirs (kafka/admin/_acls.py), to the least loaded broker (which forwards an alteration
# to the KRaft controllers).
def _send(admin: Any, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def _kafka_error(code: int, message: str | None) -> str:
    name = for_code(code).__name__
    return f"{name}: {message}" if message else name


def _entity_key(entities: Any) -> EntityKey:
    return tuple(sorted((str(e.entity_type), None if e.entity_name is None else str(e.entity_name)) for e in entities))


def _current_quotas(admin: Any) -> dict[EntityKey, dict[str, float]]:
    """Every quota entity the cluster holds (no component and not strict: all of them, in one request)."""
    response = _send(admin, DescribeClientQuotasRequest(components=[], strict=False))
    if response.error_code:
        raise RuntimeError(
            f"describing the client quotas failed: {_kafka_error(response.error_code, response.error_message)}"
        )
    return {
        _entity_key(entry.entity): {str(v.key): float(v.value) for v in entry.values}
        for entry in response.entries or []
    }


def _alter_quotas(admin: Any, changes: list[dict[str, Any]]) -> list[str]:
    """One AlterClientQuotas request with every changed entity; what the cluster refused, by entity."""
    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        entries=[
            entry(
                entity=[entry.EntityData(entity_type=e["type"], entity_name=e["name"]) for e in change["entity"]],
                ops=[entry.OpData(key=k, value=float(v), remove=False) for k, v in change["set"].items()]
                + [entry.OpData(key=k, value=0.0, remove=True) for k in change["remove"]],
            )
            for change in changes
        ],
        validate_only=False,
    )
    response = _send(admin, request)
    return [
        f"{entity_label(_entity_key(e.entity))}: {_kafka_error(e.error_code, e.error_message)}"
        for e in response.entries
        if e.error_code
    ]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "users": {"type": "dict", "default": {}},
            # no_log: Ansible masks these values wherever they would show (a dict's keys, the names, are not).
            "passwords": {"type": "dict", "default": {}, "no_log": True},
            "acls": {"type": "list", "elements": "dict", "default": []},
            "quotas": {"type": "list", "elements": "dict", "default": []},
            "iterations": {"type": "int", "default": 8192},
            "state_file": {"type": "path", "default": ""},
            "bootstrap_servers": {"type": "str", "required": True},
            "client_config": {"type": "path", "default": ""},
            "timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )
    if not HAS_KAFKA:
        module.fail_json(msg="kafka-python is required on the host running this module (the controller).")
    params = module.params
    declared = [
        {
            "name": name,
            "state": str((user or {}).get("state") or "present"),
            "password": params["passwords"].get(name, ""),
        }
        for name, user in sorted(params["users"].items())
    ]
    if declared and not params["state_file"]:
        module.fail_json(msg="users are declared, but state_file is empty: name the file of the passwords' marks.")
    try:
        from kafkalab import kafka_client

        security = kafka_client.settings(params["client_config"])
    except ImportError:
        if params["client_config"]:
            module.fail_json(msg="client_config needs the kafkalab package (the project's venv) on the controller.")
        security = {}
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    timeout_ms = params["timeout"] * 1000
    try:
        admin = KafkaAdminClient(
            **security,
            bootstrap_servers=params["bootstrap_servers"],
            client_id="ansible-kafka-access",
            request_timeout_ms=timeout_ms,
        )
    except Exception as exc:
        login = f" and log in as {security['sasl_plain_username']}" if security.get("sasl_plain_username") else ""
        module.fail_json(
            msg=f"could not reach {params['bootstrap_servers']}{login} "
            f"({type(exc).__name__}: {exc}). A refused login looks like this too: a new kafka_admin_user password "
            "reaches the cluster through the kafka role (playbooks/kafka.yml or site.yml, before this play), not "
            "through this one alone. Nothing was changed."
        )
    try:
        state = _read_state(params["state_file"])
        current_users = _current_users(admin) if declared else {}
        users = plan_users(declared, current_users, state["users"], state["key"], params["iterations"])
        acls = plan_acls(params["acls"], _current_acls(admin) if params["acls"] else [])
        quotas = plan_quotas(params["quotas"], _current_quotas(admin) if params["quotas"] else {})
        changes = describe(users, acls) + describe_quotas(quotas)
        result: dict[str, Any] = {"changed": bool(changes), "changes": changes}
        if quotas and module._diff:
            result["diff"] = quotas_diff(quotas)
        if changes and not module.check_mode:
            by_name = {u["name"]: u for u in declared}
            alterations = [
                UserScramCredentialUpsertion(
                    name, ScramMechanism.SCRAM_SHA_512, str(by_name[name]["password"]), params["iterations"]
                )
                for name in users["create"] + users["update"]
            ] + [UserScramCredentialDeletion(name, ScramMechanism.SCRAM_SHA_512) for name in users["delete"]]
            if alterations:
                errors = {n: e for n, e in admin.alter_user_scram_credentials(alterations).items() if e}
                if errors:
                    module.fail_json(msg=f"the cluster refused to change user(s): {errors}", changes=changes)
                for name in users["create"] + users["update"]:
                    state["users"][name] = password_mark(state["key"], name, str(by_name[name]["password"]))
                for name in users["delete"]:
                    state["users"].pop(name, None)
                _write_state(params["state_file"], state)
            if acls["create"]:
                created = admin.create_acls([_kafka_acl(a) for a in acls["create"]])
                if created.get("failed"):
                    module.fail_json(msg=f"the cluster refused ACL(s): {created['failed']}", changes=changes)
            for acl in acls["delete"]:
                for _acl_filter, _acls, error in admin.delete_acls([_kafka_acl(acl)]):
                    if error is not None and getattr(error, "errno", None):
                        module.fail_json(msg=f"the cluster refused to remove an ACL: {error}", changes=changes)
            if quotas:
                refused = _alter_quotas(admin, quotas)
                if refused:
                    module.fail_json(msg=f"the cluster refused quota change(s): {'; '.join(refused)}", changes=changes)
        module.exit_json(**result)
    except Exception as exc:
        module.fail_json(msg=f"applying the users, ACLs and quotas failed: {type(exc).__name__}: {exc}")
    finally:
        admin.close()


if __name__ == "__main__":
    main()
