#!/usr/bin/python
"""Ansible module: apply declared SCRAM users and ACLs through the Admin API (kafka-python), on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_access
short_description: Create, re-key or (when declared absent) delete SCRAM-SHA-512 users, and add or remove ACLs
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Logs in as the admin user (client_config) and talks to the cluster through the Kafka Admin API.
  - Users the inventory does not name, and ACLs it does not name, are left alone.
  - >-
    Kafka keeps no password, only a salted key, so which password was set last is remembered in I(state_file)
    (a keyed hash per user, 0600): an unchanged password is not set again.
  - Check mode reports the plan without changing anything.
options:
  users:
    description: Declared users by name, each with its state (present or absent); passwords are in I(passwords).
    type: dict
    required: true
  passwords:
    description: Each present user's password, by name.
    type: dict
    required: true
  acls:
    description: Declared ACLs, normalized (filter kafka_sasl_settings).
    type: list
    elements: dict
    default: []
  iterations:
    description: SCRAM iterations for the users this module sets.
    type: int
    default: 8192
  state_file:
    description: Where the marks of the passwords last set are kept (written 0600).
    type: path
    required: true
  bootstrap_servers:
    description: Comma-separated host:port list.
    type: str
    required: true
  client_config:
    description: Kafka client properties with the admin user's login (kafka_cluster.client_config).
    type: path
    required: true
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
"""

import json
import os
import secrets
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import (
    describe,
    password_mark,
    plan_acls,
    plan_users,
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


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "users": {"type": "dict", "required": True},
            # no_log: Ansible masks these values wherever they would show (a dict's keys, the names, are not).
            "passwords": {"type": "dict", "required": True, "no_log": True},
            "acls": {"type": "list", "elements": "dict", "default": []},
            "iterations": {"type": "int", "default": 8192},
            "state_file": {"type": "path", "required": True},
            "bootstrap_servers": {"type": "str", "required": True},
            "client_config": {"type": "path", "required": True},
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
    try:
        from kafkalab import kafka_client

        security = kafka_client.settings(params["client_config"])
    except ImportError:
        module.fail_json(msg="client_config needs the kafkalab package (the project's venv) on the controller.")
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
        module.fail_json(
            msg=f"could not reach {params['bootstrap_servers']} and log in as {security.get('sasl_plain_username')} "
            f"({type(exc).__name__}: {exc}). A refused login looks like this too: a new kafka_admin_user password "
            "reaches the cluster through the kafka role (playbooks/kafka.yml or site.yml, before this play), not "
            "through this one alone. Nothing was changed."
        )
    try:
        state = _read_state(params["state_file"])
        users = plan_users(declared, _current_users(admin), state["users"], state["key"], params["iterations"])
        acls = plan_acls(params["acls"], _current_acls(admin) if params["acls"] else [])
        changes = describe(users, acls)
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
        module.exit_json(changed=bool(changes), changes=changes)
    except Exception as exc:
        module.fail_json(msg=f"applying the users and ACLs failed: {type(exc).__name__}: {exc}")
    finally:
        admin.close()


if __name__ == "__main__":
    main()
