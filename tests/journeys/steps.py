"""What the journeys' steps share: the load they run under, the runs they make, and what they read on the nodes."""

from __future__ import annotations

import itertools
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties, to_properties
from ansible_collections.kafkalab.kafka.plugins.module_utils.scram import jaas
from inventory_hosts import (
    ROOT,
    host_variables,
    kafka_properties_path,
    kafka_unit,
    listener_address,
    listener_client_config,
    listener_protocol,
    node,
    playbook_command,
    playbook_env,
    run_playbook,
)
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.errors import SecurityDisabledError

from kafkalab import kafka_client


def one_line(output: str) -> str:
    """A run's output with every run of white space made one space: Ansible wraps its messages anywhere."""
    return re.sub(r"\s+", " ", output)


def started_at(name: str, unit: str | None = None) -> int:
    """When the host's Kafka (or `unit`) last started (systemd's monotonic clock: one kernel for every container)."""
    unit = unit or kafka_unit(name)
    return int(node(name).check_output(f"systemctl show {unit} --property=ActiveEnterTimestampMonotonic --value"))


def down_window(name: str, unit: str | None = None) -> tuple[int, int]:
    """When the host's Kafka (or `unit`) last stopped and last started (monotonic µs)."""
    unit = unit or kafka_unit(name)
    shown = node(name).check_output(
        f"systemctl show {unit} --property=ActiveExitTimestampMonotonic --property=ActiveEnterTimestampMonotonic"
    )
    values = dict(line.split("=", 1) for line in shown.splitlines())
    return int(values["ActiveExitTimestampMonotonic"]), int(values["ActiveEnterTimestampMonotonic"])


def restarted_one_at_a_time(started: dict[str, int], unit: str | None = None) -> list[str]:
    """Checks that every host of `started` (when its Kafka, or `unit`, started before) restarted since, and that no
    two were down together (the next stopped only after the previous started again); returns the restart order."""
    windows = sorted((*down_window(name, unit), name) for name in started)
    assert [name for stopped, _, name in windows if stopped <= started[name]] == [], f"not restarted: {windows}"
    overlapping = [f"{a[2]}+{b[2]}" for a, b in itertools.pairwise(windows) if b[0] <= a[1]]
    assert overlapping == [], f"down together: {overlapping} ({windows})"
    return [name for _, _, name in windows]


def restart_pending(name: str) -> bool:
    """Whether the node's restart marker says a restart is pending (plugins/modules/restart_marker.py)."""
    return bool(node(name).file(f"/var/lib/kafkalab/restart/{kafka_unit(name)}.pending").exists)


def properties(name: str) -> dict[str, str]:
    return parse_properties(node(name).file(kafka_properties_path(name)).content_string)


def inter_broker_address(name: str) -> str:
    """host:port the node advertises on its inter-broker listener (the one the node's admin tools reach by
    themselves: the kafka-* wrappers give them its settings)."""
    props = properties(name)
    return listener_address(props, props.get("inter.broker.listener.name", ""))


PROTOCOL_RANK = {"PLAINTEXT": 0, "SSL": 1, "SASL_SSL": 2}
TLS = {"SSL", "SASL_SSL"}


@dataclass(frozen=True)
class Listener:
    name: str
    protocol: str
    address: str  # host:port, as the node advertises it
    inter_broker: bool


def inside_listeners(name: str) -> list[Listener]:
    """The inter-broker listener, then the node's other advertised client listeners on the cluster network (not
    `external`: those are advertised under another machine's address; the controller's is never advertised)."""
    props = properties(name)
    inter_broker = props.get("inter.broker.listener.name", "")
    external = {str(item["name"]) for item in host_variables(name).get("kafka_listeners") or [] if item.get("external")}
    advertised = [item.partition("://")[0] for item in props.get("advertised.listeners", "").split(",") if item]
    names = [inter_broker, *(listener for listener in advertised if listener not in external | {inter_broker})]
    return [
        Listener(
            name=listener,
            protocol=listener_protocol(props, listener),
            address=listener_address(props, listener),
            inter_broker=listener == inter_broker,
        )
        for listener in names
    ]


