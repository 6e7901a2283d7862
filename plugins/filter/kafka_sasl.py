"""SCRAM-SHA-512 users, the authorizer and ACLs: what each node's properties say, and what a run must refuse.

The cluster model (kafka_cluster.py) says which listeners run SASL_SSL (`sasl_listeners`). The inventory
declares the users (kafka_users: name, password, state), which of them is the administrator (kafka_admin_user:
the topics, users and ACLs are applied with its login, and it is a super user) and which one the brokers log in
as on the inter-broker listener (kafka_broker_user), whether the StandardAuthorizer runs (kafka_authorizer) and
the ACLs (kafka_acls), and the client quotas (kafka_quotas: per user, per client id, or their defaults). These
filters turn that into

- the refusals of the preflight (`kafka_sasl_settings(...)["problems"]`), each naming the variable, the bad value
  (never a password) and the fix;
- the server's properties: a JAAS entry per SASL listener whose password is read at start from the node's
  secrets file through Kafka's FileConfigProvider (so server.properties holds no secret), the authorizer and its
  super users (the admin, the broker user, and the nodes as one principal mapped from their certificates, which
  is how controllers and brokers know each other on the mutual-TLS controller listener);
- the admin tools' and the controller machine's client settings (the admin's login: written 0600, no_log);
- `kafka-storage format --add-scram` arguments, so the admin and the broker user exist in the cluster's first
  metadata and the first start already authenticates.

Pure functions over plain data, so tests/unit exercises them without Ansible or containers.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import (
    DEFAULT_ENTITY,
    QUOTA_KEYS,
    WHOLE_QUOTA_KEYS,
    entity_key,
    entity_label,
)
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from ansible_collections.kafkalab.kafka.plugins.module_utils.scram import MECHANISM, jaas, password_of, scram_login

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Passwords go into JAAS strings ("..."), --add-scram's [name=...,password=...] and a properties file: letters,
# digits and punctuation that none of them treats specially. At least 12 characters.
PASSWORD = re.compile(r"^[A-Za-z0-9!#%&()*+./;<>?@^_{|}~-]{12,}$")
USER_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
USER_KEYS = {"name", "password", "state"}
ACL_KEYS = {"principal", "resource_type", "name", "pattern_type", "operation", "permission", "host", "state"}
RESOURCE_TYPES = ("topic", "group", "cluster", "transactional_id")
PATTERN_TYPES = ("literal", "prefixed")
OPERATIONS = (
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
)
QUOTA_ENTRY_KEYS = ("user", "client_id", *QUOTA_KEYS, "state")
QUOTA_UNITS = {
    "request_percentage": "percent of one request thread, per broker",
    "controller_mutation_rate": "partitions created or deleted per second",
}
PERMISSIONS = ("allow", "deny")
STATES = ("present", "absent")
# The name Kafka gives the one cluster resource.
CLUSTER_RESOURCE = "kafka-cluster"
# The principal of every node on the mutual-TLS controller listener: its certificate (CN=<inventory name>, signed
# by the project CA, which signs nodes' certificates only) maps to this one name. One name, not one per node: a
# super.users list of node names would change on every node when a node joins or leaves (add_controller.yml,
# scale-out), and super.users is read at start only, so every node would restart for it.
NODE_PRINCIPAL = "kafka-node"


def _users(raw: Any, problems: list[str]) -> dict[str, dict[str, Any]]:
    if raw in (None, ""):
        return {}
    if not isinstance(raw, list):
        problems.append(
            "kafka_users must be a list of users (each with name and password), not a "
            f"{type(raw).__name__}: e.g. [{{name: alice, password: '{{{{ vault_kafka_alice_password }}}}'}}]."
        )
        return {}
    users: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(raw):
        where = f"kafka_users[{index}]"
        if not isinstance(item, Mapping) or not str(item.get("name") or ""):
            problems.append(f"{where} is not a user: each item needs a name (and a password), e.g. {{name: alice}}.")
            continue
        name = str(item["name"])
        where = f"kafka_users[{index}] ({name})"
        unknown = sorted(set(item) - USER_KEYS)
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(USER_KEYS))}).")
        if not USER_NAME.match(name):
            problems.append(f"{where}: the name may hold letters, digits, '.', '_' and '-' only.")
        state = str(item.get("state") or "present")
        if state not in STATES:
            problems.append(f"{where}: state '{state}' is not one of {', '.join(STATES)}.")
        password = item.get("password")
        if state == "present" and not (isinstance(password, str) and PASSWORD.match(password)):
            # Never the value: a password misses the rule, the message says which rule.
            what = "has no password" if not password else "has a password that does not fit"
            problems.append(
                f"{where} {what}: a SCRAM password needs at least 12 characters, all letters, digits or "
                "!#%&()*+./;<>?@^_{|}~- (no spaces, quotes, backslashes, commas, colons, brackets, '=' or '$'). Set "
                "password, from ansible-vault (e.g. password: '{{ vault_kafka_" + name + "_password }}')."
            )
        if name in users:
            problems.append(f"{where}: user {name} is declared more than once in kafka_users.")
        users[name] = {"state": state}
    return users


def _acls(raw: Any, users: Mapping[str, Mapping[str, Any]], problems: list[str]) -> list[dict[str, str]]:
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(f"kafka_acls must be a list of ACLs, not a {type(raw).__name__}.")
        return []
    acls = []
    for index, item in enumerate(raw):
        where = f"kafka_acls[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} is {item!r}, not an ACL (a mapping: principal, resource_type, name, operation).")
            continue
        unknown = sorted(set(item) - ACL_KEYS)
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(ACL_KEYS))}).")
        acl = {
            "principal": str(item.get("principal") or ""),
            "resource_type": str(item.get("resource_type") or "").lower(),
            "name": str(item.get("name") or ""),
            "pattern_type": str(item.get("pattern_type") or "literal").lower(),
            "operation": str(item.get("operation") or "").lower(),
            "permission": str(item.get("permission") or "allow").lower(),
            "host": str(item.get("host") or "*"),
            "state": str(item.get("state") or "present"),
        }
        for key, choices in (
            ("resource_type", RESOURCE_TYPES),
            ("pattern_type", PATTERN_TYPES),
            ("operation", OPERATIONS),
            ("permission", PERMISSIONS),
            ("state", STATES),
        ):
            if acl[key] not in choices:
                problems.append(f"{where}: {key} '{item.get(key)}' is not one of {', '.join(choices)}.")
        if acl["resource_type"] == "cluster":
            acl["name"] = acl["name"] or CLUSTER_RESOURCE
            if acl["name"] != CLUSTER_RESOURCE or acl["pattern_type"] != "literal":
                problems.append(
                    f"{where}: a cluster ACL names the one cluster resource: leave name out (or '{CLUSTER_RESOURCE}') "
                    "and pattern_type literal."
                )
        elif not acl["name"]:
            problems.append(f"{where}: name is missing: the {acl['resource_type'] or 'resource'}'s name ('*': all).")
        principal = acl["principal"]
        kind, _colon, user = principal.partition(":")
        if kind != "User" or not user:
            problems.append(f"{where}: principal '{principal}' is not User:<name> (e.g. User:alice).")
        elif acl["state"] == "present" and user != "*" and (users.get(user) or {}).get("state") != "present":
            problems.append(
                f"{where}: principal {principal} is not a user kafka_users declares (present): declare the user, "
                "or fix the principal."
            )
        acls.append(acl)
    return acls


def _quota_value(value: Any) -> float | None:
    """A quota as a number: an int or float, or a string of one (a templated value); None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _quota_problems(where: str, key: str, value: Any) -> list[str]:
    number = _quota_value(value)
    usable = number is not None and math.isfinite(number) and number > 0
    if key in WHOLE_QUOTA_KEYS:
        if not (usable and float(number or 0).is_integer()):
            return [f"{where}: {key} {value!r} is not a whole number of bytes per second (per broker), 1 or more."]
    elif not usable:
        return [f"{where}: {key} {value!r} is not a number above 0 ({QUOTA_UNITS[key]})."]
    return []


