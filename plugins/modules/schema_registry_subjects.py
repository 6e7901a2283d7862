#!/usr/bin/python
"""Ansible module: declared schema registry subjects (schemas and compatibility levels), applied over HTTPS."""

from __future__ import annotations

DOCUMENTATION = r"""
module: schema_registry_subjects
short_description: Register declared schemas and compatibility levels in Apicurio Registry (subjects as code)
author:
  - kafkalab maintainers (@kafkalab)
description:
  - >-
    Talks HTTPS to one Apicurio Registry 3.0.x instance through its Confluent-compatible API
    (C(<url>/apis/ccompat/v7)), and its native API (C(<url>/apis/registry/v3)) for what the former cannot say:
    a subject's own compatibility level (the ccompat API answers C(NONE) both for "none of its own" and for an
    explicit C(NONE)), a subject-level C(NONE) (the ccompat API removes the subject's rule instead, leaving the
    global level in force), and why a schema is incompatible (a dry run of the registration).
    Runs on the controller with the Python standard library only.
  - >-
    Registers a declared schema when its exact text is not already a version of the subject (reformatted text is
    a new version); sets a subject's compatibility level and the global one when declared and different; deletes
    a subject declared C(state=absent) (soft, then permanently). Undeclared subjects are left alone.
  - >-
    Every new version is checked before anything is registered, under the level that will be in force when it is
    registered (the declared one), with all subjects checked before any is changed. An incompatible schema fails the
    task naming the subject, the version it would have become, the level and its rule, and the registry's reasons.
    When a declared level change decides the check, the levels are set first, then the check runs, and on failure
    the levels are put back as they were.
  - >-
    Check mode reports the plan (and diff) without any POST, PUT or DELETE that changes the registry; a new version
    whose check depends on a level change that check mode does not make is reported in C(warnings) as not checked.
  - >-
    A subject's level is set before its new version is registered, except for a subject without versions:
    Apicurio 3.0.9 refuses a subject-level C(NONE) for a subject that does not exist (404, error_code 40401), so
    the first version is registered first (it has nothing to be checked against).
  - >-
    Deleting subjects through the ccompat API works with Apicurio 3.0.9's default settings; the native API's
    deletions (not used here) need C(apicurio.rest.deletion.artifact.enabled=true).
  - Schema references are not supported. Subjects live in Apicurio's default group.
options:
  url:
    description: The registry instance's base URL, e.g. C(https://10.231.1.11:8081).
    type: str
    required: true
  ca_file:
    description: >-
      The CA bundle (PEM) that verifies the registry's TLS certificate: it must hold the CA that signed that
      certificate. Empty, the system trust store.
    type: path
    default: ""
  compatibility:
    description: The registry's global compatibility level. Empty or omitted, the global level is left alone.
    type: str
    choices: ["", NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE]
    default: ""
  subjects:
    description: The declared subjects. Subjects not listed are left alone.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The subject, e.g. C(orders-value).
        type: str
        required: true
      schema:
        description: >-
          The schema text (Avro or JSON Schema as JSON text, or a Protobuf definition), compared with the registered
          versions exactly. A dict (YAML, or JSON text that templating turned into data) is sent as compact JSON.
          Required when I(state=present).
        type: raw
      type:
        description: The schema's type.
        type: str
        choices: [AVRO, JSON, PROTOBUF]
        default: AVRO
      compatibility:
        description: The subject's own compatibility level. Omitted, the subject's level is left alone.
        type: str
        choices: [NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE]
      state:
        description: C(absent) deletes the subject (all its versions, permanently) if it exists.
        type: str
        choices: [present, absent]
        default: present
  timeout:
    description: Seconds to wait for each HTTP request.
    type: int
    default: 30
  retries:
    description: >-
      How many times to retry a request that met a connection error or an HTTP 5xx answer (an instance may be
      restarting), with a short back-off (1, 2, 3... seconds, at most 5).
    type: int
    default: 5
notes:
  - Supports check mode and diff mode.
"""

EXAMPLES = r"""
- name: Declare the lab's subjects
  kafkalab.kafka.schema_registry_subjects:
    url: https://10.231.1.11:8081
    ca_file: /etc/kafkalab/pki/ca.pem
    compatibility: BACKWARD
    subjects:
      - name: orders-value
        schema: "{{ lookup('ansible.builtin.file', 'schemas/orders-value.avsc') }}"
        compatibility: FULL
      - name: legacy-value
        state: absent
"""