def most_secure(listeners: list[Listener]) -> Listener:
    """SASL_SSL, then SSL, then PLAINTEXT; the first on a tie (the inter-broker listener leads inside_listeners)."""
    return max(listeners, key=lambda listener: PROTOCOL_RANK.get(listener.protocol, 0))


def journey_listener(name: str) -> Listener:
    """The listener the journeys' clients on the controller machine use: of inside_listeners, the most secure
    (SASL_SSL, then SSL), the inter-broker one on a tie. Molecule's default scenario runs the inter-broker listener
    on SASL_SSL; the lab keeps it PLAINTEXT and has SECURE (SASL_SSL) beside it: the password and certificate steps
    need the login and the TLS there."""
    return most_secure(inside_listeners(name))


def journey_address(name: str) -> str:
    return journey_listener(name).address


def journey_client_config(name: str) -> str | None:
    """The settings the kafka role wrote on the controller machine for the journey listener (its CA, and on SASL_SSL
    the admin's login; kafka_cluster.listener_client_configs), None when it runs PLAINTEXT."""
    listener = journey_listener(name)
    return listener_client_config(listener.name) if listener.protocol in TLS else None


def journey_tool_args(name: str) -> str:
    """A node's admin tool's --bootstrap-server for the journey listener, with the node's own settings for it when it
    is not the inter-broker listener (the wrappers add those by themselves): the admin's login on SASL_SSL."""
    listener = journey_listener(name)
    args = f"--bootstrap-server {listener.address}"
    if not listener.inter_broker and listener.protocol in TLS:
        conf_dir = os.path.dirname(kafka_properties_path(name))
        args += f" --command-config {conf_dir}/client-{listener.name.lower()}.properties"
    return args


def tls_listener(name: str) -> Listener | None:
    """The listener whose certificate the journeys read on the wire: the journey listener when it runs TLS, else the
    first of inside_listeners that does."""
    inside = inside_listeners(name)
    return next((listener for listener in [most_secure(inside), *inside] if listener.protocol in TLS), None)


def served_certificate(name: str, ca_pem: str | None = None) -> tuple[int, list[str]]:
    """(openssl's exit status, [serial=..., notAfter=...]) of the certificate the node serves on its TLS listener
    (tls_listener), verified against ca_pem (default: the CAs the node itself trusts). -verify_return_error: a
    certificate the CA did not sign fails the handshake, and the status says so."""
    listener = tls_listener(name)
    assert listener, f"{name}: no listener runs TLS"
    trust = "/etc/kafka/tls/ca.pem"
    script = "set -euo pipefail\n"
    if ca_pem is not None:
        script += 'trust=$(mktemp); trap \'rm -f "$trust"\' EXIT\nprintf "%s\\n" "$1" > "$trust"\n'
        trust = '"$trust"'
    script += (
        f"openssl s_client -connect {listener.address} -CAfile {trust} -verify_return_error"
        " </dev/null 2>/dev/null | openssl x509 -noout -serial -enddate\n"
    )
    result = node(name).run("bash -c %s served %s", script, ca_pem or "")
    return result.rc, result.stdout.splitlines()


def ansible(playbook: str, *args: str, inventories: Sequence[str] = ()) -> str:
    """A run that must succeed (inventory_hosts.run_playbook): its output, stdout and stderr as one."""
    run = run_playbook(playbook, args, timeout=3600, inventories=inventories)
    assert run.returncode == 0, f"{playbook} failed:\n{run.stdout[-4000:]}"
    return run.stdout


def refused(playbook: str, *args: str, inventories: Sequence[str] = ()) -> str:
    """A run that must be refused: its output as one line."""
    run = run_playbook(playbook, args, timeout=3600, inventories=inventories)
    assert run.returncode != 0, f"{playbook} was not refused:\n{run.stdout[-4000:]}"
    return one_line(run.stdout)