def _quotas(raw: Any, users: Mapping[str, Mapping[str, Any]], problems: list[str]) -> list[dict[str, Any]]:
    """kafka_quotas checked and normalized: user and client_id (None when not given), values (the quota keys it
    sets, as numbers) and state."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(
            f"kafka_quotas must be a list of quotas, not a {type(raw).__name__}: e.g. "
            "[{user: alice, producer_byte_rate: 1048576}]."
        )
        return []
    quotas = []
    seen: dict[Any, int] = {}
    for index, item in enumerate(raw):
        where = f"kafka_quotas[{index}]"
        if not isinstance(item, Mapping):
            problems.append(
                f"{where} is {item!r}, not a quota (a mapping: user and/or client_id, and the quotas it sets)."
            )
            continue
        key = entity_key(item)
        if not key:
            problems.append(
                f"{where} names no entity: set user (a user kafka_users declares, or '{DEFAULT_ENTITY}' for every "
                f"user without one of their own), client_id (a client id, or '{DEFAULT_ENTITY}'), or both."
            )
        else:
            where = f"{where} ({entity_label(key)})"
        unknown_keys = sorted(set(item) - set(QUOTA_ENTRY_KEYS), key=str)
        for unknown in unknown_keys:
            close = difflib.get_close_matches(str(unknown), QUOTA_ENTRY_KEYS, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(QUOTA_ENTRY_KEYS)}."
            problems.append(f"{where}: {unknown} is not a quota key; {hint}")
        state = str(item.get("state") or "present")
        if state not in STATES:
            problems.append(f"{where}: state '{state}' is not one of {', '.join(STATES)}.")
        values: dict[str, float | int] = {}
        for name in QUOTA_KEYS:
            if name not in item:
                continue
            found = _quota_problems(where, name, item[name])
            problems += found
            if not found:
                number = float(_quota_value(item[name]) or 0)
                values[name] = int(number) if number.is_integer() else number
        user = item.get("user")
        if (
            key
            and state == "present"
            and user not in (None, "", DEFAULT_ENTITY)
            and (users.get(str(user)) or {}).get("state") != "present"
        ):
            problems.append(
                f"{where}: user {user} is not a user kafka_users declares (present): declare the user, fix the name, "
                f"or write '{DEFAULT_ENTITY}' for every user without a quota of their own."
            )
        # A misspelt quota key is refused above; "sets no quota" would only repeat it.
        if key and state == "present" and not unknown_keys and not any(n in item for n in QUOTA_KEYS):
            problems.append(
                f"{where} sets no quota: give at least one of {', '.join(QUOTA_KEYS)}, or state: absent to remove "
                "the quotas it has."
            )
        if key in seen:
            problems.append(
                f"{where}: the same entity as kafka_quotas[{seen[key]}]; declare each entity once, with all its quotas."
            )
        elif key:
            seen[key] = index
        quotas.append(
            {
                "user": None if user in (None, "") else str(user),
                "client_id": None if item.get("client_id") in (None, "") else str(item["client_id"]),
                "values": values,
                "state": state,
            }
        )
    return quotas


def kafka_sasl_settings(
    model: Mapping[str, Any],
    users: Any,
    admin_user: str,
    broker_user: str,
    authorizer: Any,
    acls: Any,
    quotas: Any = None,
) -> dict[str, Any]:
    """What the inventory asks for, checked: users by name (no passwords), ACLs and quotas normalized, and the
    problems."""
    problems: list[str] = []
    sasl_listeners = list(model.get("sasl_listeners") or [])
    declared = _users(users, problems)
    checked_acls = _acls(acls, declared, problems)
    checked_quotas = _quotas(quotas, declared, problems)
    authorizer = str(authorizer).lower() in ("true", "yes", "1", "on")
    inter_broker_sasl = str(model.get("inter_broker_listener_name") or "") in sasl_listeners
    if sasl_listeners:
        names = ", ".join(sasl_listeners)
        for variable, user, role in (
            ("kafka_admin_user", admin_user, "applies the topics, users and ACLs and runs the admin tools"),
            *(
                [("kafka_broker_user", broker_user, "the brokers log in as on the inter-broker listener")]
                if inter_broker_sasl
                else []
            ),
        ):
            if (declared.get(user) or {}).get("state") != "present":
                problems.append(
                    f"listener(s) {names} run SASL_SSL, and {variable} is '{user}', which kafka_users does not declare "
                    f"(present, with a password): declare it in kafka_users (the user that {role})."
                )
    else:
        if declared:
            problems.append(
                "kafka_users declares users, but no listener in kafka_listeners runs SASL_SSL: nobody could log in as "
                "them. Set a listener's protocol to SASL_SSL, or drop kafka_users."
            )
        if authorizer or checked_acls:
            problems.append(
                "kafka_authorizer / kafka_acls need a listener whose clients log in (protocol SASL_SSL in "
                "kafka_listeners): without one every client is User:ANONYMOUS and the ACLs could not tell them apart."
            )
    # KRaft: the brokers register with the controllers on this listener; {} in ZooKeeper mode.
    controller = model.get("controller_listener") or {}
    mutual_tls = (controller.get("protocol"), controller.get("client_auth")) == ("SSL", "required")
    if authorizer and sasl_listeners and controller and not mutual_tls:
        how = "runs PLAINTEXT" if controller.get("protocol") != "SSL" else "asks for no client certificate"
        problems.append(
            f"kafka_authorizer is true, but kafka_controller_listener ({controller.get('name')}) {how}: the brokers "
            "register and send their heartbeats to the controllers there as User:ANONYMOUS, which the authorizer "
            "refuses, so no broker would ever start serving. Run it on protocol SSL with client_auth required "
            f"(SSL's default: every node's certificate is User:{NODE_PRINCIPAL}, a super user), or set "
            "kafka_authorizer: false."
        )
    inter_broker = str(model.get("inter_broker_listener_name") or "")
    inter_broker_mutual_tls = dict(model.get("tls_listeners") or {}).get(inter_broker) == "required"
    if authorizer and sasl_listeners and not inter_broker_sasl and not inter_broker_mutual_tls:
        problems.append(
            f"kafka_authorizer is true, but the inter-broker listener ({inter_broker}) runs "
            f"{model.get('inter_broker_protocol') or 'PLAINTEXT'} without a login or a client certificate: the brokers "
            "replicate there as User:ANONYMOUS, which the authorizer refuses, so no partition would stay in sync. Run "
            "it on SASL_SSL (the brokers log in as kafka_broker_user) or on SSL with client_auth: required, or set "
            "kafka_authorizer: false."
        )
    if checked_acls and not authorizer:
        problems.append(
            "kafka_acls declares ACLs, but kafka_authorizer is false: nothing would enforce them. Set "
            "kafka_authorizer: true."
        )
    if str(admin_user) == str(broker_user) and inter_broker_sasl:
        problems.append(
            f"kafka_admin_user and kafka_broker_user are both '{admin_user}': give the brokers a user of their own."
        )
    return {
        "sasl": bool(sasl_listeners),
        "sasl_listeners": sasl_listeners,
        "inter_broker_sasl": inter_broker_sasl,
        "authorizer": bool(authorizer and sasl_listeners),
        "admin_user": str(admin_user),
        "broker_user": str(broker_user),
        "users": declared,
        "acls": checked_acls,
        "quotas": checked_quotas,
        "problems": problems,
    }


def kafka_sasl_server_properties(
    security: Mapping[str, Any], model: Mapping[str, Any], secrets_file: str
) -> dict[str, Any]:
    """The SASL, config-provider and authorizer properties of every node ({} when no listener runs SASL_SSL).

    The JAAS entry's password is `${file:<secrets_file>:broker.password}`: Kafka resolves it when the node starts,
    so server.properties (and its diffs) hold no secret."""
    if not security.get("sasl"):
        return {}
    props = {
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    }
    login = jaas(str(security["broker_user"]), f"${{file:{secrets_file}:broker.password}}")
    for name in security.get("sasl_listeners") or []:
        prefix = f"listener.name.{name.lower()}."
        props[prefix + "sasl.enabled.mechanisms"] = MECHANISM
        props[prefix + MECHANISM.lower() + ".sasl.jaas.config"] = login
    if security.get("inter_broker_sasl"):
        props["sasl.mechanism.inter.broker.protocol"] = MECHANISM
    if security.get("authorizer"):
        supers = [str(security["admin_user"]), str(security["broker_user"]), NODE_PRINCIPAL]
        props.update(
            {
                "authorizer.class.name": AUTHORIZER,
                "allow.everyone.if.no.acl.found": "false",
                "super.users": ";".join(f"User:{name}" for name in dict.fromkeys(supers)),
                # A node's certificate says CN=<inventory name>: on the mutual-TLS controller listener every node
                # is User:kafka-node (NODE_PRINCIPAL), not its whole distinguished name.
                "ssl.principal.mapping.rules": f"RULE:^CN=[^,]+$/{NODE_PRINCIPAL}/,DEFAULT",
            }
        )
    return props


def kafka_sasl_client_properties(security: Mapping[str, Any], users: Any, listener: str) -> dict[str, str]:
    """The admin's login for a client of `listener` ({} unless it runs SASL_SSL): merged over the TLS settings
    (kafka_tls_client_properties). Holds a password: write it 0600, in a no_log task."""
    if listener not in (security.get("sasl_listeners") or []):
        return {}
    return scram_login(users, security["admin_user"])


def kafka_admin_endpoint(security: Mapping[str, Any], model: Mapping[str, Any]) -> dict[str, str]:
    """Where the controller machine logs in as the admin (tasks/admin_password.yml): the inter-broker listener when
    it runs SASL_SSL, else the first SASL_SSL listener that is not behind NAT; its name, bootstrap servers and the
    client settings file the kafka role writes for it (listener_client_configs). {} when there is none."""
    sasl = list(security.get("sasl_listeners") or [])
    configs = dict(model.get("listener_client_configs") or {})
    inter_broker = str(model.get("inter_broker_listener_name") or "")
    for name in [inter_broker, *sorted(sasl)] if inter_broker in sasl else sorted(sasl):
        servers = []
        for _host, node in sorted((model.get("nodes") or {}).items()):
            item = next((li for li in node.get("listeners") or [] if li.get("name") == name), None)
            if "broker" not in (node.get("roles") or []):
                continue
            if item is None or item.get("external"):
                break
            servers.append(f"{item['advertised_host']}:{item['advertised_port']}")
        else:
            if servers and name in configs:
                return {"listener": name, "bootstrap": ",".join(servers), "config": configs[name]}
    return {}


def kafka_sasl_secrets(security: Mapping[str, Any], users: Any) -> dict[str, str]:
    """The node's secrets file (what `${file:...}` reads): the broker user's password ({} without SASL)."""
    if not security.get("sasl"):
        return {}
    return {"broker.password": password_of(users, str(security["broker_user"]))}


def kafka_broker_password_changes(security: Mapping[str, Any], users: Any, secrets_now: str) -> bool:
    """Whether the node's secrets file (its text now) holds another broker password than kafka_users gives."""
    now = parse_properties(secrets_now).get("broker.password")
    return now is not None and now != kafka_sasl_secrets(security, users).get("broker.password")


def kafka_scram_format_args(security: Mapping[str, Any], users: Any, iterations: Any) -> list[str]:
    """`kafka-storage format` arguments that put the admin and the broker user into the first metadata."""
    if not security.get("sasl"):
        return []
    args = []
    for name in dict.fromkeys([str(security["admin_user"]), str(security["broker_user"])]):
        if (security.get("users") or {}).get(name, {}).get("state") == "present":
            args += [
                "--add-scram",
                f"{MECHANISM}=[name={name},iterations={int(iterations)},password={password_of(users, name)}]",
            ]
    return args


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "kafka_sasl_settings": kafka_sasl_settings,
            "kafka_sasl_server_properties": kafka_sasl_server_properties,
            "kafka_sasl_client_properties": kafka_sasl_client_properties,
            "kafka_sasl_secrets": kafka_sasl_secrets,
            "kafka_admin_endpoint": kafka_admin_endpoint,
            "kafka_broker_password_changes": kafka_broker_password_changes,
            "kafka_scram_format_args": kafka_scram_format_args,
        }
