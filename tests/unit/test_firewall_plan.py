"""The firewall plan: per-host ufw rules from the inventory, ufw's rule files, and bad input.

The pure functions are tested directly; the plan for whole inventories is computed by the real
roles through tests/render/firewall.yml (the same preflight tasks `playbooks/preflight.yml` runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.kafkalab.kafka.plugins.filter.firewall_plan import (
    address_in_networks,
    firewall_plan,
    normalise_network,
    ufw_missing,
    ufw_tuples,
    ufw_unwanted,
)

from kafkalab.ansible_driver import PlaybookRun, run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "tests" / "render" / "firewall.yml"
ADMIN = "192.0.2.1"
CLIENTS = "198.51.100.0/24"
MONITORING = "203.0.113.0/28"


def inventory(tmp: Path, mode: str = "kraft", **group_vars: Any) -> Path:
    hosts: dict[str, Any] = {f"kafka{i}": {"ansible_host": f"10.9.0.{10 + i}", "kafka_node_id": i} for i in range(1, 4)}
    hosts["spark1"] = {"ansible_host": "10.9.0.21"}
    kafka_groups: dict[str, Any] = {"kafka_broker": {"hosts": {h: None for h in ("kafka1", "kafka2", "kafka3")}}}
    zookeeper: dict[str, Any] = {}
    if mode == "kraft":
        kafka_groups["kafka_controller"] = {"hosts": {h: None for h in ("kafka1", "kafka2", "kafka3")}}
    else:
        zookeeper = {"hosts": {h: None for h in ("kafka1", "kafka2", "kafka3")}}
        for i, h in enumerate(("kafka1", "kafka2", "kafka3"), start=1):
            hosts[h]["zookeeper_myid"] = i
    inv = {
        "all": {
            "vars": {
                "kafka_archive_source": "url",
                "kafka_mode": mode,
                "kafka_version": "4.3.1" if mode == "kraft" else "3.9.2",
                "firewall_admin_networks": [f"{ADMIN}/32"],
                "firewall_client_networks": [CLIENTS],
                "firewall_monitoring_networks": [MONITORING],
                **group_vars,
            },
            "hosts": hosts,
            "children": {
                "kafka": {"children": kafka_groups},
                "zookeeper": zookeeper,
                "spark": {
                    "children": {
                        "spark_master": {"hosts": {"spark1": None}},
                        "spark_worker": {"hosts": {"spark1": None}},
                    }
                },
            },
        }
    }
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def plan_for(tmp: Path, inv: Path) -> tuple[PlaybookRun, dict[str, Any] | None]:
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    result = run_playbook(
        PLAYBOOK,
        inv,
        extra_vars={"render_out": str(out)},
        cwd=ROOT,
        timeout=300,
    )
    plan_file = out / "plan.json"
    return result, json.loads(plan_file.read_text()) if plan_file.exists() else None


def rules_of(plan: dict[str, Any], host: str) -> set[tuple[str, str, str]]:
    return {(r["src"], r["port"], r["proto"]) for r in plan["hosts"][host]["rules"]}


def test_kraft_cluster_rules_open_each_port_to_exactly_who_needs_it(tmp_path: Path) -> None:
    result, plan = plan_for(tmp_path, inventory(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:]
    assert plan is not None and plan["problems"] == []
    peers = {"kafka1": ["10.9.0.12", "10.9.0.13"]}
    assert rules_of(plan, "kafka1") == {
        (ADMIN, "22", "tcp"),
        # The inter-broker listener (the only listener here): the other brokers, the Spark job, the clients.
        *((ip, "9092", "tcp") for ip in [*peers["kafka1"], "10.9.0.21", CLIENTS]),
        # The controller quorum: the other Kafka nodes only, never clients.
        *((ip, "9093", "tcp") for ip in peers["kafka1"]),
    }
    # SSH comes first, so it is allowed before anything else.
    assert plan["hosts"]["kafka1"]["rules"][0]["comment"] == "ssh"
    assert rules_of(plan, "spark1") == {
        (ADMIN, "22", "tcp"),
        (MONITORING, "8080", "tcp"),
        (MONITORING, "8081", "tcp"),
        (MONITORING, "4040", "tcp"),
        (MONITORING, "4041", "tcp"),
    }


def test_zookeeper_mode_opens_the_ensemble_ports_to_members_and_no_controller_port(tmp_path: Path) -> None:
    result, plan = plan_for(tmp_path, inventory(tmp_path, mode="zookeeper"))
    assert result.returncode == 0, result.stdout[-3000:]
    assert plan is not None
    rules = rules_of(plan, "kafka2")
    others = {"10.9.0.11", "10.9.0.13"}
    assert {(ip, "2181", "tcp") for ip in others} <= rules
    assert {(ip, "2888", "tcp") for ip in others} <= rules
    assert {(ip, "3888", "tcp") for ip in others} <= rules
    assert not any(port == "9093" for _, port, _ in rules)
    # The Spark job is a Kafka client, not a ZooKeeper client.
    assert ("10.9.0.21", "2181", "tcp") not in rules


def test_external_listener_is_open_to_its_own_networks_and_not_to_brokers(tmp_path: Path) -> None:
    listeners = [
        {"name": "INTERNAL", "port": 9092},
        {"name": "EXTERNAL", "port": 9094, "external": True, "client_networks": ["0.0.0.0/0"]},
    ]
    inv = inventory(tmp_path, kafka_listeners=listeners)
    data = yaml.safe_load(inv.read_text())
    for i in range(1, 4):
        data["all"]["hosts"][f"kafka{i}"]["kafka_listener_overrides"] = {
            "EXTERNAL": {"advertised_host": "kafka.example.com", "advertised_port": 29091 + i}
        }
    inv.write_text(yaml.safe_dump(data))
    result, plan = plan_for(tmp_path, inv)
    assert result.returncode == 0, result.stdout[-3000:]
    assert plan is not None
    external = {(src, port) for src, port, _ in rules_of(plan, "kafka3") if port == "9094"}
    assert external == {("0.0.0.0/0", "9094")}


def test_hosts_with_the_firewall_disabled_are_left_alone_but_still_count_as_sources(tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    data = yaml.safe_load(inv.read_text())
    data["all"]["hosts"]["spark1"]["firewall_enabled"] = False
    inv.write_text(yaml.safe_dump(data))
    result, plan = plan_for(tmp_path, inv)
    assert result.returncode == 0, result.stdout[-3000:]
    assert plan is not None
    assert plan["hosts"]["spark1"]["enabled"] is False
    assert ("10.9.0.21", "9092", "tcp") in rules_of(plan, "kafka1")


@pytest.mark.parametrize(
    "case,expected",
    [
        ("malformed-network", "kafka1: firewall_client_networks: '10.0.0.300/24' is not a network"),
        ("host-bits-set", "'198.51.100.7/24' has host bits set: write 198.51.100.0/24"),
        ("no-admin-network", "kafka1: firewall_admin_networks is empty, so SSH would be closed to everyone"),
        ("no-ip", "spark1: no IP address for the firewall rules of its peers"),
        ("listener-network", "kafka1: service kafka INTERNAL: network 'everyone' is not a network"),
        ("not-a-list", "firewall_monitoring_networks must be a list of networks"),
    ],
)
def test_bad_firewall_input_stops_before_any_host_naming_host_and_variable(
    tmp_path: Path, case: str, expected: str
) -> None:
    changes: dict[str, Any] = {
        "malformed-network": {"firewall_client_networks": ["10.0.0.300/24"]},
        "host-bits-set": {"firewall_client_networks": ["198.51.100.7/24"]},
        "no-admin-network": {"firewall_admin_networks": []},
        "listener-network": {"kafka_listeners": [{"name": "INTERNAL", "port": 9092, "client_networks": ["everyone"]}]},
        "not-a-list": {"firewall_monitoring_networks": "203.0.113.0/28"},
        "no-ip": {},
    }[case]
    inv = inventory(tmp_path, **changes)
    if case == "no-ip":
        data = yaml.safe_load(inv.read_text())
        data["all"]["hosts"]["spark1"]["ansible_host"] = "spark1.invalid"
        inv.write_text(yaml.safe_dump(data))
    result, plan = plan_for(tmp_path, inv)
    assert result.returncode != 0
    assert expected in result.stdout, result.stdout[-3000:]
    assert "nothing was changed" in result.stdout
    assert plan is None


def two_spark_hosts(tmp: Path, **group_vars: Any) -> Path:
    """The inventory with a second Spark host, a worker."""
    path = inventory(tmp, **group_vars)
    data = yaml.safe_load(path.read_text())
    data["all"]["hosts"]["spark2"] = {"ansible_host": "10.9.0.22"}
    data["all"]["children"]["spark"]["children"]["spark_worker"]["hosts"]["spark2"] = None
    path.write_text(yaml.safe_dump(data))
    return path


def test_two_spark_hosts_peer_on_every_port_when_the_job_writes_to_shared_storage(tmp_path: Path) -> None:
    inv = two_spark_hosts(
        tmp_path, spark_shared_storage_path="/srv/spark-shared", spark_consumer_data_dir="/srv/spark-shared/job"
    )
    result, plan = plan_for(tmp_path, inv)
    assert result.returncode == 0 and plan, result.stdout[-3000:]
    assert ("10.9.0.22", "", "tcp") in rules_of(plan, "spark1")
    assert ("10.9.0.21", "", "tcp") in rules_of(plan, "spark2")


@pytest.mark.parametrize(
    ("group_vars", "messages"),
    [
        (
            {},
            [
                "the Spark cluster has 2 hosts (spark1, spark2) but spark_shared_storage_path is empty: executors on "
                "every host write the job's output and checkpoints",
            ],
        ),
        (
            {"spark_shared_storage_path": "/srv/spark-shared", "spark_consumer_checkpoint_path": "/srv/spark-shared/c"},
            [
                "The Spark cluster has 2 hosts, so the job must write under spark_shared_storage_path "
                "(/srv/spark-shared), which every one of them mounts; nothing was changed.",
                "spark_consumer_output_path is /var/lib/spark-consumer/records: move it under /srv/spark-shared "
                "(e.g. spark_consumer_data_dir: /srv/spark-shared/spark-consumer).",
                "spark_consumer_metrics_path is /var/lib/spark-consumer/metrics: move it under /srv/spark-shared",
            ],
        ),
    ],
    ids=["no-shared-storage", "job-paths-on-local-disk"],
)
def test_a_multi_host_spark_cluster_writing_to_local_disk_is_refused_naming_the_variables(
    tmp_path: Path, group_vars: dict[str, Any], messages: list[str]
) -> None:
    result, plan = plan_for(tmp_path, two_spark_hosts(tmp_path, **group_vars))
    assert result.returncode != 0 and plan is None
    for message in messages:
        assert message in result.stdout, result.stdout[-3000:]
    assert "spark_consumer_checkpoint_path is" not in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


# ---- pure functions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [("10.0.0.0/8", "10.0.0.0/8"), ("192.0.2.1/32", "192.0.2.1"), ("192.0.2.1", "192.0.2.1"), ("::/0", "::/0")],
)
def test_networks_are_written_as_ufw_shows_them(text: str, expected: str) -> None:
    assert normalise_network(text) == (expected, None)


def test_duplicate_sources_merge_into_one_rule_naming_both_services() -> None:
    services = [
        {"name": "a", "hosts": ["h1"], "port": 9000, "from_networks": ["10.0.0.0/8"]},
        {"name": "b", "hosts": ["h1"], "port": 9000, "from_networks": ["clients"]},
    ]
    hostvars = {"h1": {"ansible_host": "10.1.1.1"}}
    defaults = {"firewall_enabled": True, "firewall_admin_networks": ["10.0.0.1/32"], "firewall_ssh_port": 22}
    defaults["firewall_client_networks"] = ["10.0.0.0/8"]
    plan = firewall_plan(hostvars, ["h1"], services, defaults, resolve=lambda _: None)
    assert plan["problems"] == []
    assert [r for r in plan["hosts"]["h1"]["rules"] if r["port"] == "9000"] == [
        {"src": "10.0.0.0/8", "port": "9000", "proto": "tcp", "comment": "a, b"}
    ]


USER_RULES = """*filter
:ufw-user-input - [0:0]
### RULES ###

