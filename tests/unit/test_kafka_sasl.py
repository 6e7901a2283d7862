"""SCRAM users, the authorizer and ACLs: what preflight refuses, what each node's properties and the admin tools'
settings say, the format's --add-scram arguments, and the plan of users and ACLs (kafka_access_plan)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_cluster import kafka_cluster_model
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_sasl import (
    kafka_admin_endpoint,
    kafka_broker_password_changes,
    kafka_sasl_client_properties,
    kafka_sasl_secrets,
    kafka_sasl_server_properties,
    kafka_sasl_settings,
    kafka_scram_format_args,
)
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_tls import kafka_tool_client_files
from ansible_collections.kafkalab.kafka.plugins.filter.scram import kafka_scram_login
from ansible_collections.kafkalab.kafka.plugins.module_utils.kafka_access_plan import (
    describe,
    password_mark,
    plan_acls,
    plan_users,
)
from test_kafka_tls import BROKERS, CONTROLLERS, HOSTS, SETTINGS

from kafkalab import kafka_client

SASL: dict[str, Any] = {
    **SETTINGS,
    "listeners": [
        {"name": "INTERNAL", "port": 9092, "protocol": "SASL_SSL"},
        {"name": "PLAIN", "port": 9095, "protocol": "PLAINTEXT"},
    ],
    "tls_ca_dir": "/inv/.pki",
}
USERS = [
    {"name": "admin", "password": "Adm1n-pass-word"},
    {"name": "broker", "password": "Br0ker-pass-word"},
    {"name": "alice", "password": "Al1ce-pass-word"},
    {"name": "gone", "state": "absent"},
]
ACLS = [{"principal": "User:alice", "resource_type": "topic", "name": "t", "operation": "read"}]


def model(settings: dict[str, Any] = SASL) -> dict[str, Any]:
    result = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, settings)
    assert result["problems"] == []
    return result


def security(
    users: Any = USERS, acls: Any = ACLS, authorizer: Any = True, settings: dict = SASL, quotas: Any = None
) -> dict[str, Any]:
    return kafka_sasl_settings(model(settings), users, "admin", "broker", authorizer, acls, quotas)


def test_a_sasl_cluster_checks_out_and_names_no_password() -> None:
    s = security()
    assert s["problems"] == []
    assert s["sasl"] and s["inter_broker_sasl"] and s["authorizer"]
    assert s["users"] == {"admin": {"state": "present"}, "broker": {"state": "present"}, "alice": {"state": "present"},
                          "gone": {"state": "absent"}}  # fmt: skip
    assert s["acls"] == [{"principal": "User:alice", "resource_type": "topic", "name": "t", "pattern_type": "literal",
                          "operation": "read", "permission": "allow", "host": "*", "state": "present"}]  # fmt: skip
    assert "pass-word" not in repr(s)


def test_sasl_listeners_run_tls_and_hand_out_the_ca() -> None:
    m = model()
    assert m["sasl_listeners"] == ["INTERNAL"]
    assert m["tls_listeners"]["INTERNAL"] == "none"
    assert m["client_config"] == "/inv/.pki/client.properties"


def test_server_properties_read_the_broker_password_from_the_secrets_file() -> None:
    props = kafka_sasl_server_properties(security(), model(), "/etc/kafka/secrets.properties")
    assert props["listener.name.internal.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["listener.name.internal.scram-sha-512.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
        'password="${file:/etc/kafka/secrets.properties:broker.password}";'
    )
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert props["config.providers.file.class"] == "org.apache.kafka.common.config.provider.FileConfigProvider"
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    # The nodes are one principal, so a node joining or leaving changes no node's properties (no restart).
    assert props["super.users"] == "User:admin;User:broker;User:kafka-node"
    assert props["ssl.principal.mapping.rules"] == "RULE:^CN=[^,]+$/kafka-node/,DEFAULT"
    fewer = kafka_cluster_model({k: v for k, v in HOSTS.items() if k != "k4"}, CONTROLLERS, ["k2", "k3"], SASL)
    assert kafka_sasl_server_properties(security(), fewer, "/etc/kafka/secrets.properties") == props
    assert not [k for k in props if k.startswith("listener.name.plain.")]
    assert "pass-word" not in repr(props)


def test_without_sasl_nothing_is_added() -> None:
    plain = {**SASL, "listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SSL"}]}
    s = kafka_sasl_settings(model(plain), [], "admin", "broker", False, [])
    assert s["problems"] == [] and not s["sasl"]
    assert kafka_sasl_server_properties(s, model(plain), "/x") == {}
    assert kafka_sasl_client_properties(s, [], "INTERNAL") == {}
    assert kafka_sasl_secrets(s, []) == {}
    assert kafka_scram_format_args(s, [], 8192) == []


def test_a_sasl_client_listener_beside_a_plaintext_inter_broker_one() -> None:
    """The lab: INTERNAL (inter-broker) PLAINTEXT for classroom scripts, SECURE beside it with TLS and SCRAM, no
    authorizer. The controller machine's client settings are per listener, and the SCRAM marks' home is the CA's."""
    lab = {**SASL, "inter_broker_listener_name": "PLAIN",
           "listeners": [{"name": "PLAIN", "port": 9092, "protocol": "PLAINTEXT"},
                         {"name": "SECURE", "port": 9095, "protocol": "SASL_SSL"}]}  # fmt: skip
    m = model(lab)
    s = kafka_sasl_settings(m, USERS[:1], "admin", "broker", False, [])
    assert s["problems"] == [] and s["sasl"] and not s["inter_broker_sasl"] and not s["authorizer"]
    assert m["client_config"] == ""  # PLAINTEXT bootstrap: nothing to read
    assert m["tls_ca_dir"] == "/inv/.pki"
    assert m["listener_client_configs"] == {"SECURE": "/inv/.pki/client-secure.properties"}
    assert kafka_sasl_client_properties(s, USERS, "SECURE")["sasl.mechanism"] == "SCRAM-SHA-512"
    assert kafka_sasl_client_properties(s, USERS, "PLAIN") == {}
    assert kafka_tool_client_files(m) == [
        {"file": "controller-client.properties", "listener": "CONTROLLER"},
        {"file": "client.properties", "listener": "PLAIN"},
        {"file": "client-secure.properties", "listener": "SECURE"},
    ]


