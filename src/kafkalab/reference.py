"""docs/variables.md, written from every role's meta/argument_specs.yml: the one variables reference.

    python -m kafkalab.reference > docs/variables.md

The specs are what the preflight checks every inventory against (plugins/plugin_utils/variables.py) and what
tests/unit/test_role_specs.py keeps in step with each role's defaults, so a reference written from them cannot
drift from what the roles accept; tests/unit/test_reference.py fails when the committed page is not this output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HEADER = """# Variables reference

Written by `python -m kafkalab.reference > docs/variables.md` from each role's `meta/argument_specs.yml`;
`tests/unit/test_reference.py` fails when this page and the specs differ. The preflight checks every host's
variables against the `main` entry points before any host is changed (types, choices, misspelt names). Roles
are called by their fully qualified names, `kafkalab.kafka.<role>`.
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(spec: Mapping[str, Any]) -> str:
    if "default" not in spec:
        return "required" if spec.get("required") else ""
    value = spec["default"]
    shown = value if isinstance(value, str) else json.dumps(value)
    return f"`{_cell(shown)}`" if shown != "" else '`""`'


def _type(spec: Mapping[str, Any]) -> str:
    kind = str(spec.get("type", "str"))
    if kind == "list" and spec.get("elements"):
        kind = f"list of {spec['elements']}"
    if spec.get("choices"):
        kind += " (" + ", ".join(str(c) for c in spec["choices"]) + ")"
    return kind


def _description(spec: Mapping[str, Any]) -> str:
    text = spec.get("description", "")
    return _cell(" ".join(text) if isinstance(text, list) else str(text))


def role_section(role: str, specs: Mapping[str, Any]) -> list[str]:
    lines = [f"## `kafkalab.kafka.{role}`", ""]
    main = specs.get("main") or {}
    if main.get("short_description"):
        lines += [_cell(str(main["short_description"])), ""]
    options = main.get("options") or {}
    if options:
        lines += ["| variable | type | default | what it does |", "| --- | --- | --- | --- |"]
        for name in sorted(options):
            spec = options[name]
            lines.append(f"| `{name}` | {_type(spec)} | {_default(spec)} | {_description(spec)} |")
        lines.append("")
    others = [name for name in specs if name != "main"]
    if others:
        lines += ["Entry points besides `main` (`tasks_from`), with the variables each reads:", ""]
        for name in sorted(others):
            entry = specs[name] or {}
            read = ", ".join(f"`{o}`" for o in sorted(entry.get("options") or {})) or "none of its own"
            summary = _cell(str(entry.get("short_description", ""))).rstrip(".")
            lines.append(f"- `{name}`: {summary}. Reads: {read}.")
        lines.append("")
    return lines


def render(root: Path = ROOT) -> str:
    lines = [HEADER]
    for path in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        specs = (yaml.safe_load(path.read_text()) or {}).get("argument_specs") or {}
        lines += role_section(path.parent.parent.name, specs)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
