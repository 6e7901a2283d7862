#!/usr/bin/python
"""Connectors as code: Kafka Connect connectors applied through a distributed cluster's REST API."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kafka_connectors
short_description: Apply declared Kafka Connect connectors through the REST API (validated first, written on a diff)
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Validates every declared connector's config on the workers (C(PUT /connector-plugins/<class>/config/validate))
    before it changes anything; one invalid config fails the run, naming the connector, the key and the error, and
    no connector is touched.
  - >-
    Creates a connector that does not exist and updates one whose stored config differs from the declared one
    (C(PUT /connectors/<name>/config) reconfigures it in place and keeps its offsets). A connector whose config is
    as declared is not written to, since a re-PUT would restart it.
  - Deletes a connector only when it is declared with state absent.
  - >-
    With O(wait), waits until every declared connector and each of its tasks is RUNNING (MirrorMaker 2's connectors
    may run without a task while no topic or group matches), and fails naming the first line of a failed one's
    trace.
  - >-
    Check mode reports the changes and the diff without making them. Connect returns config-provider placeholders
    (C(${file:...})) as stored, never the secrets they point at; values of keys that name a secret are masked in the
    diff all the same.
options:
  url:
    description: The base URL of a worker's REST API (any worker forwards to the leader).
    type: str
    required: true
  ca_path:
    description: The CA bundle the workers' certificates are checked against.
    type: path
  user:
    description: The REST user (basic authentication).
    type: str
    required: true
  password:
    description: Its password.
    type: str
    required: true
  connectors:
    description: The declared connectors, as the kafka_connect role's model has them (name, config, state).
    type: list
    elements: dict
    required: true
  validate_only:
    description: Validate every present connector and report the plan; change nothing.
    type: bool
    default: false
  pending_classes:
    description:
      - >-
        Connector classes of plugins this run installs: a connector of such a class that the workers do not know yet
        (they load plugins when they start) is left out of the validation, and reported in RV(skipped); the workers
        validate it after their restart, before any connector is written. Any other unknown class fails.
    type: list
    elements: str
    default: []
  wait:
    description: After applying, wait until every present connector and its tasks run (seconds; 0 does not wait).
    type: int
    default: 120
"""

EXAMPLES = r"""
- name: Apply the declared connectors
  kafkalab.kafka.kafka_connectors:
    url: https://10.0.0.21:8083
    ca_path: /etc/kafkalab/ca/trust.pem
    user: connect-admin
    password: "{{ vault_connect_admin_password }}"
    connectors:
      - name: orders-sink
        state: present
        config:
          connector.class: org.apache.kafka.connect.file.FileStreamSinkConnector
          topics: orders
          file: /var/lib/kafka-connect/orders.txt
"""

RETURN = r"""
created:
  description: Connectors created (or that would be).
  type: list
  returned: always
updated:
  description: Connectors whose config changed (or would), with the keys that differ.
  type: dict
  returned: always
deleted:
  description: Connectors deleted (or that would be).
  type: list
  returned: always
skipped:
  description: Connectors not validated, their class being in a plugin the workers have not loaded yet.
  type: list
  returned: always
status:
  description: Each present connector's state and its tasks' states after the run.
  type: dict
  returned: when not in check mode
"""

import json
import re
import time
from typing import Any
from urllib.parse import quote

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

SECRET_KEY = re.compile(r"(password|secret|token|credential|sasl\.jaas\.config|api\.key)", re.IGNORECASE)
PLACEHOLDER = re.compile(r"^\$\{[^}]+\}$")


class RestError(Exception):
    """A REST call failed: what, and the worker's answer."""


