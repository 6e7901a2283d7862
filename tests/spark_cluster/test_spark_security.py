"""Spark secured and sandboxed, on the real cluster: the master refuses an RPC client without the cluster's shared
secret, with a wrong one, or with the right one but unencrypted, and answers one with it and AES-GCM encryption
(Spark's own RpcEnv, from a worker host, through the firewall as any Spark peer); the executors, which the drivers
hand the job's Kafka login, start with that encryption; the files that hold the secret are root:spark 0640 and a
non-root user outside the group cannot read them; the master, the workers, the job's drivers and the executors run
in the systemd sandbox, which the kernel enforces: their root file system is mounted read-only, the paths they
write read-write.

What the job delivers under that sandbox (exactly-once output, checkpoints, restarts) is test_spark_pipeline.py's.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from inventory_hosts import group, node

from .conftest import REALTIME_SERVICE, SERVICE, SUBMIT_CONFS, VENV_PYTHON, SparkNode

SPARK_DEFAULTS = "/etc/spark/spark-defaults.conf"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
PROBE = Path(__file__).with_name("spark_rpc_probe.py")
SPARK_HOSTS = sorted(set(group("spark_master")) | set(group("spark_worker")))


def _defaults(host: Any) -> dict[str, str]:
    return parse_properties(host.file(SPARK_DEFAULTS).content_string)


def _authenticating(host: Any) -> bool:
    return _defaults(host).get("spark.authenticate") == "true"


def test_the_master_answers_only_rpc_clients_that_hold_the_cluster_secret(spark_node: SparkNode) -> None:
    master = spark_node.submit_conf("spark.master").removeprefix("spark://")
    address, port = master.rsplit(":", 1)
    # From a worker-only host when there is one: a Spark peer the firewall lets reach the master's RPC port.
    workers = [h for h in group("spark_worker") if h not in group("spark_master")]
    prober = node((workers or [spark_node.name])[0])
    defaults = _defaults(prober)
    if defaults.get("spark.authenticate") != "true":
        pytest.skip(f"spark_authenticate is false in this inventory ({SPARK_DEFAULTS}: spark.authenticate false)")
    script = "/root/kafkalab-spark-rpc-probe.py"
    encoded = base64.b64encode(PROBE.read_bytes()).decode()
    prober.check_output(f"echo {encoded} | base64 -d > {script}")
    try:
        out = prober.check_output(f"{VENV_PYTHON} {script} {address} {port} {SPARK_DEFAULTS} 2>/dev/null")
    finally:
        prober.run(f"rm -f {script}")
    result = json.loads(out.strip().splitlines()[-1])
    print(f"spark rpc probe from {prober.backend.get_hostname()} to {master}: {result}")
    assert result["cluster_secret"]["answered"], f"the master did not answer a client holding the secret: {result}"
    assert not result["no_secret"]["answered"], "the master answered an RPC client without spark.authenticate"
    assert not result["wrong_secret"]["answered"], "the master answered an RPC client with a wrong secret"
    # Authenticated means encrypted too (roles/spark RPC_SECURITY): AES-GCM, and no unencrypted SASL fallback.
    assert defaults.get("spark.network.crypto.enabled") == "true", f"{SPARK_DEFAULTS}: RPC not encrypted"
    assert defaults.get("spark.network.crypto.saslFallback") == "false", f"{SPARK_DEFAULTS}: SASL fallback allowed"
    assert not result["unencrypted"]["answered"], "the master answered a client with the secret but no encryption"


@pytest.mark.parametrize("name", SPARK_HOSTS)
def test_the_secret_is_readable_by_root_and_the_spark_group_only(name: str) -> None:
    host = node(name)
    files = [SPARK_DEFAULTS]
    if name in group("spark_master"):
        files += [f"{SUBMIT_CONFS}/{f}" for f in host.check_output(f"ls {SUBMIT_CONFS}").split() if f.endswith(".conf")]
    for path in files:
        f = host.file(path)
        if "spark.authenticate.secret" not in f.content_string:
            assert not _authenticating(host), f"{name}: {path} holds no secret although spark.authenticate is on"
            continue
        assert (f.user, f.group, f.mode) == ("root", "spark", 0o640), f"{name}: {path} {f.user}:{f.group} {f.mode:o}"
        denied = host.run(f"runuser -u nobody -- cat {path}")
        assert denied.rc != 0 and "Permission denied" in denied.stderr, f"{name}: nobody could read {path}"


def _mount_options(host: Any, pid: int, mount_point: str) -> set[str]:
    """The options of the mount the process sees at mount_point (the last one mounted there wins)."""
    options: set[str] = set()
    for line in host.file(f"/proc/{pid}/mountinfo").content_string.splitlines():
        fields = line.split()
        if fields[4] == mount_point:
            options = set(fields[5].split(","))
    return options


def _sandboxed(host: Any, pid: int, writes: list[str], what: str) -> None:
    assert "ro" in _mount_options(host, pid, "/"), f"{what}: / is writable to it"
    for path in writes:
        assert "rw" in _mount_options(host, pid, path), f"{what}: {path} is not mounted read-write for it"
    status = host.file(f"/proc/{pid}/status").content_string
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["NoNewPrivs"].strip() == "1", f"{what}: may gain privileges"
    assert int(fields["CapBnd"].strip(), 16) == 0, f"{what}: keeps capabilities {fields['CapBnd'].strip()}"
    assert fields["Umask"].strip() == "0027", f"{what}: umask {fields['Umask'].strip()}"


def _unit(host: Any, unit: str) -> tuple[int, list[str]]:
    out = host.check_output(f"systemctl show {unit} -p MainPID -p ReadWritePaths")
    props = dict(line.split("=", 1) for line in out.splitlines())
    return int(props["MainPID"]), [p.lstrip("-") for p in props["ReadWritePaths"].split()]


@pytest.mark.parametrize("name", SPARK_HOSTS)
def test_spark_daemons_and_their_executors_run_in_the_sandbox(name: str) -> None:
    host = node(name)
    units = (["spark-master"] if name in group("spark_master") else []) + (
        ["spark-worker"] if name in group("spark_worker") else []
    )
    for unit in units:
        pid, writes = _unit(host, unit)
        assert pid > 0, f"{name}: {unit} is not running"
        _sandboxed(host, pid, [w for w in writes if host.file(w).is_directory], f"{name}: {unit}")
    if "spark-worker" in units:
        # The executors are the worker's children: the same sandbox, and they write the job's output all the same.
        # (The bracket keeps pgrep from matching the shell that runs it.)
        executors = host.run(f"pgrep -u spark -f '[o]{EXECUTOR_CLASS[1:]}'").stdout.split()
        assert executors, f"{name}: no executor runs (the job's applications hold executors on every worker)"
        encrypted = _authenticating(host)
        for pid in executors:
            assert "ro" in _mount_options(host, int(pid), "/"), f"{name}: executor {pid} may write /"
            if encrypted:
                # An executor takes the RPC settings from its driver at start (-D on its command line): it talks to
                # the driver, which sends it the job's Kafka login, encrypted.
                command = host.check_output(f"tr '\\0' ' ' < /proc/{pid}/cmdline")
                assert "-Dspark.network.crypto.enabled=true" in command, f"{name}: executor {pid} RPC not encrypted"


def test_the_jobs_drivers_run_in_the_sandbox(spark_node: SparkNode) -> None:
    services = [SERVICE] + ([REALTIME_SERVICE] if spark_node.host.service(REALTIME_SERVICE).is_enabled else [])
    for service in services:
        pid, writes = _unit(spark_node.host, service)
        assert pid > 0, f"{service} is not running"
        writes = [w for w in writes if spark_node.host.file(w).is_directory]
        assert spark_node.config["paths"]["checkpoint"] in writes or any(
            spark_node.config["paths"]["checkpoint"].startswith(w + "/") for w in writes
        ), f"{service}: its checkpoints are not among the paths it may write ({writes})"
        _sandboxed(spark_node.host, pid, writes, service)


@pytest.mark.parametrize("name", SPARK_HOSTS)
def test_the_jobs_logs_and_executors_never_show_its_kafka_password(name: str, spark_node: SparkNode) -> None:
    """With SASL_SSL the job's Kafka options hold its SCRAM login, and Spark hands them to every executor. What the
    drivers and executors log (the units' journal, the executors' stdout/stderr in the workers' work dirs, Spark's
    own log and event directories) must not show the password: Spark redacts option values that name a password
    (spark.redaction.regex). Root looks, with the password in a root-only patterns file, never on a command line."""
    options = spark_node.config["kafka"].get("options", {})
    if options.get("security.protocol") != "SASL_SSL":
        pytest.skip("the job logs in to no broker")
    password = spark_node.kafka_login()["sasl_plain_password"]
    host = node(name)
    patterns = "/root/kafkalab-job-password"
    encoded = base64.b64encode(password.encode()).decode()
    host.check_output(f"install -m 0600 /dev/null {patterns} && echo {encoded} | base64 -d > {patterns}")
    units = " ".join(f"-u {unit}" for unit in ("spark-master", "spark-worker", SERVICE, REALTIME_SERVICE))
    try:
        logged = host.run(f"journalctl --no-pager -q {units} | grep -cF -f {patterns}")
        files = host.run(
            f"find /var/lib/spark /var/log /srv /tmp -type f -size -64M -print0 2>/dev/null"
            f" | xargs -0 -r grep -lF -f {patterns} --"
        )
        executors = host.run("find /var/lib/spark -path '*/work/app-*' -name stderr | wc -l")
    finally:
        host.run(f"rm -f {patterns}")
    print(f"{name}: {executors.stdout.strip()} executor logs among the files searched")
    if name in group("spark_worker"):
        assert int(executors.stdout.strip() or 0) > 0, f"{name}: no executor's stderr to search: looked at nothing"
    assert logged.stdout.strip() == "0", f"{name}: the Spark units' journal shows the job's Kafka password"
    assert files.stdout.split() == [], f"{name}: these files show the job's Kafka password: {files.stdout.split()}"
