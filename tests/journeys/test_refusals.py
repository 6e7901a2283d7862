"""Runs an operator gets wrong stop before any host changes; a firewall edited by hand is put back by the next run.

A journey on a disposable cluster, in file order; every step puts back what it broke, even when it fails:
- the inventory against the storage on disk: a log dir formatted for another node.id, a controller whose metadata
  dir lost its meta.properties (its disk replaced), a pinned cluster id that is not the cluster's;
- the project CA gone from the controller machine (kafka_tls_ca_dir) while the nodes trust it;
- listeners that run TLS switched to PLAINTEXT in the inventory (the nodes would stop talking to each other);
- then every node still has its identity, and no Kafka restarted through all of them;
- rules opened by hand (ufw allow ..., a routed policy) are gone after the next run of the firewall layer, and the
  planned ones are as they were;
- a misspelt and a mistyped variable stop site.yml in the controller preflight: every managed host stays byte for
  byte as it was (packages, ufw, every file under /etc, /opt and /usr/local, the Kafka service's start).
Each refusal is checked for its message: the host, the variable, the bad value.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from inventory_hosts import (
    ca_dir,
    group,
    inventory_path,
    kafka_unit,
    machine_mates,
    node,
    one_per_machine,
    run_playbook,
    runner,
)

from journeys.steps import ansible, one_line, properties, refused, started_at

pytestmark = pytest.mark.changes_cluster

FINGERPRINT = r"""set -o pipefail
{{ dpkg-query -W -f '${{Package}} ${{Version}}\n'
  ufw status verbose
  find /etc /opt /usr/local -xdev \( -type f -o -type l \) -printf '%p %s %T@ %m\n' | sort
  {units}
}} | sha256sum"""
WITHOUT_SASL = {"SASL_SSL": "SSL", "SASL_PLAINTEXT": "PLAINTEXT"}
# Never in any inventory of this project (TEST-NET-3, RFC 5737).
STRANGER = "203.0.113.200"


def meta_properties(name: str, *, metadata: bool = False) -> str:
    """The meta.properties of the node's first log dir, or (metadata) of its metadata log dir."""
    props = properties(name)
    log_dir = props["log.dirs"].split(",")[0]
    return f"{props.get('metadata.log.dir', log_dir) if metadata else log_dir}/meta.properties"


@contextmanager
def edited(name: str, command: str, undo: str) -> Iterator[None]:
    node(name).run_expect([0], command)
    try:
        yield
    finally:
        node(name).run_expect([0], undo)


@pytest.fixture(scope="module", autouse=True)
def kraft_cluster() -> None:
    """The identity and quorum refusals are KRaft's (a ZooKeeper-mode cluster's have their own scenario)."""
    if "zookeeper.connect" in properties(group("kafka")[0]):
        pytest.skip("a ZooKeeper-mode cluster: these refusals are KRaft's")


@pytest.fixture(scope="module")
def started_before() -> dict[str, int]:
    """When each node's Kafka started, before the first refused run."""
    return {name: started_at(name) for name in group("kafka")}


def test_storage_formatted_for_another_node_id_is_refused(started_before: dict[str, int]) -> None:
    name = group("kafka")[-1]
    node_id = int(properties(name)["node.id"])
    other = node_id + 40
    path = meta_properties(name)
    with edited(
        name,
        f"sed -i 's/^node\\.id=.*$/node.id={other}/' {path}",
        f"sed -i 's/^node\\.id=.*$/node.id={node_id}/' {path}",
    ):
        said = refused("kafka.yml")
    wrong = f"{name}: {path} belongs to node.id {other} but the inventory gives this host kafka_node_id {node_id}"
    assert wrong in said


def test_a_controller_whose_metadata_dir_lost_its_identity_is_refused() -> None:
    name = group("kafka_controller")[1 if len(group("kafka_controller")) > 1 else 0]
    node_id = properties(name)["node.id"]
    path = meta_properties(name, metadata=True)
    aside = f"{os.path.dirname(os.path.dirname(path))}/meta.properties.journey-aside"
    # The running process read it at start and does not look again.
    with edited(name, f"mv {path} {aside}", f"mv {aside} {path}"):
        said = refused("kafka.yml")
    assert (
        f"{name}: is a KRaft controller (node {node_id}) but its metadata dir {os.path.dirname(path)} "
        "holds no meta.properties"
    ) in said
    assert f"playbooks/remove_controller.yml -e kafka_remove_controller={name}" in said


def test_a_pinned_cluster_id_that_is_not_the_clusters_is_refused() -> None:
    said = refused("kafka.yml", "-e", "kafka_cluster_id=AAAAAAAAAAAAAAAAAAAAAA")
    assert "but kafka_cluster_id is AAAAAAAAAAAAAAAAAAAAAA" in said