class Rest:
    def __init__(self, module: AnsibleModule) -> None:
        self.url = module.params["url"].rstrip("/")
        self.ca = module.params["ca_path"]
        self.user = module.params["user"]
        self.password = module.params["password"]

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200,)) -> tuple[int, Any]:
        data = json.dumps(body) if body is not None else None
        try:
            response = open_url(
                self.url + path,
                method=method,
                data=data,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                url_username=self.user,
                url_password=self.password,
                force_basic_auth=True,
                ca_path=self.ca,
                timeout=60,
            )
            status, text = response.getcode(), response.read().decode()
        except HTTPError as exc:
            status, text = exc.code, exc.read().decode(errors="replace")
        except (URLError, OSError) as exc:
            raise RestError(f"{method} {self.url}{path}: {getattr(exc, 'reason', exc)}") from None
        try:
            decoded = json.loads(text) if text else None
        except ValueError:
            decoded = text
        if status not in ok:
            message = decoded.get("message") if isinstance(decoded, dict) else decoded
            raise RestError(f"{method} {self.url}{path} answered {status}: {message}")
        return status, decoded


def as_strings(config: dict[str, Any] | None) -> dict[str, str]:
    """A connector config as Connect stores and returns it: every key and value a string."""
    return {str(k): str(v) for k, v in (config or {}).items()}


def masked(config: dict[str, str]) -> dict[str, str]:
    """The config as the diff shows it: a secret-looking key's value hidden unless it is a placeholder."""
    return {k: ("********" if SECRET_KEY.search(k) and not PLACEHOLDER.match(v) else v) for k, v in config.items()}


def validation_errors(name: str, answer: dict[str, Any]) -> list[str]:
    errors = []
    for item in answer.get("configs") or []:
        value = item.get("value") or {}
        for error in value.get("errors") or []:
            errors.append(f"connector {name}: {value.get('name')}: {error}")
    if answer.get("error_count") and not errors:
        errors.append(f"connector {name}: {answer['error_count']} error(s) without a key")
    return errors


