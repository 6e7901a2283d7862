"""Fixtures for the cluster verification suite, run by molecule's testinfra verifier or by `make verify`.

The suite runs against whatever inventory it is given: molecule sets MOLECULE_INVENTORY_FILE, the
lab sets KAFKALAB_INVENTORY. Addresses and ports are read from the nodes' rendered configuration,
so the tests check what the cluster really advertises rather than what we meant it to.

Mode: tests marked `kraft` or `zookeeper` only apply to one metadata mode. The mode is read from every
node's server.properties (process.roles: KRaft; zookeeper.connect: ZooKeeper) and must agree with
the inventory's kafka_mode; a disagreement or an unreadable node is an error, never a silent skip.
Tests of the other mode are deselected (reported as such), not skipped.

Read-only against real clusters: tests marked `changes_cluster` (they apply playbooks: the topic
lifecycle, a firewall run) run only on a disposable cluster, that is under molecule or against an
inventory that says `lab_disposable_cluster: true` (inventories/lab does). Against any other inventory
they are skipped, and the skip says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from inventory_hosts import (
    CHANGES_CLUSTER,
    ca_dir,
    deselect,
    group,
    kafka_properties_path,
    listener_address,
    listener_client_config,
    listener_protocol,
    node,
    runner,
    skip_unless_disposable,
)

from kafkalab import kafka_client


def read_properties(host: Any, path: str) -> dict[str, str]:
    return parse_properties(host.file(path).content_string)


def assert_java_service_runs(host: Any, unit: str, user: str, main_class: str) -> None:
    """The unit is enabled and running, its JVM runs as its own user with the main class and an explicit heap.

    The unit's own process (systemd's MainPID): instances on one machine run several JVMs as one user."""
    service = host.service(unit)
    assert service.is_enabled
    assert service.is_running
    pid = main_pid(host, unit)
    proc = host.process.get(pid=pid)
    assert (proc.user, proc.comm) == (user, "java")
    assert main_class in proc.args
    assert "-Xmx" in proc.args


def process_environment(host: Any, pid: int) -> dict[str, str]:
    """A running process's environment (what its unit, or an instance's kafka.env, gave it)."""
    raw = host.check_output(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    return dict(line.split("=", 1) for line in raw.splitlines() if "=" in line)


def main_pid(host: Any, unit: str) -> int:
    return int(host.check_output(f"systemctl show {unit} --property=MainPID --value"))


def covering_mount(mountinfo: str, path: str) -> tuple[str, set[str]]:
    """The mount a path is on, as a process sees it (/proc/PID/mountinfo): (its source root, its mount options).

    The longest mount point that holds the path wins; of mounts stacked on one point, the last (the visible one).
    """
    best: tuple[int, str, set[str]] = (-1, "", set())
    for line in mountinfo.splitlines():
        fields = line.split()
        root, point, options = fields[3], fields[4], set(fields[5].split(","))
        inside = point == "/" or path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best[0]:
            best = (len(point), root, options)
    return best[1], best[2]


def assert_sandboxed(host: Any, unit: str, writes: list[str]) -> None:
    """The unit's running process is in the sandbox the kernel enforces (kafkalab.kafka.systemd_sandbox).

    Read from the live process in /proc, not from the unit file: it can gain no privilege and holds no
    capability; its umask keeps what it creates from other users; in its mount namespace (its mountinfo) each of
    `writes` is on a read-write mount while the system around it (/etc, /opt, /usr, /var/lib) is read-only,
    /home and /root are systemd's inaccessible directory and /tmp is its own. Each of `writes` is closed to
    other users.
    """
    pid = main_pid(host, unit)
    status = {
        key: value.strip()
        for key, _, value in (
            line.partition(":") for line in host.file(f"/proc/{pid}/status").content_string.splitlines()
        )
    }
    assert status["NoNewPrivs"] == "1", (unit, status["NoNewPrivs"])
    assert int(status["CapBnd"], 16) == 0 and int(status["CapEff"], 16) == 0, (unit, status["CapBnd"])
    assert status["Umask"] == "0027", (unit, status["Umask"])
    mountinfo = host.file(f"/proc/{pid}/mountinfo").content_string
    for path in writes:
        assert "rw" in covering_mount(mountinfo, path)[1], f"{unit}: {path} is not writable to it"
        mode = host.file(path).mode
        assert mode & 0o007 == 0, f"{unit}: {path} is open to other users ({oct(mode)})"
    for path in ("/etc", "/opt", "/usr/local/bin", "/var/lib"):
        assert "ro" in covering_mount(mountinfo, path)[1], f"{unit}: {path} is writable to it"
    for path in ("/home", "/root"):
        assert "inaccessible" in covering_mount(mountinfo, path)[0], f"{unit}: {path} is within its reach"
    assert "systemd-private" in covering_mount(mountinfo, "/tmp")[0], f"{unit}: /tmp is the system's"


MODES = ("kraft", "zookeeper")
# The property that holds a node's id in each mode.
ID_PROPERTY = {"kraft": "node.id", "zookeeper": "broker.id"}


def mode_of_properties(props: dict[str, str]) -> str:
    """KRaft nodes have process.roles, ZooKeeper-mode brokers zookeeper.connect; never both."""
    kraft, zookeeper = "process.roles" in props, "zookeeper.connect" in props
    if kraft == zookeeper:
        raise RuntimeError(
            f"server.properties has {'both' if kraft else 'neither'} process.roles and zookeeper.connect"
        )
    return "kraft" if kraft else "zookeeper"


@cache
def kafka_nodes() -> list[str]:
    """The hosts that run Kafka: the brokers, and the controllers unless the inventory says ZooKeeper mode
    (then the controller group's hosts are standby, for playbooks/migrate_to_kraft.yml: no Kafka yet)."""
    brokers = group("kafka_broker")
    zookeeper_mode = bool(brokers) and runner().get_variables(brokers[0]).get("kafka_mode") == "zookeeper"
    controllers = [] if zookeeper_mode else group("kafka_controller")
    return sorted({*brokers, *controllers})


@cache
def cluster_mode() -> str:
    """The mode every Kafka node runs in, checked against the inventory's kafka_mode (default kraft)."""
    found = {
        name: mode_of_properties(read_properties(node(name), kafka_properties_path(name))) for name in kafka_nodes()
    }
    wanted = {name: str(runner().get_variables(name).get("kafka_mode", "kraft")) for name in found}
    if set(found.values()) | set(wanted.values()) != {next(iter(found.values()))}:
        raise RuntimeError(f"nodes run in modes {found} but the inventory asks for {wanted}")
    return next(iter(found.values()))


def pytest_configure(config: pytest.Config) -> None:
    for mode in MODES:
        config.addinivalue_line("markers", f"{mode}: applies to {mode} mode only (deselected in the other mode)")
    config.addinivalue_line("markers", CHANGES_CLUSTER)


def pytest_runtest_setup(item: pytest.Item) -> None:
    skip_unless_disposable(item)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker(m) for item in items for m in MODES):
        return
    mode = cluster_mode()
    deselect(config, items, [item for item in items if any(item.get_closest_marker(m) for m in MODES if m != mode)])


