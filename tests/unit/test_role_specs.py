"""Every role documents each default in meta/argument_specs.yml with the same value, so the two cannot drift."""

from __future__ import annotations

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
