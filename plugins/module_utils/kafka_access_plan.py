"""The plan for SCRAM users, ACLs and client quotas: declared against what the cluster holds (pure; the module
kafka_access applies it).

Users: a declared user (state present) is created when the cluster has no SCRAM-SHA-512 credential for it, and
its password set again when the iterations differ or the password is not the one this project last set. Kafka
keeps only a salted key, never the password, so "last set" is remembered on the controller machine as a keyed
hash per user (`password_mark`, in a 0600 file beside the project CA): a password changed in the inventory is
set, an unchanged one is left alone (nothing changes on a second run). A user marked absent is deleted; users the
inventory does not name are left alone.

ACLs: a declared ACL (present) is created when missing, one marked absent deleted when there; ACLs the inventory
does not name are left alone (as topics are).

Quotas: a declared entity (a user, a client id, both, or '<default>' of either) gets exactly the quotas it names of
the four Kafka keeps (QUOTA_KEYS): a key it no longer names is removed, an entity declared absent loses all four.
Entities the inventory does not name are left alone.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

MECHANISM = "SCRAM-SHA-512"
ACL_FIELDS = ("principal", "resource_type", "name", "pattern_type", "operation", "permission", "host")


def password_mark(key: str, user: str, password: str) -> str:
    """What the controller machine remembers of a password it set: HMAC-SHA256 under a random key of its own."""
    return hmac.new(key.encode(), f"{user}\0{password}".encode(), hashlib.sha256).hexdigest()


def plan_users(
    declared: Iterable[Mapping[str, Any]],
    current: Mapping[str, Mapping[str, int]],
    marks: Mapping[str, str],
    key: str,
    iterations: int,
) -> dict[str, list[str]]:
    """current: user -> {mechanism: iterations} as the cluster describes them. Returns users to create, to set
    again (password or iterations) and to delete, by name."""
    actions: dict[str, list[str]] = {"create": [], "update": [], "delete": []}
    for user in declared:
        name = str(user["name"])
        if str(user.get("state") or "present") == "absent":
            if name in current:
                actions["delete"].append(name)
            continue
        held = current.get(name, {})
        if MECHANISM not in held:
            actions["create"].append(name)
        elif held[MECHANISM] != iterations or marks.get(name) != password_mark(key, name, str(user["password"])):
            actions["update"].append(name)
    return actions


def user_acl(user: str, resource_type: str, name: str, operation: str, pattern_type: str = "literal") -> dict[str, str]:
    """One allow ACL for a service's own Kafka user, in the normalized form kafka_access takes (any host)."""
    return {
        "principal": f"User:{user}",
        "resource_type": resource_type,
        "name": name,
        "pattern_type": pattern_type,
        "operation": operation,
        "permission": "allow",
        "host": "*",
        "state": "present",
    }


def pattern_acls(
    user: str, resource_type: str, patterns: Iterable[str], operations: Iterable[str]
) -> list[dict[str, str]]:
    """user_acl for each operation on each resource the inventory names: a name, or a prefix when it ends in *."""
    acls = []
    for pattern in patterns:
        prefixed = pattern.endswith("*")
        name = pattern[:-1] if prefixed else pattern
        acls += [user_acl(user, resource_type, name, op, "prefixed" if prefixed else "literal") for op in operations]
    return acls


def acl_key(acl: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(acl[field]) for field in ACL_FIELDS)


