"""The plan for SCRAM users and ACLs: declared against what the cluster holds (pure; the module applies it).

Users: a declared user (state present) is created when the cluster has no SCRAM-SHA-512 credential for it, and
its password set again when the iterations differ or the password is not the one this project last set. Kafka
keeps only a salted key, never the password, so "last set" is remembered on the controller machine as a keyed
hash per user (`password_mark`, in a 0600 file beside the project CA): a password changed in the inventory is
set, an unchanged one is left alone (nothing changes on a second run). A user marked absent is deleted; users the
inventory does not name are left alone.

ACLs: a declared ACL (present) is created when missing, one marked absent deleted when there; ACLs the inventory
does not name are left alone (as topics are).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any

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