def test_the_admin_logs_in_from_the_controller_on_the_inter_broker_listener_else_on_one_not_behind_nat() -> None:
    endpoint = kafka_admin_endpoint(security(), model())
    assert endpoint["listener"] == "INTERNAL" and endpoint["config"] == "/inv/.pki/client-internal.properties"
    assert endpoint["bootstrap"].split(",")[0].endswith(":9092")
    lab = {**SASL, "inter_broker_listener_name": "PLAIN",
           "listeners": [{"name": "PLAIN", "port": 9092, "protocol": "PLAINTEXT"},
                         {"name": "OUTSIDE", "port": 9094, "protocol": "SASL_SSL", "external": True},
                         {"name": "SECURE", "port": 9095, "protocol": "SASL_SSL"}]}  # fmt: skip
    hosts = {h: {**v, "kafka_listener_overrides": {"OUTSIDE": {"advertised_host": f"{h}.example.net"}}}
             for h, v in HOSTS.items()}  # fmt: skip
    m = kafka_cluster_model(hosts, CONTROLLERS, BROKERS, lab)
    assert m["problems"] == []
    s = kafka_sasl_settings(m, USERS[:1], "admin", "broker", False, [])
    endpoint = kafka_admin_endpoint(s, m)
    assert endpoint["listener"] == "SECURE" and endpoint["config"] == "/inv/.pki/client-secure.properties"
    assert all(server.endswith(":9095") for server in endpoint["bootstrap"].split(","))
    assert len(endpoint["bootstrap"].split(",")) == len(BROKERS)
    only_outside = {**lab, "listeners": lab["listeners"][:2]}
    m = kafka_cluster_model(hosts, CONTROLLERS, BROKERS, only_outside)
    assert kafka_admin_endpoint(kafka_sasl_settings(m, USERS[:1], "admin", "broker", False, []), m) == {}


def test_a_plaintext_controller_listener_is_fine_without_the_authorizer() -> None:
    plain = {**SASL, "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "PLAINTEXT"}}
    assert security(acls=[], authorizer=False, settings=plain)["problems"] == []


def test_the_admin_tools_log_in_as_the_admin_on_a_sasl_listener_only() -> None:
    s = security()
    assert kafka_sasl_client_properties(s, USERS, "INTERNAL") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
        'password="Adm1n-pass-word";',
    }
    assert kafka_sasl_client_properties(s, USERS, "CONTROLLER") == {}
    assert kafka_sasl_secrets(s, USERS) == {"broker.password": "Br0ker-pass-word"}


