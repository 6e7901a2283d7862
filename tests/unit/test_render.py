"""server.properties rendered by the kafka role itself (real preflight, real template), no containers.

Each case writes an inventory, runs tests/render/render.yml with ansible-playbook on the controller,
and reads back the properties files, or checks that bad input stops the run naming host and variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties

from kafkalab.ansible_driver import PlaybookRun, run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "tests" / "render" / "render.yml"


def write_inventory(
    tmp: Path,
    hosts: dict[str, dict[str, Any]],
    controllers: list[str],
    brokers: list[str],
    group_vars: dict[str, Any] | None = None,
) -> Path:
    inv = {
        "all": {
            "vars": {"kafka_archive_source": "url", **(group_vars or {})},
            "hosts": hosts,
            "children": {
                "kafka": {
                    "children": {
                        "kafka_controller": {"hosts": {h: None for h in controllers}},
                        "kafka_broker": {"hosts": {h: None for h in brokers}},
                    }
                }
            },
        }
    }
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def run_render(tmp: Path, inventory: Path) -> PlaybookRun:
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    return run_playbook(
        PLAYBOOK,
        inventory,
        extra_vars={"render_out": str(out)},
        env={"ANSIBLE_FACT_CACHING": "memory"},
        cwd=ROOT,
        timeout=300,
    )


def hosts(n: int) -> dict[str, dict[str, Any]]:
    return {f"kafka{i}": {"ansible_host": f"192.0.2.{10 + i}", "kafka_node_id": i} for i in range(1, n + 1)}


@pytest.mark.parametrize(
    "n,controllers,rf,min_isr,quorum",
    [
        (1, 1, "1", "1", "dynamic"),
        (3, 3, "3", "2", "dynamic"),
        (5, 5, "3", "2", "static"),
        (5, 3, "2", "2", "dynamic"),
        (5, 3, "2", "2", "static"),
    ],
    ids=[
        "1-node-combined",
        "3-node-combined",
        "5-node-combined-static-quorum",
        "5-node-3-dedicated-controllers",
        "5-node-3-dedicated-controllers-static-quorum",
    ],
)
def test_role_renders_each_node_from_the_inventory(
    tmp_path: Path, n: int, controllers: int, rf: str, min_isr: str, quorum: str
) -> None:
    names = [f"kafka{i}" for i in range(1, n + 1)]
    ctrl = names[:controllers]
    brokers = names if controllers == n else names[controllers:]
    group_vars = {} if quorum == "dynamic" else {"kafka_controller_quorum": quorum}
    result = run_render(tmp_path, write_inventory(tmp_path, hosts(n), ctrl, brokers, group_vars))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    voters = ",".join(f"{i}@192.0.2.{10 + i}:9093" for i in range(1, controllers + 1))
    bootstrap = ",".join(f"192.0.2.{10 + i}:9093" for i in range(1, controllers + 1))
    for i, name in enumerate(names, start=1):
        props = parse_properties((tmp_path / "out" / f"{name}.properties").read_text())
        assert props["node.id"] == str(i)
        if quorum == "dynamic":
            # A new cluster's quorum is dynamic by default (KIP-853): no voter list in any file.
            assert props["controller.quorum.bootstrap.servers"] == bootstrap
            assert "controller.quorum.voters" not in props
        else:
            assert props["controller.quorum.voters"] == voters
            assert "controller.quorum.bootstrap.servers" not in props
        assert props["log.dirs"] == "/var/lib/kafka/data"
        # A dynamic quorum's controller advertises its controller endpoint (what add-controller registers).
        controller_endpoint = [f"CONTROLLER://192.0.2.{10 + i}:9093"] if name in ctrl and quorum == "dynamic" else []
        if name in brokers:
            assert props["advertised.listeners"] == ",".join(
                [f"INTERNAL://192.0.2.{10 + i}:9092", *controller_endpoint]
            )
        elif controller_endpoint:
            assert props["advertised.listeners"] == controller_endpoint[0]
        else:
            assert "advertised.listeners" not in props
        if name in brokers:
            assert props["default.replication.factor"] == rf
            assert props["min.insync.replicas"] == min_isr
        expected_roles = ",".join(r for r, grp in (("broker", brokers), ("controller", ctrl)) if name in grp)
        assert props["process.roles"] == expected_roles


def test_custom_properties_merge_group_then_host(tmp_path: Path) -> None:
    hv = hosts(3)
    hv["kafka2"]["kafka_host_custom_properties"] = {"log.retention.hours": 24}
    inv = write_inventory(
        tmp_path, hv, list(hv), list(hv), {"kafka_custom_properties": {"log.retention.hours": 72, "num.io.threads": 16}}
    )
    result = run_render(tmp_path, inv)
    assert result.returncode == 0, result.stdout[-3000:]
    assert parse_properties((tmp_path / "out" / "kafka1.properties").read_text())["log.retention.hours"] == "72"
    p2 = parse_properties((tmp_path / "out" / "kafka2.properties").read_text())
    assert p2["log.retention.hours"] == "24"
    assert p2["num.io.threads"] == "16"


@pytest.mark.parametrize(
    "case,expected",
    [
        ("duplicate-id", "kafka3: kafka_node_id 1 is already used by kafka1"),
        ("even-quorum", "must be odd"),
        ("missing-address", "kafka2: no address"),
        ("bad-sha512", "kafka_archive_sha512"),
    ],
)
def test_bad_inventory_stops_before_any_host_naming_host_and_variable(tmp_path: Path, case: str, expected: str) -> None:
    hv = hosts(3)
    names = list(hv)
    controllers = names
    group_vars: dict[str, Any] = {}
    if case == "duplicate-id":
        hv["kafka3"]["kafka_node_id"] = 1
    elif case == "even-quorum":
        controllers = names[:2]
    elif case == "missing-address":
        del hv["kafka2"]["ansible_host"]
    elif case == "bad-sha512":
        group_vars = {"kafka_archive_sha512": "not-a-checksum"}
    result = run_render(tmp_path, write_inventory(tmp_path, hv, controllers, names, group_vars))
    assert result.returncode != 0
    assert expected in result.stdout, result.stdout[-3000:]
    # The preflight play on the controller failed, so the per-host play never ran.
    assert "Render server.properties per host" not in result.stdout
    assert not any((tmp_path / "out").iterdir())


def classroom_hosts() -> dict[str, dict[str, Any]]:
    """inventories/single-host's layout: three combined instances on one machine."""
    return {
        f"classroom-{i}": {
            "ansible_host": "192.0.2.10",
            "kafka_instance": i,
            "kafka_node_id": i,
            "kafka_listener_overrides": {"INTERNAL": {"port": 9091 + i}},
            "kafka_controller_port": 9191 + i,
        }
        for i in (1, 2, 3)
    }