RECAP = r"(?m)^([a-z][a-z0-9-]*)\s+: ok=\d+\s+changed=(\d+)"


def recap(output: str) -> list[tuple[str, str]]:
    """(host, changed) from a run's PLAY RECAP."""
    return re.findall(RECAP, output)


def assert_unchanged(found: list[tuple[str, str]], hosts: Iterable[str]) -> None:
    """Every one of `hosts` is in the run's recap, and no host of it changed anything."""
    assert set(hosts) <= {host for host, _ in found}, found
    assert [host for host, changed in found if int(changed) > 0] == [], f"changed: {found}"


def vvv_run(playbook: str, args: Sequence[str], log: Path) -> list[tuple[str, str]]:
    """A run at -vvv into `log` (tests/cluster/test_secrets.py reads it), not into ANSIBLE_LOG_PATH (the load's
    phases read that one): it must succeed; its recap."""
    env = {key: value for key, value in playbook_env().items() if key != "ANSIBLE_LOG_PATH"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        run = subprocess.run(
            playbook_command(playbook, ["-vvv", *args]),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=3600,
            check=False,
        )
    assert run.returncode == 0, f"{playbook} failed: {log}"
    return recap(log.read_text())


def interrupted(playbook: str, args: Sequence[str], hosts: Sequence[str], probe: str, log: Path) -> str:
    """The playbook run SIGKILLed once `probe` (a shell command with {host}) succeeds on every host
    (python -m kafkalab.interrupt, which logs to `log`): what it said of when it killed the run."""
    command = [sys.executable, "-m", "kafkalab.interrupt", "--hosts", ",".join(hosts), "--probe", probe]
    command += ["--log", str(log), "--", *playbook_command(playbook, args)]
    killed = subprocess.run(
        command, cwd=ROOT, env=playbook_env(), capture_output=True, text=True, timeout=3600, check=False
    )
    assert killed.returncode == 0, killed.stdout + killed.stderr
    return killed.stdout.strip()


# The load's own SCRAM user (on a SASL_SSL journey listener): never the admin, whose password a journey changes for
# two runs; a connection the load opened in that window (a group coordinator moving) would be refused.
LOAD_USER = "kafkalab-journey-load"


def load_acls(topic: str) -> list[ACL]:
    """What the load may do where an authorizer runs, and no more: create, write, read and describe its topic (and its
    configs: min.insync.replicas), read and describe its groups (kafkalab-load-<run id>). Writing a topic is all an
    idempotent producer needs (KIP-679)."""
    topic_pattern = ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL)
    group_pattern = ResourcePattern(ResourceType.GROUP, "kafkalab-load-", ACLResourcePatternType.PREFIXED)
    topic_ops = (
        ACLOperation.CREATE,
        ACLOperation.WRITE,
        ACLOperation.READ,
        ACLOperation.DESCRIBE,
        ACLOperation.DESCRIBE_CONFIGS,
    )
    return [
        ACL(f"User:{LOAD_USER}", "*", operation, ACLPermissionType.ALLOW, pattern)
        for pattern, operations in (
            (topic_pattern, topic_ops),
            (group_pattern, (ACLOperation.READ, ACLOperation.DESCRIBE)),
        )
        for operation in operations
    ]


