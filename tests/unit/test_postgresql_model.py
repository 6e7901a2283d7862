"""The PostgreSQL model (plugins/filter/postgresql_model.py): servers, users, databases, pg_hba.conf lines, firewall and
every refusal of bad settings, each message naming the host or variable, the bad value and the fix."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.postgresql_model import postgresql_model

HOSTVARS = {
    "pg1": {"firewall_address": "10.0.0.21", "firewall_admin_networks": ["10.9.0.0/24"]},
    "connect1": {"firewall_address": "10.0.0.31"},
    "connect2": {"firewall_address": "10.0.0.32"},
}
GROUPS = {"all": ["pg1", "connect1", "connect2"], "postgresql": ["pg1"], "kafka_connect": ["connect1", "connect2"]}
KAFKA = {"tls_ca_dir": "/inv/.pki"}


def settings(**overrides: Any) -> dict[str, Any]:
    base = {
        "postgresql_group": "postgresql",
        "postgresql_port": 5432,
        "postgresql_tls": True,
        "postgresql_tls_own_ca": "",
        "postgresql_users": [
            {"name": "shop", "password": "owner-pass"},
            {"name": "debezium", "password": "reader-pass", "replication": True},
        ],
        "postgresql_databases": [
            {"name": "shop", "owner": "shop", "publication": "kafkalab_cdc", "readers": ["debezium"]}
        ],
        "postgresql_clients": [{"user": "debezium", "database": "shop", "from_hosts": ["kafka_connect"]}],
        "postgresql_max_slot_wal_keep_size": "16GB",
    }
    return {**base, **overrides}


def model(hostvars: Any = None, groups: Any = None, kafka: Any = None, **overrides: Any) -> dict[str, Any]:
    return postgresql_model(
        HOSTVARS if hostvars is None else hostvars,
        GROUPS if groups is None else groups,
        KAFKA if kafka is None else kafka,
        settings(**overrides),
    )


def test_a_cdc_source_with_its_reader_allowed_from_the_connect_group_only() -> None:
    m = model()
    assert m["problems"] == []
    assert m["servers"] == {
        "pg1": {"address": "10.0.0.21", "port": 5432, "names": ["pg1", "10.0.0.21"], "metrics_port": None}
    }
    assert m["ca_dir"] == "/inv/.pki"
    assert m["users"] == [{"name": "shop", "replication": False}, {"name": "debezium", "replication": True}]
    assert m["databases"] == [{"name": "shop", "owner": "shop", "publication": "kafkalab_cdc", "readers": ["debezium"]}]
    assert m["hba"] == [
        {"database": "shop", "user": "debezium", "address": "10.0.0.31/32"},
        {"database": "shop", "user": "debezium", "address": "10.0.0.32/32"},
    ]
    assert m["firewall_services"] == [
        {
            "name": "postgresql debezium@shop",
            "hosts": ["pg1"],
            "port": 5432,
            "from_hosts": ["connect1", "connect2"],
            "from_networks": [],
        }
    ]


def test_with_monitoring_hosts_each_server_exports_metrics_to_them_only() -> None:
    groups = {**GROUPS, "monitoring": ["mon1"]}
    m = model(groups=groups, postgresql_metrics_port=9187)
    assert m["problems"] == []
    assert m["servers"]["pg1"]["metrics_port"] == 9187
    assert m["firewall_services"][-1] == {
        "name": "postgresql metrics",
        "hosts": ["pg1"],
        "port": 9187,
        "from_hosts": ["mon1"],
        "from_networks": ["monitoring"],
    }


def test_a_metrics_port_that_is_the_servers_own_is_refused() -> None:
    m = model(groups={**GROUPS, "monitoring": ["mon1"]}, postgresql_metrics_port=5432)
    assert m["problems"] == [
        "pg1: postgresql_metrics_port is 5432: it must be a TCP port (1-65535) other than postgresql_port (5432). "
        "Fix it."
    ]


def test_the_model_never_holds_a_password() -> None:
    assert "reader-pass" not in repr(model())


def test_no_postgresql_hosts_is_an_empty_model_whatever_the_settings() -> None:
    m = model(groups={"all": [], "postgresql": []}, postgresql_users="nonsense")
    assert m["servers"] == {} and m["problems"] == [] and m["firewall_services"] == []


def test_network_classes_and_cidrs_become_hba_lines_and_firewall_sources() -> None:
    clients = [{"user": "debezium", "database": "shop", "from_networks": ["admin", "192.168.5.0/24"]}]
    m = model(postgresql_clients=clients)
    assert m["problems"] == []
    assert [r["address"] for r in m["hba"]] == ["10.9.0.0/24", "192.168.5.0/24"]
    assert m["firewall_services"][0]["from_networks"] == ["admin", "192.168.5.0/24"]
    assert m["firewall_services"][0]["from_hosts"] == []


def test_the_operators_own_ca_needs_no_project_ca() -> None:
    m = model(kafka={}, postgresql_tls_own_ca="/inv/own/ca.pem")
    assert m["problems"] == [] and m["ca_dir"] == ""


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param(
            {"kafka": {}},
            "postgresql_tls is true, but there is no CA to sign the servers' certificates",
            id="tls-without-ca",
        ),
        pytest.param(
            {"postgresql_port": 70000},
            "pg1: postgresql_port is 70000: it must be a TCP port (1-65535). Fix it.",
            id="bad-port",
        ),
        pytest.param(
            {"postgresql_max_slot_wal_keep_size": "-1"},
            "postgresql_max_slot_wal_keep_size is '-1': it must be a size such as 1GB",
            id="unbounded-wal",
        ),
        pytest.param(
            {"postgresql_users": {"shop": "x"}},
            "postgresql_users is a dict: it must be a list of users (name, password, replication). Fix "
            "postgresql_users in group_vars.",
            id="users-not-a-list",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "Shop-Owner", "password": "x"}]},
            "postgresql_users[0] (Shop-Owner): name 'Shop-Owner' must be lower-case letters",
            id="bad-user-name",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "postgres", "password": "x"}]},
            "postgresql_users[0] (postgres): postgres is PostgreSQL's own role",
            id="reserved-user",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "prometheus", "password": "x"}]},
            "postgresql_users[0] (prometheus): prometheus is the metrics exporter's login (no password, local peer "
            "login only). Pick another name.",
            id="exporter-user",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "shop", "password": "x"}, {"name": "shop", "password": "y"}]},
            "postgresql_users[1] (shop): user shop is declared twice. Declare each user once.",
            id="duplicate-user",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "shop"}]},
            "postgresql_users[0] (shop): password is missing or not a string",
            id="no-password",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "shop", "password": "x", "replicaton": True}]},
            "postgresql_users[0] (shop): unknown key(s) replicaton; a user knows name, password, replication. Fix the "
            "spelling.",
            id="mistyped-user-key",
        ),
        pytest.param(
            {"postgresql_users": [{"name": "shop", "password": "x", "replication": "yes"}]},
            "postgresql_users[0] (shop): replication is 'yes'; it must be true or false.",
            id="replication-not-bool",
        ),
        pytest.param(
            {"postgresql_databases": [{"name": "shop", "owner": "nobody"}]},
            "postgresql_databases[0] (shop): owner 'nobody' is not a user postgresql_users declares.",
            id="unknown-owner",
        ),
        pytest.param(
            {"postgresql_databases": [{"name": "template1", "owner": "shop"}]},
            "postgresql_databases[0] (template1): name 'template1' must be a lower-case identifier of your own",
            id="template-database",
        ),
        pytest.param(
            {"postgresql_databases": [{"name": "shop", "owner": "shop", "readers": ["bi"]}]},
            "postgresql_databases[0] (shop): reader 'bi' is not a user postgresql_users declares.",
            id="unknown-reader",
        ),
        pytest.param(
            {"postgresql_databases": [{"name": "shop", "owner": "shop", "publication": "cdc-all"}]},
            "postgresql_databases[0] (shop): publication 'cdc-all' must be a lower-case identifier",
            id="bad-publication",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "debezium", "database": "shop", "from_hosts": ["kafka_conect"]}]},
            "postgresql_clients[0] (debezium@shop): from_hosts names 'kafka_conect', which is neither a host nor a "
            "group of the inventory. Fix the name.",
            id="unknown-source",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "debezium", "database": "shop", "from_networks": ["10.0.0.300/24"]}]},
            "postgresql_clients[0] (debezium@shop): from_networks entry '10.0.0.300/24' is neither a network class",
            id="bad-network",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "debezium", "database": "shop", "from_networks": ["10.0.0.5/24"]}]},
            "postgresql_clients[0] (debezium@shop): from_networks entry '10.0.0.5/24' is neither a network class "
            "(admin, clients, monitoring) nor a network: '10.0.0.5/24' has host bits set: write 10.0.0.0/24 for the "
            "network, or 10.0.0.5/32 for the one address. Fix it.",
            id="host-bits-set",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "debezium", "database": "shop"}]},
            "postgresql_clients[0] (debezium@shop): no host or network may log in as it",
            id="no-source",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "bi", "database": "sales", "from_hosts": ["connect1"]}]},
            "postgresql_clients[0] (bi@sales): user 'bi' is not a user postgresql_users declares.",
            id="unknown-client-user",
        ),
        pytest.param(
            {"postgresql_clients": [{"user": "debezium", "database": "sales", "from_hosts": ["connect1"]}]},
            "postgresql_clients[0] (debezium@sales): database 'sales' is not one postgresql_databases declares.",
            id="unknown-client-database",
        ),
    ],
)
def test_bad_settings_are_refused_naming_what_and_how_to_fix(overrides: dict[str, Any], expected: str) -> None:
    kafka = overrides.pop("kafka", None)
    problems = model(kafka=kafka, **overrides)["problems"]
    assert any(p.startswith(expected) for p in problems), problems


def test_a_client_host_without_an_ip_is_refused() -> None:
    hostvars = {**HOSTVARS, "connect2": {"ansible_host": "connect2.example.com"}}
    problems = model(hostvars=hostvars)["problems"]
    assert problems == [
        "postgresql_clients[0] (debezium@shop): client host connect2 has no IP address (firewall_address or "
        "ansible_host) for pg_hba.conf and the firewall. Set firewall_address for it."
    ]