def tls_listeners(name: str) -> dict[str, str]:
    """The node's listeners that run TLS now (SSL or SASL_SSL): name -> protocol."""
    protocols = dict(item.split(":") for item in properties(name)["listener.security.protocol.map"].split(","))
    return {listener: protocol for listener, protocol in protocols.items() if protocol in {"SSL", "SASL_SSL"}}


def test_a_lost_project_ca_is_refused() -> None:
    name = group("kafka")[0]
    if not tls_listeners(name) or not os.path.exists(f"{ca_dir()}/ca.pem"):
        pytest.skip("no listener runs TLS with the project CA on this cluster")
    aside = ca_dir() + ".journey-aside"
    os.rename(ca_dir(), aside)
    try:
        said = refused("kafka.yml")
    finally:
        os.rename(aside, ca_dir())
    assert f"{name}: trusts the CA whose certificate hashes to sha256" in said
    assert f"kafka_tls_ca_dir {os.path.abspath(ca_dir())} holds no CA" in said


def test_listeners_that_run_tls_switched_to_plaintext_are_refused() -> None:
    name = group("kafka")[0]
    props, running = properties(name), tls_listeners(name)
    variables: dict[str, Any] = runner().get_variables(name)
    controller = dict(variables.get("kafka_controller_listener") or {})
    inter_broker = props.get("inter.broker.listener.name", "")
    switch = {listener for listener in running if listener in {controller.get("name"), inter_broker}}
    if not switch:
        pytest.skip("neither the controller nor the inter-broker listener runs TLS on this cluster")
    # The other listeners keep TLS without SASL: the users are gone below, so that the switch is the refusal.
    listeners = [
        {**listener, "protocol": "PLAINTEXT" if listener["name"] in switch else WITHOUT_SASL.get(protocol, protocol)}
        for listener in variables["kafka_listeners"]
        for protocol in [str(listener.get("protocol", "PLAINTEXT"))]
    ]
    extra = {
        "kafka_controller_listener": {**controller, "protocol": "PLAINTEXT"}
        if controller.get("name") in switch
        else controller,
        "kafka_listeners": listeners,
        "kafka_users": [],
        "kafka_authorizer": False,
        "kafka_acls": [],
        # The quotas of the users gone (a quota names a declared user).
        "kafka_quotas": [],
    }
    said = refused("kafka.yml", "-e", json.dumps(extra))
    if controller.get("name") in switch:
        assert (
            f"{name}: its listener {controller['name']} runs {running[controller['name']]}, and "
            "kafka_controller_listener.protocol is PLAINTEXT"
        ) in said
    if inter_broker in switch and inter_broker != controller.get("name"):
        assert (
            f"{name}: its listener {inter_broker} runs {running[inter_broker]}, and the protocol of "
            "kafka_inter_broker_listener_name's listener is PLAINTEXT"
        ) in said


def test_the_refused_runs_restarted_nothing_and_every_node_keeps_its_identity(started_before: dict[str, int]) -> None:
    assert {name: started_at(name) for name in group("kafka")} == started_before
    for name in group("kafka"):
        wanted = str(runner().get_variables(name)["kafka_node_id"])
        assert properties(name)["node.id"] == wanted
        assert f"node.id={wanted}" in node(name).file(meta_properties(name)).content_string.splitlines()


def test_rules_opened_by_hand_are_gone_after_the_next_firewall_run() -> None:
    name = one_per_machine(group("kafka"))[-1]
    port = properties(name)["listeners"].split(",")[0].rsplit(":", 1)[1]
    host = node(name)
    planned = host.check_output("ufw status verbose")
    for rule in (f"allow from {STRANGER} to any port {port} proto tcp", "allow 5555/tcp", "default allow routed"):
        host.run_expect([0], f"ufw {rule}")
    opened = host.check_output("ufw status verbose")
    assert STRANGER in opened and "5555" in opened and "allow (routed)" in opened  # the hand edits took
    ansible("firewall.yml")
    assert host.check_output("ufw status verbose") == planned


def test_a_misspelt_and_a_mistyped_variable_stop_site_yml_before_any_host_changes() -> None:
    def fingerprints() -> dict[str, str]:
        found = {}
        for name in one_per_machine(group("kafka")):
            units = "; ".join(
                f"systemctl show {kafka_unit(mate)} --property=ActiveEnterTimestampMonotonic"
                for mate in machine_mates(name, group("kafka"))
            )
            found[name] = node(name).check_output(f"bash -c {shlex.quote(FINGERPRINT.format(units=units))}")
        return found

    before = fingerprints()
    run = run_playbook("site.yml", ["-e", json.dumps({"kafka_heapsize": "2g", "kafka_data_dirs": "/data"})])
    output = one_line(run.stdout)
    assert run.returncode != 0, output[-3000:]
    assert "kafka_heapsize: no such variable; did you mean kafka_heap_size?" in output
    assert "kafka_data_dirs is '/data' (a string, not a list)" in output
    assert "PLAY [Java runtime]" not in output  # stopped in the controller preflight, before the first host play
    assert fingerprints() == before, f"a host of {inventory_path()} changed"