RETURN = r"""
changes:
  description: One line per change made (or, in check mode, that would be made), in the order made.
  returned: always
  type: list
  elements: str
  sample: ["global compatibility NONE -> BACKWARD", "orders-value: compatibility BACKWARD -> FULL",
           "orders-value: registered version 2 (id 5)"]
subjects:
  description: >-
    Each declared subject after the run: name, state, the version and id of its declared schema (in check mode, the
    version it would get and id null), and the compatibility level in force for it (its own, else the global one).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "orders-value", "state": "present", "version": 2, "id": 5, "compatibility": "FULL"}]
diff:
  description: Before and after text of the global level and each subject's level and versions (with --diff).
  returned: when diff mode is on
  type: dict
"""

import json
import ssl
import time
import urllib.error
import urllib.parse
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.kafkalab.kafka.plugins.module_utils.schema_registry_plan import (
    Current,
    Declared,
    SubjectPlan,
    check,
    describe,
    describe_step,
    diff,
    incompatible,
    normalise,
    plan,
    registered,
    results,
    steps,
)

CCOMPAT = "/apis/ccompat/v7"
NATIVE = "/apis/registry/v3/groups/default/artifacts"
# The native API's content types, for the dry run that explains an incompatibility.
CONTENT_TYPES = {"AVRO": "application/json", "JSON": "application/json", "PROTOBUF": "application/x-protobuf"}


class RegistryError(Exception):
    """A request failed; the message names the URL, the status and the registry's own message."""