def plan_acls(
    declared: Iterable[Mapping[str, Any]], current: Iterable[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """declared: normalized ACLs (filter_plugins/kafka_sasl.py: lower-case types, host '*' by default, state);
    current: the cluster's, in the same fields."""
    held = {acl_key(acl) for acl in current}
    actions: dict[str, list[dict[str, Any]]] = {"create": [], "delete": []}
    for acl in declared:
        there = acl_key(acl) in held
        if str(acl.get("state") or "present") == "absent":
            if there:
                actions["delete"].append(dict(acl))
        elif not there and acl_key(acl) not in {acl_key(a) for a in actions["create"]}:
            actions["create"].append(dict(acl))
    return actions


def describe_acl(acl: Mapping[str, Any]) -> str:
    pattern = "" if acl["pattern_type"] == "literal" else f" ({acl['pattern_type']})"
    return (
        f"{acl['permission']} {acl['principal']} {acl['operation']} on {acl['resource_type']} "
        f"{acl['name']}{pattern} from {acl['host']}"
    )


def describe(users: Mapping[str, list[str]], acls: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    lines = [f"create user {n}" for n in users["create"]]
    lines += [f"set the password of user {n}" for n in users["update"]]
    lines += [f"delete user {n}" for n in users["delete"]]
    lines += [f"add ACL: {describe_acl(a)}" for a in acls["create"]]
    lines += [f"remove ACL: {describe_acl(a)}" for a in acls["delete"]]
    return lines


# --- Client quotas -----------------------------------------------------------------------------------------------
# The four quota keys Kafka keeps for users and client ids (QuotaConfig). The byte rates are whole bytes per
# second per broker, request_percentage a share of one I/O and network thread (100 = one whole thread) per broker,
# controller_mutation_rate partitions created or deleted per second.
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
WHOLE_QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate")
# How the inventory names the default entity (Kafka's own tools say <default> too; on the wire it is a null name).
DEFAULT_ENTITY = "<default>"
# The inventory's entity fields and Kafka's entity types, in the order a label names them.
ENTITY_TYPES = (("user", "user"), ("client_id", "client-id"))

# A string: the `|` of the annotation is not evaluated (the hosts' older Pythons, and pylint for them, lack it).
EntityKey: TypeAlias = "tuple[tuple[str, str | None], ...]"


def entity_key(quota: Mapping[str, Any]) -> EntityKey:
    """A quota entity as Kafka identifies it: (entity type, name or None for the default) pairs, sorted by type.

    quota: a declaration (user and/or client_id, '<default>' for the default)."""
    pairs = []
    for field, kind in ENTITY_TYPES:
        name = quota.get(field)
        if name is not None and str(name) != "":
            pairs.append((kind, None if str(name) == DEFAULT_ENTITY else str(name)))
    return tuple(sorted(pairs))


def entity_label(key: EntityKey) -> str:
    """user=alice, client-id=<default>, user=alice,client-id=app: how the plan, the diff and the refusals name it."""
    order = {kind: index for index, (_field, kind) in enumerate(ENTITY_TYPES)}
    return ",".join(
        f"{kind}={DEFAULT_ENTITY if name is None else name}" for kind, name in sorted(key, key=lambda p: order[p[0]])
    )


def quota_number(value: float) -> str:
    """20480, not 20480.0 (Kafka hands every quota back as a double)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def plan_quotas(
    declared: Iterable[Mapping[str, Any]], current: Mapping[EntityKey, Mapping[str, float]]
) -> list[dict[str, Any]]:
    """declared: normalized quotas (filter kafka_sasl_settings: user, client_id, values, state); current: entity ->
    {key: value} as the cluster describes them. Returns the changed entities, each with the keys to set and remove
    and its quotas before and after (of the four keys this project manages).

    A present entity's declaration is authoritative for the four keys: a key it no longer names is removed. An
    entity declared absent loses all four. Entities the inventory does not name are left alone."""
    changes = []
    for quota in declared:
        key = entity_key(quota)
        before = {k: float(v) for k, v in (current.get(key) or {}).items() if k in QUOTA_KEYS}
        if str(quota.get("state") or "present") == "absent":
            after: dict[str, float] = {}
        else:
            after = {k: float(v) for k, v in (quota.get("values") or {}).items() if k in QUOTA_KEYS}
        to_set = {k: v for k, v in sorted(after.items()) if before.get(k) != v}
        to_remove = sorted(set(before) - set(after))
        if to_set or to_remove:
            changes.append(
                {
                    "entity": [{"type": kind, "name": name} for kind, name in key],
                    "label": entity_label(key),
                    "set": to_set,
                    "remove": to_remove,
                    "before": dict(sorted(before.items())),
                    "after": dict(sorted(after.items())),
                }
            )
    return changes


def describe_quotas(changes: Iterable[Mapping[str, Any]]) -> list[str]:
    lines = []
    for change in changes:
        before = change["before"]
        for key, value in change["set"].items():
            was = f" (was {quota_number(before[key])})" if key in before else ""
            lines.append(f"set quota {change['label']}: {key}={quota_number(value)}{was}")
        for key in change["remove"]:
            lines.append(f"remove quota {change['label']}: {key} (was {quota_number(before[key])})")
    return lines


def quotas_diff(changes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Ansible's --diff of the changed entities: one line per quota, before and after."""
    sides: dict[str, list[str]] = {"before": [], "after": []}
    for change in changes:
        for side in sides:
            sides[side] += [f"{change['label']}: {k}={quota_number(v)}" for k, v in change[side].items()]
    return {side: "".join(f"{line}\n" for line in lines) for side, lines in sides.items()}