def test_any_users_login_is_the_one_the_python_clients_read_back() -> None:
    """kafkalab.kafka.kafka_scram_login (the lag exporter's and the Spark job's login) writes what
    kafkalab.kafka_client reads: the same user and password; an undeclared user gets an empty password, which
    the roles' preflights refuse before anything is written."""
    login = kafka_scram_login(USERS, "alice")
    assert kafka_client.from_properties(login) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "Al1ce-pass-word",
        "ssl_check_hostname": True,
    }
    assert 'password="";' in kafka_scram_login(USERS, "nobody")["sasl.jaas.config"]


def test_the_format_puts_the_admin_and_the_broker_user_into_the_first_metadata() -> None:
    assert kafka_scram_format_args(security(), USERS, 8192) == [
        "--add-scram", "SCRAM-SHA-512=[name=admin,iterations=8192,password=Adm1n-pass-word]",
        "--add-scram", "SCRAM-SHA-512=[name=broker,iterations=8192,password=Br0ker-pass-word]",
    ]  # fmt: skip


def test_a_changed_broker_password_is_seen_on_the_node() -> None:
    s = security()
    assert not kafka_broker_password_changes(s, USERS, "broker.password=Br0ker-pass-word\n")
    assert kafka_broker_password_changes(s, USERS, "# old\nbroker.password=Old-br0ker-pass\n")
    assert not kafka_broker_password_changes(s, USERS, "")


@pytest.mark.parametrize(
    "users,acls,authorizer,settings,expected",
    [
        pytest.param(
            [], [], False, SASL,
            ["listener(s) INTERNAL run SASL_SSL, and kafka_admin_user is 'admin', which kafka_users does not declare"],
            id="sasl-without-users",
        ),
        pytest.param(
            [USERS[0]], [], False, SASL,
            ["and kafka_broker_user is 'broker', which kafka_users does not declare (present, with a password): "
             "declare it in kafka_users (the user that the brokers log in as on the inter-broker listener)."],
            id="inter-broker-sasl-without-broker-user",
        ),
        pytest.param(
            [*USERS[:2], {"name": "alice", "password": "short"}], [], True, SASL,
            ["kafka_users[2] (alice) has a password that does not fit: a SCRAM password needs at least 12 characters"],
            id="weak-password",
        ),
        pytest.param(
            [*USERS[:2], {"name": "alice", "password": 'has"quote-in-it'}], [], True, SASL,
            ["kafka_users[2] (alice) has a password that does not fit"],
            id="quote-in-password",
        ),
        pytest.param(
            [*USERS[:2], {"name": "alice"}], [], True, SASL,
            ["kafka_users[2] (alice) has no password: "],
            id="no-password",
        ),
        pytest.param(
            USERS[:2], [{"principal": "User:bob", "resource_type": "topic", "name": "t", "operation": "read"}], True,
            SASL,
            ["kafka_acls[0]: principal User:bob is not a user kafka_users declares (present): declare the user, or "
             "fix the principal."],
            id="acl-for-undeclared-user",
        ),
        pytest.param(
            USERS, [{"principal": "alice", "resource_type": "topics", "name": "t", "operation": "reed"}], True, SASL,
            ["kafka_acls[0]: resource_type 'topics' is not one of topic, group, cluster, transactional_id.",
             "kafka_acls[0]: operation 'reed' is not one of all, read, write",
             "kafka_acls[0]: principal 'alice' is not User:<name> (e.g. User:alice)."],
            id="malformed-acl",
        ),
        pytest.param(
            USERS, ACLS, False, SASL,
            ["kafka_acls declares ACLs, but kafka_authorizer is false: nothing would enforce them."],
            id="acls-without-authorizer",
        ),
        pytest.param(
            [], ACLS[:0], True, {**SASL, "listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SSL"}]},
            ["kafka_authorizer / kafka_acls need a listener whose clients log in (protocol SASL_SSL in "],
            id="authorizer-without-sasl",
        ),
        pytest.param(
            USERS, ACLS, True,
            {**SASL, "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "PLAINTEXT"}},
            ["kafka_authorizer is true, but kafka_controller_listener (CONTROLLER) runs PLAINTEXT: the brokers "
             "register and send their heartbeats to the controllers there as User:ANONYMOUS"],
            id="authorizer-with-a-plaintext-controller-listener",
        ),
        pytest.param(
            USERS, ACLS, True,
            {**SASL, "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL",
                                             "client_auth": "none"}},
            ["kafka_controller_listener (CONTROLLER) asks for no client certificate"],
            id="authorizer-with-a-controller-listener-without-client-certificates",
        ),
        pytest.param(
            USERS, ACLS, True, {**SASL, "inter_broker_listener_name": "PLAIN"},
            ["kafka_authorizer is true, but the inter-broker listener (PLAIN) runs PLAINTEXT without a login or a "
             "client certificate: the brokers replicate there as User:ANONYMOUS"],
            id="authorizer-with-a-plaintext-inter-broker-listener",
        ),
    ],
)  # fmt: skip
def test_what_preflight_refuses(users: Any, acls: Any, authorizer: Any, settings: dict, expected: list[str]) -> None:
    problems = security(users, acls, authorizer, settings)["problems"]
    for text in expected:
        assert any(text in p for p in problems), (text, problems)
    for user in users:
        if user.get("password"):
            assert not [p for p in problems if user["password"] in p], "a problem shows a password"