class Registry:
    def __init__(self, url: str, ca_file: str, timeout: int, retries: int) -> None:
        self.base = url.rstrip("/")
        self.ca_file = ca_file
        self.timeout = timeout
        self.retries = max(retries, 0)

    def request(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = ()) -> tuple[int, Any]:
        """(status, JSON answer) of a 2xx answer or one of `expect`; RegistryError for anything else."""
        url = self.base + path
        ctype = "application/json" if path.startswith("/apis/registry/") else "application/vnd.schemaregistry.v1+json"
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": f"{ctype}, application/json"}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in range(self.retries + 1):
            retry = attempt < self.retries
            try:
                with open_url(
                    url, data=data, method=method, headers=headers, timeout=self.timeout,
                    ca_path=self.ca_file or None, validate_certs=True, follow_redirects="none",
                ) as answer:  # fmt: skip
                    return answer.status, _json(answer.read())
            except urllib.error.HTTPError as exc:
                said = _json(exc.read())
                if exc.code in expect:
                    return exc.code, said
                if exc.code >= 500 and retry:
                    time.sleep(min(attempt + 1, 5))
                    continue
                raise RegistryError(f"{method} {url} answered HTTP {exc.code}: {_message(said)}") from None
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, ssl.SSLError):
                    raise RegistryError(self._tls(url, exc.reason)) from None
                if not retry:
                    raise RegistryError(f"{method} {url} failed: {exc.reason} ({self.retries + 1} attempts)") from None
            except ssl.SSLError as exc:
                raise RegistryError(self._tls(url, exc)) from None
            except (OSError, TimeoutError) as exc:  # connection reset, read timeout
                if not retry:
                    raise RegistryError(f"{method} {url} failed: {exc} ({self.retries + 1} attempts)") from None
            time.sleep(min(attempt + 1, 5))
        raise AssertionError("unreachable")

    def answer(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of a request that must succeed."""
        return self.request(method, path, body)[1]

    def _tls(self, url: str, error: Exception) -> str:
        trust = f"ca_file {self.ca_file}" if self.ca_file else "the system trust store (ca_file is empty)"
        return (
            f"TLS with {url} failed: {error}. The registry's certificate was checked against {trust}: "
            "ca_file must hold the CA that signed the registry's certificate."
        )


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def _message(said: Any) -> str:
    """The registry's own words: ccompat answers {message, error_code}, the native API {title, detail}."""
    if isinstance(said, dict):
        text = said.get("message") or said.get("detail") or said.get("title") or json.dumps(said)
        code = said.get("error_code")
        return f"{text} (error_code {code})" if code is not None else str(text)
    return str(said or "(no message)")


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _versions(reg: Registry, subject: str, deleted: bool) -> tuple[int, ...]:
    query = "?deleted=true" if deleted else ""
    status, said = reg.request("GET", f"{CCOMPAT}/subjects/{_q(subject)}/versions{query}", expect=(404,))
    return tuple(int(v) for v in said) if status == 200 and isinstance(said, list) else ()


def _schema_body(subject: Declared) -> dict[str, Any]:
    body = {"schema": subject.schema}
    if subject.type != "AVRO":
        body["schemaType"] = subject.type
    return body


def read(reg: Registry, declared: list[dict[str, Any]]) -> dict[str, Current]:
    """What the registry holds for every declared subject. Only GETs and the two read-only POSTs (lookup, check)."""
    current: dict[str, Current] = {}
    for raw in declared:
        subject = normalise(raw)
        name = _q(subject.name)
        versions = _versions(reg, subject.name, deleted=False)
        all_versions = _versions(reg, subject.name, deleted=True)
        # The subject's own level: 404 when it has none (the ccompat API would answer NONE for that too).
        status, rule = reg.request("GET", f"{NATIVE}/{name}/rules/COMPATIBILITY", expect=(404,))
        own = str(rule["config"]) if status == 200 and isinstance(rule, dict) else None
        schema_type = match = None
        if versions and subject.state == "present":
            latest = reg.answer("GET", f"{CCOMPAT}/subjects/{name}/versions/latest")
            schema_type = str(latest.get("schemaType") or "AVRO")
            status, found = reg.request("POST", f"{CCOMPAT}/subjects/{name}", _schema_body(subject), expect=(404,))
            if status == 200:
                match = {"version": int(found["version"]), "id": int(found["id"])}
        current[subject.name] = Current(
            versions=versions,
            all_versions=tuple(sorted({*versions, *all_versions})),
            own_level=own,
            schema_type=schema_type,
            match=match,
        )
    return current


def compatibility_refusal(reg: Registry, item: SubjectPlan, raw: dict[str, Any]) -> str | None:
    """None when the registry finds the declared schema compatible under the level now in force, else why not."""
    subject = normalise(raw)
    name = _q(subject.name)
    said = reg.answer("POST", f"{CCOMPAT}/compatibility/subjects/{name}/versions/latest", _schema_body(subject))
    if said.get("is_compatible", False):
        return None
    # The ccompat check does not say why; the native API's dry run of the same registration does (409).
    content = {"content": {"content": subject.schema, "contentType": CONTENT_TYPES[subject.type]}}
    status, reasons = reg.request("POST", f"{NATIVE}/{name}/versions?dryRun=true", content, expect=(409,))
    latest = max(item.before.versions, default=None)
    return incompatible(item, latest, reasons if status == 409 and isinstance(reasons, dict) else None)


def set_subject_level(reg: Registry, subject: str, old: str | None, new: str | None) -> None:
    """Set (or, new None, remove) a subject's own level. NONE goes through the native API: the ccompat API's
    PUT of NONE removes the subject's rule, which leaves the global level in force."""
    name = _q(subject)
    if new is None:
        reg.request("DELETE", f"{CCOMPAT}/config/{name}")
    elif new != "NONE":
        reg.request("PUT", f"{CCOMPAT}/config/{name}", {"compatibility": new})
    else:
        rule = {"ruleType": "COMPATIBILITY", "config": "NONE"}
        if old is None:
            reg.request("POST", f"{NATIVE}/{name}/rules", rule)
        else:
            reg.request("PUT", f"{NATIVE}/{name}/rules/COMPATIBILITY", rule)


def set_global_level(reg: Registry, level: str) -> None:
    reg.request("PUT", f"{CCOMPAT}/config", {"compatibility": level})


def run_step(reg: Registry, step: tuple[str, ...], raws: dict[str, dict[str, Any]]) -> dict[str, int] | None:
    """Make one change; for a registration, the version and id it became."""
    kind = step[0]
    if kind == "global":
        set_global_level(reg, step[2])
    elif kind == "level":
        set_subject_level(reg, step[1], step[2] or None, step[3])
    elif kind == "register":
        subject = normalise(raws[step[1]])
        path = f"{CCOMPAT}/subjects/{_q(subject.name)}"
        status, said = reg.request("POST", f"{path}/versions", _schema_body(subject), expect=(409,))
        if status == 409:
            raise RegistryError(
                f"POST {reg.base}{path}/versions answered HTTP 409: {_message(said)}. The registry refused the new "
                "version (did the subject change since this run checked it?)."
            )
        found = reg.answer("POST", path, _schema_body(subject))
        return {"version": int(found["version"]), "id": int(found["id"])}
    elif kind in ("delete", "purge"):
        # 404 is done already: a retried or concurrent delete (40404: soft-deleted, 40401: gone).
        if kind == "delete":
            reg.request("DELETE", f"{CCOMPAT}/subjects/{_q(step[1])}", expect=(404,))
        reg.request("DELETE", f"{CCOMPAT}/subjects/{_q(step[1])}?permanent=true", expect=(404,))
    return None


def undo_level(reg: Registry, step: tuple[str, ...]) -> None:
    if step[0] == "global":
        set_global_level(reg, step[1])
    else:
        set_subject_level(reg, step[1], step[3], step[2] or None)


class Refused(Exception):
    """The run stops before its changes; args[0] is the message (lines)."""


def apply(
    module: AnsibleModule, reg: Registry, declared: list[dict[str, Any]], global_declared: str | None, done: list[str]
) -> dict[str, Any]:
    """Read, plan, check, then (not in check mode) change; the module's result. `done` collects the changes made,
    so a failure can say what was already done."""
    raws = {str(s["name"]): s for s in declared}
    config = reg.answer("GET", f"{CCOMPAT}/config")
    global_now = str(config.get("compatibilityLevel") or "NONE")
    result, refusals = plan(declared, read(reg, declared), global_now, global_declared)
    if refusals:
        raise Refused(["schema_registry_subjects: refused; nothing was changed.", *refusals])
    # Every check the registry can make under the levels now in force, before any change.
    refusals = [
        why
        for s in result.subjects
        if s.register and s.check_level and s.check_now
        for why in [compatibility_refusal(reg, s, raws[s.name])]
        if why
    ]
    if refusals:
        raise Refused(["schema_registry_subjects: incompatible schema; nothing was changed.", *refusals])
    global_after = result.global_level[1] if result.global_level else global_now
    out: dict[str, Any] = {
        "changed": result.changed,
        "changes": describe(result, global_now),
        "subjects": results(result, global_after),
    }
    if module._diff:
        out["diff"] = diff(result, global_now)
    later = [s for s in result.subjects if s.register and s.check_level and not s.check_now]
    if module.check_mode:
        for s in later:
            module.warn(
                f"subject '{s.name}': version {s.next_version} can be checked under {s.check_level} only once that "
                "level is in force, which check mode does not set; a real run checks it before registering anything."
            )
        return out
    todo = steps(result)
    if later:
        # The registry checks under the level in force: set the declared levels these checks depend on (the global
        # one, those of subjects with versions), check, and put them back if a schema is incompatible.
        with_versions = {s.name for s in result.subjects if s.before.versions}
        first = [t for t in todo if t[0] == "global" or (t[0] == "level" and t[1] in with_versions)]
        for i, step in enumerate(first):
            try:
                run_step(reg, step, raws)
            except RegistryError:
                for made in reversed(first[:i]):
                    undo_level(reg, made)
                raise
        refusals = [why for s in later for why in [compatibility_refusal(reg, s, raws[s.name])] if why]
        if refusals:
            for step in reversed(first):
                undo_level(reg, step)
            raise Refused(
                [
                    "schema_registry_subjects: incompatible schema under the declared compatibility; the levels set "
                    "to check it were put back, nothing was changed.",
                    *refusals,
                ]
            )
        done += [describe_step(result, t, global_now) for t in first]
        todo = [t for t in todo if t not in first]
    for step in todo:
        new = run_step(reg, step, raws)
        if new is None:
            done.append(describe_step(result, step, global_now))
            continue
        done.append(registered(step[1], new["version"], new["id"]))
        for item in out["subjects"]:
            if item["name"] == step[1]:
                item.update(new)
    out["changes"] = list(done)
    return out


def main() -> None:
    levels = ["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "ca_file": {"type": "path", "default": ""},
            "compatibility": {"type": "str", "choices": ["", *levels], "default": ""},
            "subjects": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "name": {"type": "str", "required": True},
                    "schema": {"type": "raw"},
                    "type": {"type": "str", "choices": ["AVRO", "JSON", "PROTOBUF"], "default": "AVRO"},
                    "compatibility": {"type": "str", "choices": levels},
                    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
                },
            },
            "timeout": {"type": "int", "default": 30},
            "retries": {"type": "int", "default": 5},
        },
        supports_check_mode=True,
    )
    params = module.params
    # Ansible fills every suboption in (None when omitted); the plan reads omitted and None alike.
    declared: list[dict[str, Any]] = [{k: v for k, v in s.items() if v is not None} for s in params["subjects"]]
    global_declared = params["compatibility"] or None
    problems = check(declared, global_declared)
    if problems:
        module.fail_json(msg=["schema_registry_subjects: the declaration is invalid; nothing was changed.", *problems])
    try:
        reg = Registry(params["url"], params["ca_file"], params["timeout"], params["retries"])
    except (OSError, ssl.SSLError) as exc:
        module.fail_json(
            msg=f"cannot load ca_file {params['ca_file']}: {exc}; it must be a PEM file of CA certificates"
        )
    done: list[str] = []
    try:
        module.exit_json(**apply(module, reg, declared, global_declared, done))
    except Refused as exc:
        module.fail_json(msg=exc.args[0], changes=done)
    except RegistryError as exc:
        module.fail_json(msg=str(exc), changes=done)


if __name__ == "__main__":
    main()
