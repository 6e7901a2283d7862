"""Every host's variables checked against the roles' declared variables, before any host changes.

Three checks, each a pure function over the inventory's host variables and the roles' argument specs
(the `main` entry point of each role's meta/argument_specs.yml):

- `type_problems`: a variable a role declares, set in the inventory to a value of the wrong type or
  outside its choices (validated with Ansible's own ArgumentSpecValidator, the one that checks a role's
  arguments when the role starts, which is after earlier plays changed hosts).
- `unknown_problems`: a variable with a role's prefix that no role declares, with the nearest declared
  name ("kafka_heapsize: no such variable; did you mean kafka_heap_size?").
- `spread_problems`: a variable that must be the same on every host of the cluster (the release, the
  mode, the controller listener) but differs between hosts, or between the hosts and the controller's
  preflight (which sees only group_vars/all).

Hosts that share a problem are named together, so a bad value in group_vars/all is one message.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from jinja2 import Undefined

# The prefixes of the roles' variables; a variable with one of them that no role declares is a typo.
ROLE_PREFIXES = (
    "kafka_",
    "zookeeper_",
    "spark_",
    "firewall_",
    "java_",
    "prometheus_",
    "node_exporter_",
    "schema_registry_",
)
# Facts the roles set on the controller for each other (see each role's README), never inventory variables.
PUBLIC_OUTPUTS = frozenset(
    {
        "kafka_cluster",
        "kafka_archive_on_controller",
        "zookeeper_ensemble",
        "spark_cluster",
        "spark_artifacts",
        "spark_consumer_endpoints",
        "prometheus_monitoring",
        "prometheus_artifacts",
        "schema_registry_cluster",
        "schema_registry_artifact",
    }
)
# Settings the whole cluster must agree on. Each is read once by the controller's preflight (from
# group_vars/all) to build the cluster model, so a value set per host or per group would be ignored there.
CLUSTER_WIDE = (
    "kafka_version",
    "kafka_scala_version",
    "kafka_mode",
    "kafka_cluster_id",
    "kafka_listeners",
    "kafka_controller_listener",
    "kafka_inter_broker_listener_name",
    "kafka_default_replication_factor",
    "kafka_min_insync_replicas",
    "kafka_zookeeper_client_port",
    "kafka_zookeeper_chroot",
    "kafka_controller_group",
    "kafka_broker_group",
    "kafka_zookeeper_group",
    "zookeeper_client_port",
    "zookeeper_peer_port",
    "zookeeper_election_port",
    "zookeeper_ensemble_group",
    "spark_version",
    "spark_master_port",
    "spark_master_group",
    "spark_worker_group",
)
_TYPE_WORDS = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "list": "a list",
    "dict": "a mapping (key: value)",
    "path": "a path",
    "float": "a number",
    "raw": "any value",
}
MISSING = object()


def declared(specs: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """variable -> (role, its spec) over every role's `main` entry point."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for role, spec in sorted(specs.items()):
        options = ((spec.get("argument_specs") or {}).get("main") or {}).get("options") or {}
        for name, option in options.items():
            found.setdefault(name, (role, dict(option or {})))
    return found


def _hosts_text(hosts: Sequence[str]) -> str:
    return ", ".join(hosts) if len(hosts) <= 4 else f"{', '.join(hosts[:3])} and {len(hosts) - 3} more hosts"


def _grouped(found: Mapping[str, list[str]]) -> list[str]:
    """'host1, host2: message' once per distinct message, hosts in inventory order."""
    return [f"{_hosts_text(hosts)}: {message}" for message, hosts in found.items()]


def read(hostvars: Mapping[str, Any], host: str, name: str) -> Any:
    """A host's value of one variable as plain data (see _plain), MISSING when it is not set or cannot be
    templated here.

    A value that refers to a role default (kafka_archive_local_path: "{{ kafka_artifact_cache }}/...") is
    undefined outside the role: Ansible hands back an Undefined marker, which is checked where it is used.
    A list or mapping comes unrendered, its items rendering as they are read: walking it is templating it, so
    an item that cannot be rendered here (through hostvars, which a host's own variables do not see) makes the
    whole value MISSING too, instead of an error later that names no variable.
    """
    try:
        vars_of = hostvars[host]
        if name not in vars_of:
            return MISSING
        value = vars_of[name]
        if isinstance(value, Undefined):
            return MISSING
        return _plain(value)
    except Exception:  # a value templating to an error is checked where it is used
        return MISSING


def _expected(option: Mapping[str, Any]) -> str:
    kind = str(option.get("type") or "str")
    text = _TYPE_WORDS.get(kind, kind)
    if kind == "list" and option.get("elements"):
        elements = str(option["elements"])
        text = "a list of strings" if elements == "str" else f"a list of {_TYPE_WORDS.get(elements, elements)} items"
    if option.get("choices"):
        text = f"one of {', '.join(str(c) for c in option['choices'])}"
    return text