def test_sasl_plaintext_and_sasl_on_the_controller_listener_are_refused() -> None:
    plain = {**SASL, "listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SASL_PLAINTEXT"}]}
    problems = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, plain)["problems"]
    assert any("SASL_PLAINTEXT would carry every record and the SCRAM exchange in the clear" in p for p in problems)
    controller = {**SASL, "controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SASL_SSL"}}
    problems = kafka_cluster_model(HOSTS, CONTROLLERS, BROKERS, controller)["problems"]
    assert any("kafka_controller_listener: protocol SASL_SSL is not supported" in p for p in problems)


KEY = "k" * 64


def test_users_are_created_rekeyed_or_deleted_only_when_needed() -> None:
    declared = [{**u, "state": u.get("state", "present")} for u in USERS]
    marks = {u["name"]: password_mark(KEY, u["name"], u["password"]) for u in USERS if u.get("password")}
    current = {"admin": {"SCRAM-SHA-512": 8192}, "broker": {"SCRAM-SHA-512": 8192}, "gone": {"SCRAM-SHA-512": 8192},
               "other": {"SCRAM-SHA-512": 8192}}  # fmt: skip
    actions = plan_users(declared, current, marks, KEY, 8192)
    # alice is missing, gone is marked absent, 'other' is not declared: left alone.
    assert actions == {"create": ["alice"], "update": [], "delete": ["gone"]}
    # A second run: nothing.
    current = {"admin": {"SCRAM-SHA-512": 8192}, "broker": {"SCRAM-SHA-512": 8192}, "alice": {"SCRAM-SHA-512": 8192}}
    assert plan_users(declared, current, marks, KEY, 8192) == {"create": [], "update": [], "delete": []}
    # A password changed in the inventory, other iterations, no marks (the file was lost): set again.
    changed = [{**d, "password": "N3w-alice-pass"} if d["name"] == "alice" else d for d in declared]
    assert plan_users(changed, current, marks, KEY, 8192)["update"] == ["alice"]
    assert plan_users(declared, current, marks, KEY, 16384)["update"] == ["admin", "broker", "alice"]
    assert plan_users(declared, current, {}, KEY, 8192)["update"] == ["admin", "broker", "alice"]


def test_acls_are_added_or_removed_only_as_declared() -> None:
    s = security()
    declared = [*s["acls"], {**s["acls"][0], "operation": "write", "state": "absent"}]
    held = [{**{k: v for k, v in s["acls"][0].items() if k != "state"}, "operation": "write"},
            {**{k: v for k, v in s["acls"][0].items() if k != "state"}, "principal": "User:other"}]  # fmt: skip
    actions = plan_acls(declared, held)
    assert [a["operation"] for a in actions["create"]] == ["read"]
    assert [a["operation"] for a in actions["delete"]] == ["write"]
    assert describe({"create": [], "update": ["alice"], "delete": []}, actions) == [
        "set the password of user alice",
        "add ACL: allow User:alice read on topic t from *",
        "remove ACL: allow User:alice write on topic t from *",
    ]
    # Once applied, nothing.
    assert plan_acls(declared, [{k: v for k, v in s["acls"][0].items() if k != "state"}]) == {
        "create": [],
        "delete": [],
    }