@pytest.fixture(scope="session")
def mode() -> str:
    return cluster_mode()


@dataclass(frozen=True)
class Cluster:
    mode: str
    brokers: list[str]
    controllers: list[str]  # KRaft controllers; none in ZooKeeper mode
    properties: dict[str, dict[str, str]]
    bootstrap: str  # every broker's inter-broker listener, as advertised

    def broker_address(self, name: str) -> str:
        props = self.properties[name]
        return listener_address(props, props["inter.broker.listener.name"])

    def node_id(self, name: str) -> int:
        return int(self.properties[name][ID_PROPERTY[self.mode]])


def listener_security(props: dict[str, str], name: str) -> dict[str, Any]:
    """kafka-python's settings for a client of this listener: PLAINTEXT, or what the kafka role wrote for it beside
    the CA (kafka_cluster.listener_client_configs: TLS trusting the project CA, and on SASL_SSL the admin's login).
    Explicit either way, so they override the bootstrap listener's settings the helpers merge in."""
    if listener_protocol(props, name) in ("SSL", "SASL_SSL"):
        return kafka_client.settings(listener_client_config(name))
    return {"security_protocol": "PLAINTEXT"}


@pytest.fixture(scope="session")
def cluster(mode: str) -> Cluster:
    brokers = group("kafka_broker")
    controllers = group("kafka_controller") if mode == "kraft" else []
    props = {
        name: read_properties(node(name), kafka_properties_path(name)) for name in sorted({*brokers, *controllers})
    }
    bootstrap = ",".join(listener_address(props[b], props[b]["inter.broker.listener.name"]) for b in brokers)
    # Every client of the suite (and the kafkalab helpers it calls) reads the bootstrap listener's settings the
    # way the project's tools do: from the file the kafka role writes on the controller when that listener is TLS.
    protocols = {listener_protocol(props[b], props[b]["inter.broker.listener.name"]) for b in brokers}
    assert len(protocols) <= 1, f"the brokers disagree on their inter-broker listener's protocol: {protocols}"
    if protocols in ({"SSL"}, {"SASL_SSL"}):
        client_config = os.path.join(ca_dir(), "client.properties")
        assert os.path.exists(client_config), f"the inter-broker listener runs TLS, but {client_config} is missing"
        kafka_client.use(client_config)
    else:
        os.environ.pop(kafka_client.ENV, None)
    return Cluster(mode=mode, brokers=brokers, controllers=controllers, properties=props, bootstrap=bootstrap)
