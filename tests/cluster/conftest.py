"""Fixtures for the cluster verification suite, run by molecule's testinfra verifier or by `make verify`.

The suite runs against whatever inventory it is given: molecule sets MOLECULE_INVENTORY_FILE, the
lab sets KAFKALAB_INVENTORY. Addresses and ports are read from the nodes' rendered configuration,
so the tests check what the cluster really advertises rather than what we meant it to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner


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
    return AnsibleRunner(inventory_path())


def group(name: str) -> list[str]:
    """Hosts of an inventory group; an empty group is an error, never a silently skipped test."""
    hosts = list(runner().get_hosts(name))
    if not hosts:
        raise RuntimeError(f"inventory {inventory_path()} has no hosts in group {name}")
    return hosts


def node(name: str) -> Any:
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory_path()}")


def read_properties(host: Any, path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in host.file(path).content_string.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def listener_address(props: dict[str, str], listener: str) -> str:
    for item in props.get("advertised.listeners", "").split(","):
        name, _, rest = item.partition("://")
        if name == listener:
            return rest
    raise KeyError(f"listener {listener} not in advertised.listeners={props.get('advertised.listeners')}")


@dataclass(frozen=True)
class Cluster:
    brokers: list[str]
    controllers: list[str]
    properties: dict[str, dict[str, str]]
    bootstrap: str  # every broker's inter-broker listener, as advertised

    def broker_address(self, name: str) -> str:
        props = self.properties[name]
        return listener_address(props, props["inter.broker.listener.name"])


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    brokers = group("kafka_broker")
    controllers = group("kafka_controller")
    props = {
        name: read_properties(node(name), "/etc/kafka/server.properties") for name in sorted({*brokers, *controllers})
    }
    bootstrap = ",".join(listener_address(props[b], props[b]["inter.broker.listener.name"]) for b in brokers)
    return Cluster(brokers=brokers, controllers=controllers, properties=props, bootstrap=bootstrap)
