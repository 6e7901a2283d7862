"""The ZooKeeper ensemble model behind every zoo.cfg and myid, its bad input, and the zk4lw parsers."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.zookeeper_ensemble import (
    zookeeper_cfg_text,
    zookeeper_config,
    zookeeper_ensemble_model,
)
from inventory_hosts import host_script

zk4lw = host_script("zookeeper", "zk4lw.py")

SETTINGS: dict[str, Any] = {
    "group": "zookeeper",
    "client_port": 2181,
    "peer_port": 2888,
    "election_port": 3888,
    "tick_time": 2000,
    "init_limit": 10,
    "sync_limit": 5,
    "data_dir": "/var/lib/zookeeper",
    "four_letter_words": [],
    "autopurge_snap_retain_count": 3,
    "autopurge_purge_interval": 24,
}


def inventory(n: int) -> dict[str, dict[str, Any]]:
    return {f"z{i}": {"zookeeper_myid": i, "ansible_host": f"10.0.0.{10 + i}"} for i in range(1, n + 1)}


def problems(hostvars: dict[str, Any], servers: list[str] | None = None, **changes: Any) -> list[str]:
    names = list(hostvars) if servers is None else servers
    return list(zookeeper_ensemble_model(hostvars, names, {**SETTINGS, **changes})["problems"])


@pytest.mark.parametrize("n", [1, 3, 5])
def test_odd_ensembles_render_one_server_line_per_member(n: int) -> None:
    hv = inventory(n)
    model = zookeeper_ensemble_model(hv, list(hv), SETTINGS)
    assert model["problems"] == []
    config = zookeeper_config(model, SETTINGS)
    assert {k: v for k, v in config.items() if k.startswith("server.")} == {
        f"server.{i}": f"10.0.0.{10 + i}:2888:3888" for i in range(1, n + 1)
    }
    assert config["clientPort"] == "2181"
    assert config["dataDir"] == "/var/lib/zookeeper"
    assert config["4lw.commands.whitelist"] == "ruok,srvr,mntr"
    assert model["connect"] == ",".join(f"10.0.0.{10 + i}:2181" for i in range(1, n + 1))


def test_extra_four_letter_words_keep_the_health_check_words() -> None:
    hv = inventory(1)
    config = zookeeper_config(
        zookeeper_ensemble_model(hv, list(hv), SETTINGS), {**SETTINGS, "four_letter_words": ["conf", "srvr"]}
    )
    assert config["4lw.commands.whitelist"] == "ruok,srvr,mntr,conf"


def test_zoo_cfg_text_puts_server_lines_last_in_myid_order() -> None:
    text = zookeeper_cfg_text({"server.10": "c:1:2", "server.2": "b:1:2", "tickTime": "2000", "clientPort": "2181"})
    assert text == "clientPort=2181\ntickTime=2000\nserver.2=b:1:2\nserver.10=c:1:2\n"


def test_address_prefers_zookeeper_address_then_kafka_advertised_host() -> None:
    hv = inventory(3)
    hv["z2"]["kafka_advertised_host"] = "z2.example.net"
    hv["z3"]["zookeeper_address"] = "10.9.9.9"
    hv["z3"]["kafka_advertised_host"] = "z3.example.net"
    model = zookeeper_ensemble_model(hv, list(hv), SETTINGS)
    assert [s["address"] for s in model["servers"].values()] == ["10.0.0.11", "z2.example.net", "10.9.9.9"]


def test_kafka_connects_to_the_addresses_the_ensemble_uses() -> None:
    """The two roles apply one address rule: zookeeper.connect names the servers of zoo.cfg."""
    hv = inventory(3)
    hv["z2"]["kafka_advertised_host"] = "z2.example.net"
    hv["z3"]["zookeeper_address"] = "10.9.9.9"
    for i, host in enumerate(hv, start=1):
        hv[host]["kafka_node_id"] = i
    ensemble = zookeeper_ensemble_model(hv, list(hv), SETTINGS)
    kafka = kafka_cluster_model(
        hv,
        [],
        list(hv),
        {
            "mode": "zookeeper",
            "version": "3.9.2",
            "listeners": [{"name": "INTERNAL", "port": 9092}],
            "inter_broker_listener_name": "INTERNAL",
            "default_replication_factor": 3,
            "min_insync_replicas": 2,
            "zookeeper_client_port": 2181,
            "zookeeper_chroot": "",
            "data_dirs": ["/var/lib/kafka/data"],
            "heap_size": "1g",
        },
        list(hv),
    )
    assert kafka["problems"] == []
    assert kafka["zookeeper_connect"] == ensemble["connect"]


@pytest.mark.parametrize("n", [2, 4])
def test_even_ensemble_is_refused(n: int) -> None:
    found = problems(inventory(n))
    assert any(f"the ZooKeeper ensemble has {n} servers" in p and "must be odd" in p for p in found), found


def test_empty_group_is_no_ensemble_problem() -> None:
    """Nothing to install; the kafka model refuses ZooKeeper mode without an ensemble."""
    assert problems({}, []) == []


def test_duplicate_myid_is_refused_naming_both_hosts() -> None:
    hv = inventory(3)
    hv["z3"]["zookeeper_myid"] = 1
    found = problems(hv)
    assert "z3: zookeeper_myid 1 is already used by z1. Each host needs its own; " in "".join(found), found


def test_missing_myid_is_refused_naming_the_host() -> None:
    hv = inventory(3)
    del hv["z2"]["zookeeper_myid"]
    assert any(p.startswith("z2: zookeeper_myid is not set") for p in problems(hv))


@pytest.mark.parametrize("myid", [0, 256, "x", True])
def test_myid_outside_1_to_255_is_refused(myid: Any) -> None:
    hv = inventory(1)
    hv["z1"]["zookeeper_myid"] = myid
    assert any(p.startswith(f"z1: zookeeper_myid '{myid}' is not an integer, 1..255") for p in problems(hv))


def test_server_without_address_is_refused_naming_the_host() -> None:
    hv = inventory(3)
    del hv["z2"]["ansible_host"]
    assert any(p.startswith("z2: no address for ZooKeeper") for p in problems(hv))


def test_host_missing_from_the_inventory_is_refused() -> None:
    """A group member with no variables at all (say, a typo in the group) has neither myid nor address."""
    found = problems(inventory(2), ["z1", "z2", "zz3"])
    assert any(p.startswith("zz3: zookeeper_myid is not set") for p in found), found
    assert any(p.startswith("zz3: no address for ZooKeeper") for p in found), found


def test_clashing_ports_are_refused() -> None:
    assert any("must differ" in p for p in problems(inventory(1), peer_port=2181))


@pytest.mark.parametrize(
    "modes,healthy,leaders",
    [
        ({"a": "leader", "b": "follower", "c": "follower"}, True, ["a"]),
        ({"a": "standalone"}, True, ["a"]),
        ({"a": "leader", "b": "follower", "c": "not serving"}, False, ["a"]),
        ({"a": "follower", "b": "follower", "c": "follower"}, False, []),
        ({"a": "leader", "b": "leader", "c": "follower"}, False, ["a", "b"]),
        ({"a": "standalone", "b": "standalone", "c": "standalone"}, False, ["a", "b", "c"]),
        ({}, False, []),
    ],
    ids=["one-leader", "single-standalone", "one-down", "no-leader", "two-leaders", "split-standalone", "empty"],
)
def test_ensemble_health_needs_every_server_serving_and_one_leader(
    modes: dict[str, str], healthy: bool, leaders: list[str]
) -> None:
    report = zk4lw.ensemble_health(modes)
    assert report["healthy"] is healthy
    assert report["leaders"] == leaders


def test_srvr_answer_gives_the_mode() -> None:
    answer = (
        "Zookeeper version: 3.8.4\nLatency min/avg/max: 0/0.0/0\nZxid: 0x100000004\nMode: follower\nNode count: 5\n"
    )
    assert zk4lw.mode_of(answer) == "follower"
    assert zk4lw.mode_of("This ZooKeeper instance is not currently serving requests\n") == "not serving"
