"""Every role documents each default in meta/argument_specs.yml with the same value, so the two cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = sorted(
    p for p in (Path(__file__).resolve().parents[2] / "roles").iterdir() if (p / "defaults/main.yml").exists()
)


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_argument_specs_match_defaults(role: Path) -> None:
    defaults = yaml.safe_load((role / "defaults/main.yml").read_text()) or {}
    options = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert sorted(set(defaults) - set(options)) == [], "defaults missing from argument_specs"
    for name, value in defaults.items():
        assert options[name].get("default") == value, name
        assert options[name].get("description"), name
        assert name == role.name or name.startswith(role.name + "_"), f"{name} lacks the role prefix"


ROOT = Path(__file__).resolve().parents[2]
# The entry point's name as Ansible looks it up in argument_specs: without .yml (a call with the suffix finds the
# file but no spec, so its validation task never runs).
TASKS_FROM = re.compile(r"name: (?:kafkalab\.kafka\.)?([a-z_]+)\s*\n\s*tasks_from: ([a-z_.]+)")


def _entry_points_called() -> set[tuple[str, str]]:
    called = set()
    for path in ROOT.glob("**/*.yml"):
        if any(part in {".venv", ".cache", "collections"} for part in path.relative_to(ROOT).parts):
            continue
        called |= set(TASKS_FROM.findall(path.read_text()))
    return called


def test_every_entry_point_any_playbook_or_role_calls_is_declared_in_its_argument_specs() -> None:
    called = _entry_points_called()
    assert ("kafka", "preflight") in called  # the pattern still finds the calls
    suffixed = sorted(f"{role}: {entry}" for role, entry in called if entry.endswith(".yml"))
    assert suffixed == [], "name the entry point without .yml (tasks_from: preflight), as argument_specs does"
    declared = {
        spec.parent.parent.name: yaml.safe_load(spec.read_text())["argument_specs"]
        for spec in (ROOT / "roles").glob("*/meta/argument_specs.yml")
    }
    undeclared = sorted(f"{role}: {entry}" for role, entry in called if entry not in declared[role])
    assert undeclared == [], "declare these entry points (tasks_from) in the role's meta/argument_specs.yml"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_an_entry_points_variables_are_the_roles_own_with_mains_specs(role: Path) -> None:
    specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
    main = specs["main"]["options"]
    for entry, spec in specs.items():
        for name, option in (spec.get("options") or {}).items():
            if entry != "main" and name in main:
                assert option == main[name], f"{entry}: {name} differs from main's spec"


def test_the_day2_roles_variables_are_the_kafka_roles_with_the_same_types() -> None:
    """kafka_ops has no settings of its own: each option it declares is the kafka role's, typed the same."""
    kafka_specs = yaml.safe_load((ROOT / "roles/kafka/meta/argument_specs.yml").read_text())["argument_specs"]
    kafka = kafka_specs["main"]["options"]
    ops = yaml.safe_load((ROOT / "roles/kafka_ops/meta/argument_specs.yml").read_text())["argument_specs"]
    assert "main" not in ops and not (ROOT / "roles/kafka_ops/defaults").exists()
    assert {"rolling_restart", "rotate_certificates", "rotate_ca_finish", "upgrade_plan", "reassign"} <= set(ops)
    for entry, spec in ops.items():
        for name, option in (spec.get("options") or {}).items():
            assert name in kafka, f"{entry}: {name} is not a setting of the kafka role"
            for key in ("type", "elements", "choices"):
                assert option.get(key) == kafka[name].get(key), f"{entry}: {name}'s {key} differs from the kafka role's"


def test_each_day2_entry_point_loads_the_kafka_roles_settings_first() -> None:
    for path in sorted((ROOT / "roles/kafka_ops/tasks").glob("*.yml")):
        tasks = yaml.safe_load(path.read_text())
        first = tasks[0].get("ansible.builtin.include_role") or {}
        if path.stem == "rotate_ca_trust":  # included by rotate_certificates, after it loaded them
            continue
        assert first.get("name") == "kafkalab.kafka.kafka", path.name
        assert first.get("tasks_from") in {"identity", "settings"} and first.get("public") is True, path.name