@dataclass
class Load:
    """python -m kafkalab.load: a producer writing with acks=all and idempotence to an RF 3, min.insync.replicas 2
    topic, and a consumer group committing, in the background; each phase ends with an accounting of every
    acknowledged record (lost, duplicated, order, the group's offsets, the longest gap between two acks), appended
    to the report, and fails the step when anything acked is not there once.

    client_config: the journey listener's settings (the admin's login on SASL_SSL), which the journeys' own clients
    use; the load logs in as LOAD_USER, made for it at start and deleted at close."""

    bootstrap: str
    client_config: str | None
    state: Path
    report: Path
    topic: str = "lifecycle"
    rate: int = 100
    accounted: list[str] = field(default_factory=list)

    def _log_args(self) -> list[str]:
        # The playbook log (ANSIBLE_LOG_PATH: molecule.yml's env): each phase reports the restarts it made.
        log = os.environ.get("ANSIBLE_LOG_PATH", "")
        return ["--ansible-log", log] if log else []

    def _run(self, *args: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "kafkalab.load", *args, "--state", str(self.state), *self._log_args()],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=1800,
            check=False,
        )
        assert run.returncode == 0, f"load {args[0]}:\n{run.stdout[-4000:]}"
        return run.stdout.strip()

    @property
    def _login_file(self) -> Path:
        return self.state.parent / f"{self.state.name}-client.properties"

    def _admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(
            **kafka_client.settings(self.client_config), bootstrap_servers=self.bootstrap, request_timeout_ms=30_000
        )

    def _own_login(self) -> str | None:
        """The load's client settings: the journey listener's, with LOAD_USER's login (made now, with a new password,
        and its ACLs where an authorizer runs) in place of the admin's on SASL_SSL; written 0600."""
        if not self.client_config:
            return None
        props = kafka_client.read_properties(Path(self.client_config).read_text(encoding="utf-8"))
        if "sasl.jaas.config" not in props:
            return self.client_config
        password = secrets.token_hex(16)
        admin = self._admin()
        try:
            upsert = UserScramCredentialUpsertion(LOAD_USER, ScramMechanism.SCRAM_SHA_512, password, 8192)
            refused = {user: error for user, error in admin.alter_user_scram_credentials([upsert]).items() if error}
            assert not refused, f"the cluster refused the load's user: {refused}"
            failed = admin.create_acls(load_acls(self.topic))["failed"]
            # No authorizer (the lab): every user that logs in may do anything, and the cluster says so.
            assert all(error is SecurityDisabledError for error in failed), (
                f"the cluster refused the load's ACLs: {failed}"
            )
        finally:
            admin.close()
        props["sasl.jaas.config"] = jaas(LOAD_USER, password)
        self._login_file.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(self._login_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(to_properties(props))
        return str(self._login_file)

    def start(self) -> None:
        self.report.parent.mkdir(parents=True, exist_ok=True)
        self.report.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(self.state)], check=True)
        login = self._own_login()
        self._run(
            "start",
            "--bootstrap",
            self.bootstrap,
            "--topic",
            self.topic,
            "--rate",
            str(self.rate),
            *(["--client-config", login] if login else []),
        )

    def checkpoint(self, phase: str) -> str:
        line = self._run("checkpoint", "--phase", phase, "--report", str(self.report))
        self.accounted.append(line)
        return line

    def stop(self, phase: str) -> str:
        line = self._run("stop", "--phase", phase, "--report", str(self.report))
        self.accounted.append(line)
        return line

    def close(self, stopped: bool) -> None:
        """After the journey: stop the background load if a failed step left it running (its accounting is not
        checked: the step failed already), then delete the load's user and ACLs."""
        if not stopped:
            subprocess.run(
                [sys.executable, "-m", "kafkalab.load", "stop", "--state", str(self.state), "--phase", "abandoned"],
                cwd=ROOT,
                capture_output=True,
                timeout=1800,
                check=False,
            )
        if not self._login_file.exists():
            return
        admin = self._admin()
        try:
            admin.delete_acls(load_acls(self.topic))  # an ACL is its own filter; no authorizer: nothing to delete
            admin.alter_user_scram_credentials([UserScramCredentialDeletion(LOAD_USER, ScramMechanism.SCRAM_SHA_512)])
        finally:
            admin.close()
        self._login_file.unlink()


def account(load: Load, capsys: pytest.CaptureFixture[str], phase: str, *, stop: bool = False) -> str:
    """The load's accounting at the end of a phase (stopping it with `stop`), shown in pytest's output."""
    line = load.stop(phase) if stop else load.checkpoint(phase)
    with capsys.disabled():
        print(f"\n{line}")
    return line
