"""Subjects as code: what the schema_registry_subjects module does, worked out from what the registry holds.

Pure functions over plain data (no HTTP), unit tested in tests/unit/test_schema_registry_plan.py; the module reads
the registry (Apicurio Registry 3.0.x through its Confluent-compatible API), calls plan() and runs the steps in
the order steps() gives. The promises:
- only declared subjects are touched; a subject is deleted only when declared `state: absent`;
- a subject's compatibility level, and the global one, change only when declared and different;
- a schema is registered only when its exact text is not already a version of the subject, and never before
  every declared subject's new version was found compatible under the level in force when it is registered;
- a new version is checked under the declared level, so a subject's level is set before its new version is
  registered, except for a subject without versions: Apicurio 3.0.9 refuses a subject-level NONE for a subject
  that does not exist yet (404, error_code 40401), and a first version has nothing to be checked against.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
TYPES = ("AVRO", "JSON", "PROTOBUF")
STATES = ("present", "absent")
FIELDS = {"name", "schema", "type", "compatibility", "state"}

# The rule each level enforces, as the failure message states it.
RULES = {
    "BACKWARD": "consumers using the new schema must read data written with the latest version",
    "BACKWARD_TRANSITIVE": "consumers using the new schema must read data written with every earlier version",
    "FORWARD": "consumers using the latest version must read data written with the new schema",
    "FORWARD_TRANSITIVE": "consumers using every earlier version must read data written with the new schema",
    "FULL": "the new schema and the latest version must each read data written with the other",
    "FULL_TRANSITIVE": "the new schema and every earlier version must each read data written with the other",
}
ADVICE = (
    "Nothing was registered. Make the change compatible (e.g. give a new field a default, keep removed fields' "
    "defaults) or change the subject's compatibility declaration deliberately."
)


@dataclass(frozen=True)
class Declared:
    """One declared subject, defaults applied."""

    name: str
    state: str = "present"
    schema: str = ""
    type: str = "AVRO"
    compatibility: str | None = None


@dataclass(frozen=True)
class Current:
    """What the registry holds for one subject.

    versions: its active versions; all_versions: with the soft-deleted ones (a new version takes the next number
    after all of them); own_level: its own compatibility level, None when it has none (then the global one
    applies); schema_type: the type of its latest version; match: {"version": n, "id": i} when the declared schema
    text is already an active version of it.
    """

    versions: tuple[int, ...] = ()
    all_versions: tuple[int, ...] = ()
    own_level: str | None = None
    schema_type: str | None = None
    match: Mapping[str, int] | None = None


@dataclass
class SubjectPlan:
    """What to do for one subject. check_level: the level a new version must be checked under (None: no check,
    because the subject has no versions or the level is NONE); check_now: that level is already in force, so the
    registry can check before anything changes."""

    name: str
    state: str
    before: Current
    set_level: tuple[str | None, str] | None = None
    register: bool = False
    next_version: int | None = None
    check_level: str | None = None
    check_now: bool = True
    level_source: str = ""
    delete: bool = False
    delete_permanent_only: bool = False


@dataclass
class Plan:
    global_level: tuple[str, str] | None
    subjects: list[SubjectPlan] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.global_level is not None or any(
            s.set_level or s.register or s.delete or s.delete_permanent_only for s in self.subjects
        )


def schema_text(schema: Any) -> str:
    """The schema as the text registered. A dict or list (YAML, or a JSON string Ansible turned into data) is
    written as compact JSON; text is kept exactly, because the registry compares the exact text."""
    if isinstance(schema, (dict, list)):
        return json.dumps(schema, separators=(",", ":"))
    return "" if schema is None else str(schema)


def normalise(raw: Mapping[str, Any]) -> Declared:
    level = raw.get("compatibility")
    return Declared(
        name=str(raw.get("name") or ""),
        state=str(raw.get("state") or "present"),
        schema=schema_text(raw.get("schema")),
        type=str(raw.get("type") or "AVRO").upper(),
        compatibility=str(level).upper() if level else None,
    )


def check(declared: Sequence[Mapping[str, Any]], global_level: str | None = None) -> list[str]:
    """Every problem in the declaration itself, each naming the subject and field. Empty means valid."""
    problems: list[str] = []
    if global_level and global_level.upper() not in LEVELS:
        problems.append(f"compatibility '{global_level}' must be one of {', '.join(LEVELS)} (or empty).")
    seen: set[str] = set()
    for index, raw in enumerate(declared):
        where = f"subjects[{index}]"
        unknown = sorted(set(raw) - FIELDS)
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(FIELDS))}.")
        subject = normalise(raw)
        if not subject.name.strip():
            problems.append(f"{where}: name is required.")
            continue
        where = f"subject '{subject.name}'"
        if subject.name in seen:
            problems.append(f"{where}: declared more than once.")
        seen.add(subject.name)
        if subject.state not in STATES:
            problems.append(f"{where}: state '{subject.state}' must be present or absent.")
            continue
        if subject.state == "absent":
            continue
        if subject.type not in TYPES:
            problems.append(f"{where}: type '{subject.type}' must be one of {', '.join(TYPES)}.")
        if subject.compatibility is not None and subject.compatibility not in LEVELS:
            problems.append(f"{where}: compatibility '{subject.compatibility}' must be one of {', '.join(LEVELS)}.")
        if not subject.schema.strip():
            problems.append(f"{where}: schema is required when state is present.")
        elif subject.type in ("AVRO", "JSON"):
            try:
                json.loads(subject.schema)
            except ValueError as exc:
                problems.append(f"{where}: schema is not valid JSON ({exc}); {subject.type} schemas are JSON text.")
    return problems


def plan(
    declared: Sequence[Mapping[str, Any]],
    current: Mapping[str, Current],
    global_now: str,
    global_declared: str | None,
) -> tuple[Plan, list[str]]:
    """The changes from `current` to `declared`, and the declared changes that cannot be made.

    current: name -> Current for every declared subject (a Current() for one the registry does not know).
    """
    global_after = global_declared.upper() if global_declared else global_now
    result = Plan(global_level=(global_now, global_after) if global_after != global_now else None)
    refusals: list[str] = []
    for raw in declared:
        subject = normalise(raw)
        have = current.get(subject.name, Current())
        item = SubjectPlan(name=subject.name, state=subject.state, before=have)
        result.subjects.append(item)
        if subject.state == "absent":
            item.delete = bool(have.versions)
            item.delete_permanent_only = not have.versions and bool(have.all_versions)
            continue
        if have.versions and have.schema_type and have.schema_type.upper() != subject.type:
            refusals.append(
                f"subject '{subject.name}': declared type {subject.type}, but its versions are {have.schema_type}; "
                "a subject holds one type. Declare its type, or delete the subject (state: absent) first."
            )
            continue
        if subject.compatibility and subject.compatibility != have.own_level:
            item.set_level = (have.own_level, subject.compatibility)
        item.register = have.match is None
        if not item.register:
            continue
        item.next_version = max(have.all_versions, default=0) + 1
        if not have.versions:
            continue  # a first version is checked against nothing
        level_now = have.own_level or global_now
        if subject.compatibility:
            level, item.level_source = subject.compatibility, "declared for this subject"
        elif have.own_level:
            level, item.level_source = have.own_level, "the subject's own"
        else:
            level, item.level_source = global_after, "the global level; the subject has none of its own"
        if level != "NONE":
            item.check_level = level
            item.check_now = level == level_now
    return result, refusals


def steps(result: Plan) -> list[tuple[str, ...]]:
    """The changes in the order to make them: the global level first (it is in force for subjects without
    their own), then each subject in declaration order: its level before its new version, except for a subject
    without versions (the version first: see the module docstring), and deletions.

    Each step is ("global", old, new), ("level", subject, old or "", new), ("register", subject),
    ("delete", subject) (soft, then permanent) or ("purge", subject) (permanent only).
    """
    out: list[tuple[str, ...]] = []
    if result.global_level:
        out.append(("global", *result.global_level))
    for s in result.subjects:
        level = ("level", s.name, s.set_level[0] or "", s.set_level[1]) if s.set_level else None
        if s.delete:
            out.append(("delete", s.name))
        elif s.delete_permanent_only:
            out.append(("purge", s.name))
        elif s.before.versions:
            out += [x for x in (level, ("register", s.name) if s.register else None) if x]
        else:
            out += [x for x in (("register", s.name) if s.register else None, level) if x]
    return out


def level_text(own: str | None, global_level: str) -> str:
    return own if own else f"(global {global_level})"


def describe_step(result: Plan, step: tuple[str, ...], global_now: str) -> str:
    """The line that says what one step of steps(result) changes."""
    kind, name = step[0], step[1]
    item = next((s for s in result.subjects if s.name == name), None)
    if kind == "global":
        return f"global compatibility {step[1]} -> {step[2]}"
    if kind == "level":
        return f"{name}: compatibility {level_text(step[2] or None, global_now)} -> {step[3]}"
    if item is None:
        raise ValueError(f"step {step} names no planned subject")
    if kind == "register":
        return f"{name}: register version {item.next_version}"
    if kind == "delete":
        return f"{name}: delete (versions {_versions(item.before.all_versions)})"
    return f"{name}: delete permanently (soft-deleted versions {_versions(item.before.all_versions)})"


def describe(result: Plan, global_now: str) -> list[str]:
    """One line per change, in the order they are made."""
    return [describe_step(result, step, global_now) for step in steps(result)]


def registered(name: str, version: int, ident: int) -> str:
    return f"{name}: registered version {version} (id {ident})"


def _versions(versions: Iterable[int]) -> str:
    listed = ", ".join(str(v) for v in sorted(versions))
    return listed or "none"


def diff(result: Plan, global_now: str) -> dict[str, str]:
    """Before/after text: the global level, and each declared subject's level and versions."""
    global_after = result.global_level[1] if result.global_level else global_now

    def text(after: bool) -> str:
        lines = [f"global compatibility: {global_after if after else global_now}"]
        for s in result.subjects:
            versions = list(s.before.versions)
            own = s.before.own_level
            if after:
                if s.state == "absent":
                    lines.append(f"{s.name}: (absent)")
                    continue
                own = s.set_level[1] if s.set_level else own
                if s.register and s.next_version:
                    versions.append(s.next_version)
            elif not versions:
                gone = s.before.all_versions
                lines.append(f"{s.name}: (soft-deleted versions {_versions(gone)})" if gone else f"{s.name}: (absent)")
                continue
            level = level_text(own, global_after if after else global_now)
            lines.append(f"{s.name}: compatibility {level}; versions {_versions(versions)}")
        return "\n".join(lines) + "\n"

    return {"before": text(False), "after": text(True)}