def plan(declared: list[dict[str, Any]], existing: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What to create, update (with the differing keys) and delete, comparing strings as Connect stores them."""
    created, updated, deleted = [], {}, []
    for connector in declared:
        name, config = connector["name"], as_strings(connector.get("config"))
        if connector.get("state", "present") == "absent":
            if name in existing:
                deleted.append(name)
        elif name not in existing:
            created.append(name)
        elif existing[name] != config:
            keys = sorted(k for k in set(config) | set(existing[name]) if config.get(k) != existing[name].get(k))
            updated[name] = keys
    return {"created": created, "updated": updated, "deleted": deleted}


# Connectors that run with no task while there is nothing to do: MirrorMaker 2's, before a topic or group matches.
TASKLESS = ("org.apache.kafka.connect.mirror.", "MirrorSource", "MirrorCheckpoint", "MirrorHeartbeat")


def may_run_taskless(config: dict[str, Any]) -> bool:
    return str(config.get("connector.class", "")).startswith(TASKLESS)


def wait_running(rest: Rest, names: list[str], timeout: int, taskless: frozenset[str] = frozenset()) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status: dict[str, Any] = {}
        problems: list[str] = []
        for name in names:
            answer = rest.call("GET", f"/connectors/{quote(name, safe='')}/status", ok=(200, 404))[1]
            answer = answer if isinstance(answer, dict) else {}
            connector = answer.get("connector") or {}
            tasks = answer.get("tasks") or []
            status[name] = {"state": connector.get("state"), "tasks": [t.get("state") for t in tasks]}
            for part in [connector, *tasks]:
                if part.get("state") == "FAILED":
                    trace = str(part.get("trace") or "").splitlines()[:1]
                    what = f"task {part['id']}" if "id" in part else "connector"
                    problems.append(f"connector {name}: {what} FAILED on {part.get('worker_id')}: {' '.join(trace)}")
            no_task = not tasks and name not in taskless
            if connector.get("state") != "RUNNING" or no_task or any(t.get("state") != "RUNNING" for t in tasks):
                problems.append(f"connector {name}: {status[name]}")
        failed = [p for p in problems if "FAILED" in p]
        if not problems:
            return status
        if failed or time.monotonic() > deadline:
            raise RestError("; ".join(failed or problems))
        time.sleep(2)


def unknown_class(rest: Rest, answer: Any) -> str:
    """Why a worker would not validate a config: its message without the Java exception names before it and the
    plugin descriptions after it, and the connector classes the workers have."""
    message = str(answer.get("message", answer) if isinstance(answer, dict) else answer)
    message = re.sub(r"^(?:[\w.$]+(?:Exception|Error): )+", "", message.split(", available connectors are", 1)[0])
    plugins = rest.call("GET", "/connector-plugins?connectorsOnly=true")[1] or []
    return f"{message} (the workers have: {', '.join(sorted(str(p.get('class')) for p in plugins))})"


def pending(connector_class: str, pending_classes: list[str]) -> bool:
    """Whether a connector.class names one of pending_classes: in full, or by an alias Connect accepts (the simple
    class name, or that without its Connector suffix)."""
    for full in pending_classes:
        simple = full.rsplit(".", 1)[-1]
        if connector_class in (full, simple, simple.removesuffix("Connector")):
            return True
    return False


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "ca_path": {"type": "path"},
            "user": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "connectors": {"type": "list", "elements": "dict", "required": True},
            "validate_only": {"type": "bool", "default": False},
            "pending_classes": {"type": "list", "elements": "str", "default": []},
            "wait": {"type": "int", "default": 120},
        },
        supports_check_mode=True,
    )
    rest = Rest(module)
    declared = module.params["connectors"]
    try:
        # Validated first, all of them: one invalid config and nothing is touched.
        errors: list[str] = []
        skipped: list[str] = []
        for connector in declared:
            if connector.get("state", "present") != "present":
                continue
            config = as_strings(connector["config"])
            path = f"/connector-plugins/{quote(config['connector.class'], safe='')}/config/validate"
            answer = rest.call("PUT", path, config, ok=(200, 400, 404, 500))[1]
            if not isinstance(answer, dict) or "configs" not in answer:
                if pending(config["connector.class"], module.params["pending_classes"]):
                    skipped.append(connector["name"])
                    continue
                errors.append(
                    f"connector {connector['name']}: connector.class {config['connector.class']}: "
                    + unknown_class(rest, answer)
                )
            else:
                errors += validation_errors(connector["name"], answer)
        if errors:
            module.fail_json(
                msg="Invalid connector config; no connector was changed. " + "; ".join(errors), errors=errors
            )
        listing = rest.call("GET", "/connectors?expand=info")[1]
        existing = {n: (v.get("info") or {}).get("config") or {} for n, v in (listing or {}).items()}
        result = {**plan(declared, existing), "skipped": skipped}
        by_name = {c["name"]: c for c in declared}
        before = {n: masked(existing[n]) for n in [*result["updated"], *result["deleted"]]}
        after = {n: masked(as_strings(by_name[n]["config"])) for n in [*result["created"], *result["updated"]]}
        changed = bool(result["created"] or result["updated"] or result["deleted"])
        diff = {
            "before": json.dumps(before, indent=2, sort_keys=True) + "\n",
            "after": json.dumps(after, indent=2, sort_keys=True) + "\n",
        }
        if module.check_mode or module.params["validate_only"]:
            module.exit_json(changed=changed and not module.params["validate_only"], diff=diff, **result)
        for name in [*result["created"], *result["updated"]]:
            config = as_strings(by_name[name]["config"])
            rest.call("PUT", f"/connectors/{quote(name, safe='')}/config", config, ok=(200, 201))
        for name in result["deleted"]:
            rest.call("DELETE", f"/connectors/{quote(name, safe='')}", ok=(204, 404))
        present = [c["name"] for c in declared if c.get("state", "present") == "present"]
        taskless = frozenset(n for n in present if may_run_taskless(by_name[n]["config"]))
        status = wait_running(rest, present, module.params["wait"], taskless) if module.params["wait"] else {}
    except RestError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, diff=diff, status=status, **result)


if __name__ == "__main__":
    main()
