"""playbooks/site.yml refuses a bad inventory in the controller preflight, before any play reaches a host.

The hosts of these inventories do not exist (192.0.2.0/24 is a documentation network and the
connection is SSH), so any task that reached a host would fail with UNREACHABLE instead: a run that
stops with the preflight's message, delegated to localhost, before any other play proves no host was
touched. The preflight runs whatever tags or --limit the run has, and in check mode.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab.ansible_driver import PlaybookRun, run_playbook

ROOT = Path(__file__).resolve().parents[2]


def inventory(tmp: Path, all_vars: dict[str, Any], host_vars: dict[str, dict[str, Any]] | None = None) -> Path:
    hosts = {f"kafka{i}": {"ansible_host": f"192.0.2.{10 + i}", "kafka_node_id": i} for i in (1, 2, 3)}
    for host, changes in (host_vars or {}).items():
        hosts[host].update(changes)
    members = {"kafka1": None, "kafka2": None, "kafka3": None}
    inv = {
        "all": {
            "vars": {"firewall_admin_networks": ["192.0.2.1/32"], **all_vars},
            "hosts": hosts,
            "children": {
                "kafka": {"children": {"kafka_controller": {"hosts": members}, "kafka_broker": {"hosts": members}}}
            },
        }
    }
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def site(inventory_path: Path, *args: str, check: bool = False) -> PlaybookRun:
    env = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    return run_playbook(
        ROOT / "playbooks/site.yml", inventory_path, cwd=ROOT, check=check, args=args, env=env, timeout=300
    )


def refused_in_preflight(run: PlaybookRun, message: str) -> None:
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0, out[-3000:]
    assert message in out, out[-3000:]
    # The checks ran on the controller (a play's task delegated to localhost), no host was contacted (SSH
    # to these addresses fails as UNREACHABLE), and no play that changes hosts started.
    assert re.search(r"fatal: \[(\S+ -> )?localhost\]: FAILED!", out), out[-3000:]
    assert "UNREACHABLE" not in out, out[-3000:]
    assert "PLAY [Java runtime]" not in out and "PLAY [Preflight on the hosts]" not in out, out[-3000:]


@pytest.mark.parametrize(
    "all_vars,host_vars,args,check,message",
    [
        pytest.param(
            {},
            {"kafka1": {"kafka_heapsize": "2g"}},
            (),
            False,
            "kafka1: kafka_heapsize: no such variable; did you mean kafka_heap_size?",
            id="misspelt-variable",
        ),
        pytest.param(
            {"kafka_mode": "kraftt"},
            None,
            ("--tags", "kafka_configure"),
            False,
            "kafka_mode is 'kraftt', but the kafka role needs one of kraft, zookeeper",
            id="bad-choice-with-tags",
        ),
        pytest.param(
            {"kafka_listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SASL_SSL"}]},
            None,
            (),
            True,
            "listener(s) INTERNAL run SASL_SSL, and kafka_admin_user is 'admin', which kafka_users does not declare",
            id="secured-listener-in-check-mode",
        ),
        pytest.param(
            {"kafka_listeners": "INTERNAL://:9092"},
            None,
            (),
            False,
            "kafka_listeners is 'INTERNAL://:9092' (a string, not a list), but the kafka role needs a list",
            id="listeners-a-string",
        ),
        pytest.param(
            {},
            {"kafka2": {"kafka_version": "4.2.1"}},
            (),
            False,
            "kafka_version must be the same on every host of group kafka, but it differs",
            id="version-per-host",
        ),
        pytest.param(
            {"kafka_default_replication_factor": 5},
            None,
            ("--tags", "kafka_install", "--limit", "kafka2"),
            True,
            "kafka_default_replication_factor 5 is larger than the number of brokers (3)",
            id="impossible-replication-factor-limited-to-one-host",
        ),
    ],
)
def test_bad_inventory_stops_site_in_preflight_before_any_host(
    tmp_path: Path,
    all_vars: dict[str, Any],
    host_vars: dict[str, dict[str, Any]] | None,
    args: tuple[str, ...],
    check: bool,
    message: str,
) -> None:
    refused_in_preflight(site(inventory(tmp_path, all_vars, host_vars), *args, check=check), message)


def test_inventory_with_a_yaml_error_is_named_as_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  children:\n    kafka:\n      hosts: [kafka1\n")
    refused_in_preflight(site(path), f"The inventory ({path}) has no hosts: Ansible could not parse it")


def test_a_topic_config_the_pinned_release_does_not_know_is_refused(tmp_path: Path) -> None:
    """Checked against the list the release's own LogConfig prints (message.format.version left in Kafka 4)."""
    archive = ROOT / ".cache/artifacts/kafka_2.13-4.3.1.tgz"
    assert archive.exists(), f"{archive} missing: make artifacts builds it (make unit depends on it)"
    sha512 = Path(f"{archive}.sha512").read_text().split()[0]
    topic = {"name": "events", "partitions": 3, "replication_factor": 3, "configs": {"message.format.version": "3.0"}}
    all_vars = {
        "kafka_archive_source": "local",
        "kafka_archive_local_path": str(archive),
        "kafka_archive_sha512": sha512,
        "kafka_topics": [topic],
    }
    refused_in_preflight(
        site(inventory(tmp_path, all_vars)),
        "topic 'events': configs.message.format.version is not a topic config this Kafka release knows",
    )


