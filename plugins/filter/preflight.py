"""Filters for the controller preflight (playbooks/preflight.yml): every host's variables against the
roles' argument specs. The logic is in plugin_utils/variables.py; this loads the specs and routes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from ansible_collections.kafkalab.kafka.plugins.plugin_utils.variables import (
    CLUSTER_WIDE,
    MISSING,
    read,
    spread_problems,
    type_problems,
    unknown_problems,
)

# The collection's roles, beside plugins/: the same in a clone of the repository and in an installed collection,
# whichever playbook (the collection's own or the operator's) runs the preflight.
ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


def load_specs(roles_dir: Path = ROLES_DIR) -> dict[str, Any]:
    """role -> its meta/argument_specs.yml, for every role under roles_dir."""
    specs = {}
    for path in sorted(Path(roles_dir).glob("*/meta/argument_specs.yml")):
        specs[path.parent.parent.name] = yaml.safe_load(path.read_text()) or {}
    return specs


def inventory_variable_problems(
    hostvars: Mapping[str, Any],
    hosts: Iterable[str],
    groups: Mapping[str, Any],
    allow_unknown: bool = False,
) -> list[str]:
    """Every problem with the inventory's variables, before any host changes."""
    hosts = [h for h in hosts if h != "localhost"]
    specs = load_specs()
    controller_view = {}
    for name in CLUSTER_WIDE:
        value = read(hostvars, "localhost", name)
        if value is not MISSING:
            controller_view[name] = value
    problems = type_problems(hostvars, hosts, specs) + spread_problems(hostvars, groups, controller_view)
    if not allow_unknown:
        problems += unknown_problems(hostvars, hosts, specs)
    return problems


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"inventory_variable_problems": inventory_variable_problems}