### tuple ### allow tcp 22 0.0.0.0/0 any 10.231.1.1 in comment=737368
-A ufw-user-input -p tcp --dport 22 -s 10.231.1.1 -j ACCEPT

### tuple ### allow tcp 9092 0.0.0.0/0 any 10.231.1.0/24 in
-A ufw-user-input -p tcp --dport 9092 -s 10.231.1.0/24 -j ACCEPT

### tuple ### allow any any 0.0.0.0/0 any 10.231.1.12 in
-A ufw-user-input -s 10.231.1.12 -j ACCEPT

### tuple ### deny udp 53 0.0.0.0/0 any 0.0.0.0/0 in_eth0
-A ufw-user-input -i eth0 -p udp --dport 53 -j DROP

### END RULES ###
"""


def test_rules_the_plan_does_not_name_are_listed_for_deletion() -> None:
    current = ufw_tuples(USER_RULES)
    assert len(current) == 4
    wanted = [
        {"src": "10.231.1.1", "port": "22", "proto": "tcp"},
        {"src": "10.231.1.0/24", "port": "9092", "proto": "tcp"},
    ]
    assert ufw_unwanted(current, wanted) == [
        {
            "rule": "allow",
            "direction": "in",
            "from_ip": "10.231.1.12",
            "to_ip": "any",
            "from_port": "",
            "to_port": "",
            "proto": "any",
            "interface": "",
        },
        {
            "rule": "deny",
            "direction": "in",
            "from_ip": "any",
            "to_ip": "any",
            "from_port": "",
            "to_port": "53",
            "proto": "udp",
            "interface": "eth0",
        },
    ]


def test_only_the_planned_rules_ufw_lacks_are_added_in_the_plans_order() -> None:
    current = ufw_tuples(USER_RULES)
    wanted = [
        {"src": "10.231.1.1", "port": "22", "proto": "tcp"},
        {"src": "10.231.1.0/24", "port": "9093", "proto": "tcp"},
        {"src": "10.231.1.0/24", "port": "9092", "proto": "tcp"},
        {"src": "10.231.1.12", "port": "", "proto": "udp"},
    ]
    assert ufw_missing(wanted, current) == [wanted[1], wanted[3]]
    assert ufw_missing(wanted, []) == wanted


def test_a_planned_rule_is_kept_whatever_its_comment_or_address_spelling() -> None:
    current = ufw_tuples("### tuple ### allow tcp 22 0.0.0.0/0 any 10.231.1.1/32 in comment=6f6c64\n")
    assert ufw_unwanted(current, [{"src": "10.231.1.1", "port": "22", "proto": "tcp"}]) == []


@pytest.mark.parametrize(
    "address,networks,inside",
    [("10.231.0.1", ["10.231.0.1/32"], True), ("10.231.0.9", ["10.231.0.0/29"], False), ("x", ["0.0.0.0/0"], False)],
)
def test_lockout_check_knows_which_addresses_the_admin_networks_cover(
    address: str, networks: list[str], inside: bool
) -> None:
    assert address_in_networks(address, networks) is inside
