"""The inventory the cluster suites (tests/cluster, tests/spark_cluster) run against, and its hosts.

molecule sets MOLECULE_INVENTORY_FILE, the lab and `make verify` set KAFKALAB_INVENTORY. An empty
group is an error, never a silently skipped test. tests/conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner

from kafkalab.ansible_driver import group_hosts, list_inventory


def inventory_path() -> str:
    """The inventory to test: KAFKALAB_INVENTORY, or molecule's whole inventory directory.

    Under molecule, MOLECULE_INVENTORY_FILE names only the generated file; the directory around it
    also holds the linked group_vars, host_vars and the extra `hosts` source that nests groups.
    """
    if os.environ.get("KAFKALAB_INVENTORY"):
        return os.environ["KAFKALAB_INVENTORY"]
    if os.environ.get("MOLECULE_INVENTORY_FILE"):
        return os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    raise RuntimeError("set KAFKALAB_INVENTORY (or run under molecule) to point the suite at a cluster")


@cache
def runner() -> AnsibleRunner:
    """testinfra's view of the inventory, for the suites that read host variables (get_variables)."""
    return AnsibleRunner(inventory_path())


@cache
def inventory_listing() -> dict[str, Any]:
    """`ansible-inventory --list` of the inventory to test, read once per run."""
    return list_inventory(inventory_path())


def group(name: str) -> list[str]:
    """Hosts of an inventory group (its children's included), sorted; an empty group is an error."""
    hosts = sorted(group_hosts(inventory_listing(), name))
    if not hosts:
        raise RuntimeError(f"inventory {inventory_path()} has no hosts in group {name}")
    return hosts


def node(name: str) -> Any:
    """A testinfra host for an inventory host, reached the way Ansible reaches it."""
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory_path()}")
