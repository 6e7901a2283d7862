#!/usr/bin/python
"""Ansible module: give the admin user the password the inventory names, logging in with the one it had."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_admin_password
short_description: Change the SCRAM-SHA-512 admin user's password on a running cluster, before its settings change
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    The admin's login is in settings files the kafka role writes (the controller machine's client settings, the
    nodes' admin tools). Kafka keeps only a salted key, so the password those files hold now is the one to log in
    with; this module logs in with it and sets the new one, before the role rewrites the files.
  - Nothing to do when I(client_config) is missing (no cluster yet) or already holds I(password).
  - >-
    A run stopped after the change and before the files were rewritten leaves a cluster that refuses the old
    password: the module then logs in with the new one, finds the change made, and reports no change.
  - Check mode logs in with the old password and reports the change without making it.
options:
  user:
    description: The admin user (kafka_admin_user).
    type: str
    required: true
  password:
    description: The password kafka_users gives it.
    type: str
    required: true
  iterations:
    description: SCRAM iterations of the new credential.
    type: int
    default: 8192
  bootstrap_servers:
    description: A SASL_SSL listener's bootstrap servers, reachable from the controller machine.
    type: str
    required: true
  client_config:
    description: That listener's client settings on the controller machine, with the admin's login as it is now.
    type: path
    required: true
  timeout:
    description: Seconds to wait for the cluster on each request.
    type: int
    default: 30
requirements: [kafka-python >= 3.0]
"""

EXAMPLES = r"""
- name: Set the admin's new password before the settings files change
  kafkalab.kafka.kafka_admin_password:
    user: admin
    password: "{{ vault_admin_password }}"
    bootstrap_servers: kafka1:9093
    client_config: /home/ops/.pki/admin-client.properties
  delegate_to: localhost
"""

RETURN = r"""
msg:
  description: What was found and done. Never a password.
  returned: always
  type: str
"""

import os
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

try:
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion

    HAS_KAFKA = True
except ImportError:  # reported through fail_json below
    HAS_KAFKA = False


def _admin(settings: dict[str, Any], password: str, bootstrap: str, timeout_ms: int) -> Any:
    """An Admin API client logged in with `password`, or None when the cluster refuses it (or cannot be reached)."""
    try:
        return KafkaAdminClient(
            **(settings | {"sasl_plain_password": password}),
            bootstrap_servers=bootstrap,
            client_id="ansible-kafka-admin-password",
            request_timeout_ms=timeout_ms,
            bootstrap_timeout_ms=timeout_ms,
        )
    except Exception:  # kafka-python reports a refused login as a failed bootstrap, like an unreachable cluster
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "user": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "iterations": {"type": "int", "default": 8192},
            "bootstrap_servers": {"type": "str", "required": True},
            "client_config": {"type": "path", "required": True},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not os.path.exists(params["client_config"]):
        module.exit_json(changed=False, msg=f"{params['client_config']} does not exist yet: no login to change.")
    if not HAS_KAFKA:
        module.fail_json(msg="kafka-python is required on the host running this module (the controller).")
    try:
        from kafkalab import kafka_client

        settings = kafka_client.settings(params["client_config"])
    except ImportError:
        module.fail_json(msg="client_config needs the kafkalab package (the project's venv) on the controller.")
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    user, new = params["user"], params["password"]
    if settings.get("sasl_plain_username") != user:
        module.exit_json(changed=False, msg=f"{params['client_config']} logs in as another user: not the admin's.")
    old = str(settings.get("sasl_plain_password") or "")
    if old == new:
        module.exit_json(changed=False, msg=f"the admin's login in {params['client_config']} is the inventory's.")
    timeout_ms = params["timeout"] * 1000
    admin = _admin(settings, old, params["bootstrap_servers"], timeout_ms)
    if admin is None:
        # Changed by a run that stopped before it rewrote the settings files: the new password logs in.
        again = _admin(settings, new, params["bootstrap_servers"], timeout_ms)
        if again is not None:
            again.close()
            module.exit_json(changed=False, msg=f"{user} already logs in with the inventory's password.")
        module.fail_json(
            msg=f"{user} could log in to {params['bootstrap_servers']} with neither the password in "
            f"{params['client_config']} (the one the cluster had) nor the one kafka_users gives. Is the cluster "
            "running? If another password was set by hand, put that one in kafka_users and run again. Nothing "
            "was changed."
        )
    try:
        if module.check_mode:
            module.exit_json(changed=True, msg=f"{user}'s password would be changed in the cluster.")
        errors = {
            name: error
            for name, error in admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(user, ScramMechanism.SCRAM_SHA_512, new, params["iterations"])]
            ).items()
            if error
        }
        if errors:
            module.fail_json(msg=f"the cluster refused to change {user}'s password: {errors}")
    except Exception as exc:
        module.fail_json(msg=f"changing {user}'s password failed: {type(exc).__name__}: {exc}")
    finally:
        admin.close()
    # The controllers hand the new credential to every broker through the metadata log: wait until each takes it,
    # so the admin tools that log in next (the restart gates, the topics) find it wherever they connect.
    deadline = time.monotonic() + params["timeout"]
    for server in params["bootstrap_servers"].split(","):
        while (client := _admin(settings, new, server, 5000)) is None:
            if time.monotonic() > deadline:
                module.fail_json(msg=f"{user}'s password was changed, but {server} still refuses the new one.")
            time.sleep(1)
        client.close()
    module.exit_json(changed=True, msg=f"{user}'s password changed in the cluster (SCRAM-SHA-512).")


if __name__ == "__main__":
    main()