def test_instances_on_one_machine_render_their_own_files_under_one_template_unit(tmp_path: Path) -> None:
    hv = classroom_hosts()
    result = run_render(tmp_path, write_inventory(tmp_path, hv, list(hv), list(hv)))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    props = parse_properties((out / "classroom-2.properties").read_text())
    assert props["listeners"] == "INTERNAL://:9093,CONTROLLER://:9193"
    assert props["advertised.listeners"] == "INTERNAL://192.0.2.10:9093,CONTROLLER://192.0.2.10:9193"
    assert props["log.dirs"] == "/var/lib/kafka/data/2"
    assert props["controller.quorum.bootstrap.servers"] == "192.0.2.10:9192,192.0.2.10:9193,192.0.2.10:9194"
    unit = (out / "classroom-2.unit").read_text()
    assert "EnvironmentFile=/etc/kafka/%i/kafka.env" in unit
    assert "ExecStart=/opt/kafka/current@%i/bin/kafka-server-start.sh /etc/kafka/%i/server.properties" in unit
    # Sandboxed: the machine's log dirs and log directory (each instance's are under them) are all it writes.
    assert "ProtectSystem=strict" in unit
    assert "ReadWritePaths=-/var/lib/kafka/data -/var/log/kafka" in unit
    # The template unit is the same for every instance: only kafka.env differs.
    assert unit == (out / "classroom-3.unit").read_text()
    env = (out / "classroom-2.env").read_text()
    assert 'LOG_DIR="/var/log/kafka/2"' in env
    assert "/etc/kafka/2/log4j2.properties" in env
    assert "-Xmx" in env


def test_instances_that_clash_on_a_port_stop_in_preflight_naming_host_instance_and_variable(tmp_path: Path) -> None:
    hv = classroom_hosts()
    hv["classroom-3"]["kafka_controller_port"] = 9193
    result = run_render(tmp_path, write_inventory(tmp_path, hv, list(hv), list(hv)))
    assert result.returncode != 0
    assert (
        "classroom-3: instance 3 on machine 192.0.2.10 opens port 9193 (listener CONTROLLER), which classroom-2"
        in result.stdout
    )
    assert "kafka_controller_port in host_vars/classroom-3" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "out" / "classroom-1.properties").exists()
