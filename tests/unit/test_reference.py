"""docs/variables.md is the output of `python -m kafkalab.reference`: the reference cannot drift from the specs."""

from __future__ import annotations

from pathlib import Path

from kafkalab.reference import ROOT, render


def test_the_committed_variables_reference_is_written_from_the_argument_specs() -> None:
    committed = (ROOT / "docs" / "variables.md").read_text()
    assert committed == render(), "docs/variables.md is stale: run `python -m kafkalab.reference > docs/variables.md`"


def test_every_role_variable_has_a_row(tmp_path: Path) -> None:
    page = render()
    for spec in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        import yaml

        options = (yaml.safe_load(spec.read_text())["argument_specs"].get("main") or {}).get("options") or {}
        for name in options:
            assert f"| `{name}` |" in page, name