def test_the_single_host_inventory_passes_the_controller_preflight_and_a_port_clash_in_it_does_not(
    tmp_path: Path,
) -> None:
    """inventories/single-host as shipped gets past every controller check (its machine, 192.0.2.10, is not
    there, so the first task on a host is UNREACHABLE); the same inventory with two instances on one port
    stops in the controller preflight, naming the host, the instance and the variable."""
    env = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    shipped = ROOT / "inventories" / "single-host"
    run = run_playbook(ROOT / "playbooks/preflight.yml", shipped, cwd=ROOT, env=env, timeout=300)
    out = " ".join((run.stdout + run.stderr).split())
    assert "PLAY [Preflight on the hosts]" in out, out[-3000:]
    assert not re.search(r"fatal: \[(\S+ -> )?localhost\]", out), out[-3000:]
    assert "fatal: [classroom-1]: UNREACHABLE!" in out, out[-3000:]

    inv = yaml.safe_load((shipped / "hosts.yml").read_text())
    inv["all"]["hosts"]["classroom-3"]["kafka_listener_overrides"] = {"INTERNAL": {"port": 9093}}
    clash = tmp_path / "single-host"
    (clash / "group_vars").mkdir(parents=True)
    (clash / "hosts.yml").write_text(yaml.safe_dump(inv))
    (clash / "group_vars" / "all").symlink_to(shipped / "group_vars" / "all")
    refused_in_preflight(
        run_playbook(ROOT / "playbooks/site.yml", clash, cwd=ROOT, env=env, timeout=300),
        "classroom-3: instance 3 on machine 192.0.2.10 opens port 9093 (listener INTERNAL), which classroom-2 "
        "(instance 2, listener INTERNAL) opens too. Give each instance its own ports",
    )


def shipped_archive() -> dict[str, Any]:
    """The release and archive settings of inventories/single-host: the archive `make artifacts` assembles, so the
    Kafka checks that run before the ones a test is about fetch nothing."""
    shipped = yaml.safe_load((ROOT / "inventories/single-host/group_vars/all/kafka.yml").read_text())
    return {k: v for k, v in shipped.items() if k.startswith("kafka_archive_") or k == "kafka_version"}


def with_spark(tmp: Path, all_vars: dict[str, Any], spark1: dict[str, Any]) -> Path:
    """inventory() with the archive `make artifacts` assembles (as inventories/single-host takes it: the Kafka
    checks that run before the Spark ones fetch nothing) and one Spark host, spark1, master and worker."""
    path = inventory(tmp, {**shipped_archive(), **all_vars})
    inv = yaml.safe_load(path.read_text())
    inv["all"]["hosts"]["spark1"] = {"ansible_host": "192.0.2.21", **spark1}
    inv["all"]["children"]["spark"] = {
        "children": {"spark_master": {"hosts": {"spark1": None}}, "spark_worker": {"hosts": {"spark1": None}}}
    }
    path.write_text(yaml.safe_dump(inv))
    return path


def test_a_short_spark_secret_is_refused_without_showing_it(tmp_path: Path) -> None:
    secret = "too short, and spaced"
    run = site(with_spark(tmp_path, {}, {"spark_authenticate_secret": secret}))
    refused_in_preflight(
        run,
        "spark1: spark_authenticate_secret is 21 characters with white space: give at least 32 characters without "
        "spaces (from ansible-vault), or leave it empty and the controller generates one.",
    )
    assert secret not in run.stdout + run.stderr


def test_a_spark_job_without_a_declared_kafka_user_is_refused_on_a_sasl_listener(tmp_path: Path) -> None:
    secured = {
        "kafka_listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SASL_SSL"}],
        "kafka_users": [
            {"name": "admin", "password": "Adm1n-unit-test-pass"},
            {"name": "broker", "password": "Br0ker-unit-test-pass"},
        ],
        "kafka_tls_ca_dir": str(tmp_path / "pki"),
    }
    run = site(with_spark(tmp_path, secured, {}))
    refused_in_preflight(
        run,
        "spark_consumer_kafka_user is 'spark', which kafka_users does not declare (present, with a password): the "
        "Spark job on spark1 logs in as it on the SASL_SSL bootstrap listener",
    )
    assert "Adm1n-unit-test-pass" not in run.stdout + run.stderr