def incompatible(item: SubjectPlan, latest: int | None, registry_says: Mapping[str, Any] | None) -> str:
    """Why a declared schema cannot be registered: the subject, the version it would have become, the level in
    force and its rule, the registry's reasons (the native API's dry run: detail and causes), what to do."""
    level = item.check_level or "NONE"
    reasons = ""
    if registry_says:
        detail = str(registry_says.get("detail") or registry_says.get("title") or registry_says.get("message") or "")
        causes = [
            f"{c.get('description', '')} at {c.get('context', '')}".strip()
            for c in registry_says.get("causes") or []
            if isinstance(c, Mapping)
        ]
        if detail:
            reasons = f" The registry says: {detail}"
        if causes and not all(c in detail for c in causes):
            reasons += f" (causes: {'; '.join(causes)})"
        reasons += "."
    versions = sorted(item.before.versions)
    if level.endswith("_TRANSITIVE") and len(versions) > 1:
        against = f" against versions {_versions(versions)}"
    else:
        against = f" against version {latest}" if latest else ""
    return (
        f"subject '{item.name}': the declared schema would be version {item.next_version}, but it is not "
        f"{level} compatible{against} ({item.level_source}): {RULES.get(level, level)}.{reasons} {ADVICE}"
    )


def results(result: Plan, global_after: str) -> list[dict[str, Any]]:
    """The per-subject return value before the changes are made (the module fills in registered ids)."""
    out: list[dict[str, Any]] = []
    for s in result.subjects:
        if s.state == "absent":
            out.append({"name": s.name, "state": "absent", "version": None, "id": None, "compatibility": None})
            continue
        own = s.set_level[1] if s.set_level else s.before.own_level
        match = s.before.match or {}
        out.append(
            {
                "name": s.name,
                "state": "present",
                "version": match.get("version", s.next_version),
                "id": match.get("id"),
                "compatibility": own or global_after,
            }
        )
    return out