def _type_error(name: str, value: Any, option: Mapping[str, Any]) -> str | None:
    """None when the value fits the option; else a short note on what is wrong with it ('' for no note)."""
    kind = str(option.get("type") or "str")
    if kind == "list" and isinstance(value, str):
        # Ansible would split a string on commas; for a list of paths or listeners that is never meant.
        return " (a string, not a list)"
    if kind in ("int", "float") and isinstance(value, bool):
        return " (a boolean)"
    spec = {key: option[key] for key in ("type", "elements", "choices") if key in option}
    if kind == "raw" and "choices" not in spec:
        return None
    try:
        result = ArgumentSpecValidator({name: spec}).validate({name: value})  # plain already: read() walked it
    except Exception as exc:  # a spec Ansible cannot read is reported, not raised
        return f" (cannot be checked: {exc})"
    return "" if result.error_messages else None


def _plain(value: Any) -> Any:
    """The value as plain dicts, lists and strings.

    The validator deep-copies what it checks; a value straight from hostvars is one of Ansible's lazily
    templated containers, whose deep copy cost most of a run's preflight (seconds per run on the lab).
    """
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def type_problems(
    hostvars: Mapping[str, Any], hosts: Iterable[str], specs: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Each declared variable set to a value of the wrong type or outside its choices, naming the fix."""
    found: dict[str, list[str]] = {}
    hosts = list(hosts)
    # Only what the inventory sets is read (templating a value is the costly part), and a value that
    # group_vars gives every host is validated once.
    keys = {host: _keys(hostvars, host) for host in hosts}
    verdicts: dict[tuple[str, str], str | None] = {}
    for name, (role, option) in declared(specs).items():
        for host in hosts:
            if name not in keys[host]:
                continue
            value = read(hostvars, host, name)
            if value is MISSING or value is None:
                continue
            verdict_key = (name, repr(value))
            if verdict_key not in verdicts:
                verdicts[verdict_key] = _type_error(name, value, option)
            note = verdicts[verdict_key]
            if note is not None:
                message = (
                    f"{name} is {value!r}{note}, but the {role} role needs {_expected(option)} "
                    f"(roles/{role}/meta/argument_specs.yml). Fix {name} in the inventory."
                )
                found.setdefault(message, []).append(host)
    return _grouped(found)


def _keys(hostvars: Mapping[str, Any], host: str) -> set[str]:
    """The names of the variables a host has (inventory, group_vars, host_vars, facts)."""
    try:
        return {str(k) for k in hostvars[host]}
    except Exception:  # a host Ansible cannot describe has nothing to check here
        return set()


def unknown_problems(
    hostvars: Mapping[str, Any], hosts: Iterable[str], specs: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Variables with a role's prefix that no role declares (a misspelt name is ignored in silence otherwise)."""
    names = declared(specs)
    found: dict[str, list[str]] = {}
    for host in hosts:
        for key in sorted(_keys(hostvars, host)):
            if not key.startswith(ROLE_PREFIXES) or key in names or key in PUBLIC_OUTPUTS:
                continue
            close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}?" if close else "no role declares it (see the roles' READMEs)."
            message = (
                f"{key}: no such variable; {hint} Rename or remove it, or set kafkalab_allow_unknown_variables: "
                "true to go on anyway."
            )
            found.setdefault(message, []).append(host)
    return _grouped(found)


def spread_problems(
    hostvars: Mapping[str, Any], groups: Mapping[str, Sequence[str]], controller_view: Mapping[str, Any]
) -> list[str]:
    """Cluster-wide settings that differ between the hosts that use them, or from what the preflight reads.

    groups: the inventory's groups; a kafka_* setting is compared over group kafka, zookeeper_* over
    group zookeeper, spark_* over group spark. controller_view: each setting's value on the controller
    (localhost, where the preflight builds the cluster model).
    """
    problems = []
    for name in CLUSTER_WIDE:
        group = "spark" if name.startswith("spark_") else name.split("_", 1)[0]
        hosts = list(groups.get(group) or [])
        values: dict[str, list[str]] = {}
        for host in hosts:
            value = read(hostvars, host, name)
            values.setdefault("(the role default)" if value is MISSING else repr(value), []).append(host)
        if len(values) > 1:
            detail = "; ".join(f"{_hosts_text(h)} {v}" for v, h in values.items())
            problems.append(
                f"{name} must be the same on every host of group {group}, but it differs ({detail}). Set it once, "
                "in group_vars/all."
            )
            continue
        if len(values) == 1:
            value_text = next(iter(values))
            seen = repr(controller_view[name]) if name in controller_view else "(the role default)"
            if value_text != seen:
                problems.append(
                    f"{name} is {value_text} on the hosts of group {group} but {seen} where the preflight builds "
                    "the cluster model (the controller sees group_vars/all only). Set it in group_vars/all."
                )
    return problems