def test_an_avro_archive_without_a_registry_is_refused(tmp_path: Path) -> None:
    run = site(with_spark(tmp_path, {"spark_consumer_avro_topics": ["orders"]}, {}))
    refused_in_preflight(
        run,
        'spark1: spark_consumer_avro_topics is ["orders"], but the job has no Schema Registry to read their schemas '
        "from: add hosts to group schema_registry, or set spark_consumer_schema_registry_urls to its ccompat API",
    )


VAULT_PASSWORD = "unit-test-vault-password"


def with_vaulted_users(tmp: Path, passwords: dict[str, str]) -> tuple[Path, Path]:
    """inventory() on SASL_SSL with the archive `make artifacts` assembles, whose kafka_users take their passwords
    from ansible-vault: group_vars/all/vault.yml beside it as `ansible-vault encrypt_string` writes it (one inline
    !vault value per user), under VAULT_PASSWORD. Returns the inventory and the vault password file."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    vault = VaultLib([("default", VaultSecret(VAULT_PASSWORD.encode()))])
    secured = {
        "kafka_listeners": [{"name": "INTERNAL", "port": 9092, "protocol": "SASL_SSL"}],
        "kafka_controller_listener": {"name": "CONTROLLER", "port": 9093, "protocol": "SSL"},
        "kafka_users": [{"name": name, "password": f"{{{{ vault_{name}_password }}}}"} for name in passwords],
        "kafka_authorizer": True,
        "kafka_tls_ca_dir": str(tmp / "pki"),
    }
    path = inventory(tmp, {**shipped_archive(), **secured})
    (tmp / "group_vars" / "all").mkdir(parents=True)
    lines = ["---"]
    for name, password in passwords.items():
        lines.append(f"vault_{name}_password: !vault |")
        lines += [f"  {line}" for line in vault.encrypt(password).decode().splitlines()]
    (tmp / "group_vars" / "all" / "vault.yml").write_text("\n".join(lines) + "\n")
    secret_file = tmp / "vault-password"
    secret_file.write_text(VAULT_PASSWORD + "\n")
    secret_file.chmod(0o600)
    return path, secret_file


def test_scram_passwords_from_ansible_vault_pass_the_preflight_and_never_show(tmp_path: Path) -> None:
    """The way a real inventory keeps its passwords: every controller check reads them decrypted (its hosts,
    192.0.2.x, are not there, so the first task on a host is UNREACHABLE), and a -vvv run shows none of them."""
    passwords = {"admin": "Adm1n-vaulted-unit-pass", "broker": "Br0ker-vaulted-unit-pass"}
    path, secret_file = with_vaulted_users(tmp_path, passwords)
    env = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    run = run_playbook(
        ROOT / "playbooks/preflight.yml", path, cwd=ROOT, env=env, timeout=300,
        args=("-vvv", "--vault-password-file", str(secret_file)),
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert "PLAY [Preflight on the hosts]" in out, out[-3000:]
    assert not re.search(r"fatal: \[(\S+ -> )?localhost\]", out), out[-3000:]
    assert "UNREACHABLE!" in out, out[-3000:]
    for password in passwords.values():
        assert password not in run.stdout + run.stderr


def test_a_vaulted_scram_password_that_does_not_fit_is_refused_without_showing_it(tmp_path: Path) -> None:
    passwords = {"admin": "sh0rt pass", "broker": "Br0ker-vaulted-unit-pass"}
    path, secret_file = with_vaulted_users(tmp_path, passwords)
    run = site(path, "-vvv", "--vault-password-file", str(secret_file))
    refused_in_preflight(
        run, "kafka_users[0] (admin) has a password that does not fit: a SCRAM password needs at least 12"
    )
    for password in passwords.values():
        assert password not in run.stdout + run.stderr


def test_a_registry_schema_that_is_not_avro_is_refused_before_any_host(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "orders.avsc").write_text('{"type": "record", "name": "O", "fields": [{"name": "id"}]}')
    path = inventory(
        tmp_path,
        {
            **shipped_archive(),
            "schema_registry_schemas_dir": str(tmp_path / "schemas"),
            "schema_registry_subjects": [{"name": "orders-value", "schema_file": "orders.avsc"}],
        },
    )
    inv = yaml.safe_load(path.read_text())
    inv["all"]["children"]["schema_registry"] = {"hosts": {"kafka1": None, "kafka2": None}}
    path.write_text(yaml.safe_dump(inv))
    refused_in_preflight(
        site(path),
        f"schema_registry_subjects[0] (orders-value): schema_file {tmp_path}/schemas/orders.avsc is not a valid Avro "
        "schema",
    )
