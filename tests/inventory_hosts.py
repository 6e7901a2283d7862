"""The inventory the cluster suites (tests/cluster, tests/spark_cluster) run against, and its hosts.

molecule sets MOLECULE_INVENTORY_FILE, the lab and `make verify` set KAFKALAB_INVENTORY. An empty
group is an error, never a silently skipped test. pyproject.toml's pytest pythonpath puts this folder on sys.path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
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
def ca_dir() -> str:
    """roles/kafka's default kafka_tls_ca_dir: .pki in the inventory (its folder when it is a file)."""
    path = inventory_path().rstrip("/")
    return os.path.join(path if os.path.isdir(path) else os.path.dirname(path), ".pki")


def listener_address(props: dict[str, str], listener: str) -> str:
    """host:port a node's server.properties advertises for `listener`."""
    for item in props.get("advertised.listeners", "").split(","):
        name, _, rest = item.partition("://")
        if name == listener:
            return rest
    raise KeyError(f"listener {listener} not in advertised.listeners={props.get('advertised.listeners')}")


def listener_protocol(props: dict[str, str], name: str) -> str:
    """The security protocol a node's listener runs, as its server.properties maps it."""
    protocols = dict(item.split(":", 1) for item in props.get("listener.security.protocol.map", "").split(",") if item)
    return protocols.get(name, name if name in ("PLAINTEXT", "SSL", "SASL_SSL") else "PLAINTEXT")


def listener_client_config(name: str) -> str:
    """Where the kafka role writes a TLS listener's client settings on the controller machine."""
    return os.path.join(ca_dir(), f"client-{name.lower()}.properties")


def runner() -> AnsibleRunner:
    """testinfra's view of the inventory, for the suites that read host variables (get_variables).

    testinfra's own runner for this inventory (the one node() reaches hosts through), so `ansible-inventory
    --list` runs once per suite: a new AnsibleRunner would list the inventory again on every call (1 s idle,
    3 s beside a loaded cluster), and the suites call this in loops. No test edits the inventory it reads."""
    return AnsibleRunner.get_runner(inventory_path())


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


def hosts_in(name: str) -> list[str]:
    """Hosts of an inventory group (its children's included), sorted; [] when it has none (group() refuses that)."""
    return sorted(group_hosts(inventory_listing(), name))


@cache
def host_variables(name: str) -> dict[str, Any]:
    """The host's variables as Ansible resolves them from the inventory, read once per host and run."""
    return dict(runner().get_variables(name))


def templated_variable(host: str, name: str) -> Any:
    """A host variable as a play sees it, its templates and lookups resolved: the lab makes its passwords with a
    lookup on the first run and reads them back from inventories/lab/.secrets after. A plain value is returned as
    it is; a templated one goes through ansible's debug action, which runs on the controller only (captured, not
    printed)."""
    value = host_variables(host)[name]
    if "{{" not in json.dumps(value):
        return value
    return runner().run_module(host, "ansible.builtin.debug", f"var={name}")[name]


def connect_rest_login(worker: str) -> tuple[str, str]:
    """The Connect REST API's login the playbooks use (kafka_connect_rest_user among kafka_connect_rest_users)."""
    user = host_variables(worker).get("kafka_connect_rest_user", "admin")
    (entry,) = [u for u in templated_variable(worker, "kafka_connect_rest_users") if u["name"] == user]
    return user, entry["password"]


def node(name: str) -> Any:
    """A testinfra host for an inventory host, reached the way Ansible reaches it."""
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory_path()}")


ROOT = Path(__file__).resolve().parents[1]


def host_script(role: str, name: str) -> ModuleType:
    """A script a role installs on its hosts (roles/<role>/files/<name>), imported for its pure functions.

    The hosts run the same file, so the suites read servers the way the role's checks do."""
    path = ROOT / "roles" / role / "files" / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def disposable_cluster() -> bool:
    """Under molecule, or an inventory that declares its cluster disposable (the lab)."""
    if os.environ.get("MOLECULE_INVENTORY_FILE"):
        return True
    return runner().get_variables(group("kafka")[0]).get("lab_disposable_cluster") is True


CHANGES_CLUSTER = "changes_cluster: applies playbooks to the cluster; runs only on disposable clusters (molecule, lab)"


def deselect(config: pytest.Config, items: list[pytest.Item], leave_out: list[pytest.Item]) -> None:
    """Take these items out of the run and report them as deselected (both suites' collection hooks)."""
    if leave_out:
        config.hook.pytest_deselected(items=leave_out)
        items[:] = [item for item in items if item not in leave_out]


def skip_unless_disposable(item: pytest.Item) -> None:
    """The pytest_runtest_setup of both suites: a test marked changes_cluster runs on a disposable cluster only."""
    if item.get_closest_marker("changes_cluster") and not disposable_cluster():
        pytest.skip(
            f"changes the cluster, and {inventory_path()} is not a disposable one (molecule, or an inventory with "
            "lab_disposable_cluster: true): verification of this cluster stays read-only"
        )


# molecule forces colour for its own runs; the tests parse ansible-playbook's output, so no escape codes.
PLAIN_OUTPUT = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0"}


def playbook_env(**extra: str) -> dict[str, str]:
    """This process's environment with the repository's ansible.cfg and plain output (plus extra)."""
    return {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), **PLAIN_OUTPUT, **extra}


def playbook_command(playbook: str, args: Sequence[str] = (), inventories: Sequence[str] = ()) -> list[str]:
    """ansible-playbook (the venv's) on the inventory under test and any more inventory sources, for
    playbooks/<playbook>, run from the repository."""
    sources = [item for source in (inventory_path(), *inventories) for item in ("-i", source)]
    return [str(Path(sys.executable).parent / "ansible-playbook"), *sources, f"playbooks/{playbook}", *args]


def run_playbook(
    playbook: str,
    args: Sequence[str] = (),
    timeout: float = 900,
    inventories: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """playbook_command run from the repository with plain output (stdout and stderr as one: failures may be
    reported on either) for the tests to read."""
    return subprocess.run(
        playbook_command(playbook, args, inventories),
        cwd=ROOT,
        env=playbook_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


# ---- several Kafka instances on one machine (kafka_instance) -------------------------------------------


@cache
def kafka_address(name: str) -> str:
    """The address other nodes dial a Kafka host by (roles/kafka: kafka_advertised_host, else ansible_host)."""
    variables = runner().get_variables(name)
    return str(variables.get("kafka_advertised_host") or variables["ansible_host"])


def kafka_instance(name: str) -> str:
    """The host's kafka_instance ('' for a plain host, which runs kafka.service from /etc/kafka)."""
    return str(runner().get_variables(name).get("kafka_instance") or "")


def kafka_unit(name: str) -> str:
    """The systemd unit that runs this host's Kafka: kafka, or kafka@<instance>."""
    instance = kafka_instance(name)
    return f"kafka@{instance}" if instance else "kafka"


def kafka_properties_path(name: str) -> str:
    """The host's server.properties: /etc/kafka/server.properties, or /etc/kafka/<instance>/server.properties."""
    instance = kafka_instance(name)
    return f"/etc/kafka/{instance}/server.properties" if instance else "/etc/kafka/server.properties"


@cache
def machine(name: str) -> str:
    """The machine an inventory host runs on (the roles' rule: its ansible_host, else its name)."""
    variables = runner().get_variables(name)
    address = str(variables.get("ansible_host") or name)
    return f"{address}:{variables['ansible_port']}" if variables.get("ansible_port") else address


def one_per_machine(names: Sequence[str]) -> list[str]:
    """The first of `names` on each machine: where what a machine has once (ufw, its kernel) is checked."""
    firsts: dict[str, str] = {}
    for name in names:
        firsts.setdefault(machine(name), name)
    return list(firsts.values())


def machine_mates(name: str, names: Sequence[str]) -> list[str]:
    """The hosts of `names` on the same machine as `name` (itself included)."""
    return [other for other in names if machine(other) == machine(name)]


def bootstrap_protocol() -> str:
    """The protocol of the brokers' inter-broker listener (the bootstrap servers' one), from the inventory."""
    broker = group("kafka_broker")[0]
    variables = runner().get_variables(broker)
    listeners = variables.get("kafka_listeners") or []
    name = variables.get("kafka_inter_broker_listener_name", "INTERNAL")
    return next((str(item.get("protocol", "PLAINTEXT")) for item in listeners if item.get("name") == name), "")
