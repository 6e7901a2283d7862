"""Secrets never appear in Ansible's output or in files a non-root user can read.

The secrets are whatever the deployed cluster holds, read as root: every PEM private key under /etc on every
machine (each Kafka node's key, in key.pem and node.pem; each ZooKeeper server's, with zookeeper_tls), the project
CA's key on the controller, Spark's shared secret (spark.authenticate.secret), and every SCRAM user's password the
inventory declares (kafka_users). A key gives itself away by any line of its base64 body.

- The output of a whole converge at -vvv (the spark and default scenarios' journeys run site.yml again that way,
  into .cache/lifecycle/molecule-<scenario>.vvv.log) holds none of them, and shows that it ran the tasks that handle
  them with their output hidden.
- On every machine, no file under /etc, /opt, /var, /srv, /run, /tmp, /home or /root that the user nobody can
  read holds one.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from inventory_hosts import ROOT, ca_dir, group, hosts_in, inventory_listing, node, one_per_machine, runner

from kafkalab.ansible_driver import group_hosts

SCENARIO = os.environ.get("MOLECULE_SCENARIO_NAME", "spark")
VVV_LOG = ROOT / ".cache" / "lifecycle" / f"molecule-{SCENARIO}.vvv.log"
# The scenarios that run site.yml at -vvv into VVV_LOG (tests/journeys: test_spark.py, test_lifecycle.py).
VVV_SCENARIOS = ("default", "spark")
MACHINES = one_per_machine(sorted(set(group("all")) - {"localhost"}))
SCANNED = "/etc /opt /var /srv /run /tmp /home /root"
PEM_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----\n(.*?)\n-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL)
# What the log shows of a task with no_log.
HIDDEN = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"


def _key_lines(pem: str, public: str = "") -> set[str]:
    """The base64 lines of every private key in a PEM text that carry private bytes: not the short last line,
    and not a line that a certificate (public) has too. An EC key's PKCS#8 body ends with its public key, which
    can fall on the same base64 boundaries as in the certificate and is no secret."""
    lines: set[str] = set()
    for body in PEM_KEY.findall(pem):
        lines |= {line.strip() for line in body.splitlines() if len(line.strip()) >= 40}
    return {line for line in lines if line not in public}


def _host_secrets(host: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    pems = host.run("grep -rlZ --include='*.pem' --include='*.key' -e 'PRIVATE KEY-----' /etc").stdout
    # Every certificate on the machine: what is public.
    public = host.run("grep -rh --include='*.pem' -A200 -e 'BEGIN CERTIFICATE' /etc").stdout
    for path in filter(None, pems.split("\0")):
        found[path] = _key_lines(host.file(path).content_string, public)
    # A PKCS12 key store's password (kafka_tls_keystore_type PKCS12), made on the node.
    stores = host.run("find /etc -path '*/tls/keystore.properties' -print0 2>/dev/null").stdout
    for path in filter(None, stores.split("\0")):
        password = parse_properties(host.file(path).content_string).get("password", "").strip()
        if password:
            found[path] = {password}
    defaults = parse_properties(host.run("cat /etc/spark/spark-defaults.conf 2>/dev/null").stdout)
    if defaults.get("spark.authenticate.secret", "").strip():
        found["spark.authenticate.secret"] = {defaults["spark.authenticate.secret"].strip()}
    return found


def _scram_passwords() -> dict[str, set[str]]:
    """The SCRAM passwords the inventory writes out, Kafka's and PostgreSQL's (one it templates, like the lab's, is in
    _controller_secrets)."""
    found = {}
    for variable, hosts in (("kafka_users", group("kafka")), ("postgresql_users", hosts_in("postgresql"))):
        users = (runner().get_variables(hosts[0]).get(variable) or []) if hosts else []
        found.update(
            {
                f"{variable}:{u['name']}": {str(u["password"])}
                for u in users
                if u.get("password") and "{{" not in str(u["password"])
            }
        )
    return found


def _controller_secrets() -> dict[str, set[str]]:
    """What the controller machine made and keeps in .secrets beside the inventory: the lab's admin password (its
    inventory reads it with a password lookup), Spark's shared secret."""
    made = Path(ca_dir()).with_name(".secrets")
    files = sorted(p for p in made.iterdir() if p.is_file()) if made.is_dir() else []
    return {f"controller:{p}": {p.read_text().strip()} for p in files if p.read_text().strip()}


@pytest.fixture(scope="module")
def secrets() -> dict[str, set[str]]:
    """'<machine>:<where>' -> the strings that would give that secret away."""
    found = {f"{m}:{where}": values for m in MACHINES for where, values in _host_secrets(node(m)).items()}
    found.update(_scram_passwords())
    found.update(_controller_secrets())
    # Every private key the controller machine keeps beside the inventory: the project CA's (.pki/ca.key), a CA
    # rotation's (ca-next, ca-previous, retired/), and the operator's own (the spark scenario's .own-pki/: its CAs and
    # the nodes' keys, which the kafka role pushes to the nodes unlogged).
    for key in sorted(Path(ca_dir()).parent.rglob("*.key")):
        public = "".join(p.read_text() for p in key.parent.glob("*.pem")) + "".join(
            p.read_text() for p in key.parent.glob("*.crt")
        )
        found[f"controller:{key}"] = _key_lines(key.read_text(), public)
    found = {k: v for k, v in found.items() if v}
    # An empty list would make the tests below pass for nothing: a cluster without TLS, SCRAM users or Spark has no
    # secret to keep, and these tests say so rather than pass. (The zookeeper scenario has the ZooKeeper servers'
    # keys and the brokers' ZooKeeper client keys.)
    if not found:
        pytest.skip("no private key, SCRAM password or Spark secret on any machine: nothing to look for")
    print(f"looking for {len(found)} secrets: {', '.join(sorted(found))}")
    return found


# The roles are the collection's: task banners name them kafkalab.kafka.<role>.
ROLE = "kafkalab.kafka."


@pytest.mark.skipif(
    SCENARIO not in VVV_SCENARIOS or (not os.environ.get("MOLECULE_INVENTORY_FILE") and not VVV_LOG.exists()),
    reason="the -vvv converge runs in the spark and default scenarios (make test); run one to get its log",
)
def test_a_converge_at_vvv_shows_no_secret(secrets: dict[str, set[str]]) -> None:
    assert VVV_LOG.exists(), f"{VVV_LOG} is missing: the {SCENARIO} scenario's -vvv run of site.yml writes it"
    log = VVV_LOG.read_text(errors="replace")
    # It is a -vvv run of the whole site.yml, which handled the secrets with its output hidden.
    assert "PLAY RECAP" in log and "ESTABLISH" in log, f"{VVV_LOG} is not the output of a -vvv run"
    # Every key is made by the pki role (roles/pki, included by the kafka role's tasks/tls.yml), or, with the
    # operator's own CA (the spark scenario's), pushed by it from the controller machine.
    made, pushed = f"{ROLE}pki : Make the node's private key on the node", f"{ROLE}pki : Push the node's private key"
    assert f"TASK [{made}" in log or f"TASK [{pushed}" in log, "the -vvv run neither made nor pushed a node's key"
    tasks = []
    if group_hosts(inventory_listing(), "spark"):
        tasks += [
            f"{ROLE}spark : Install spark-defaults.conf",
            f"{ROLE}spark_consumer : Render each application's spark-submit properties",
        ]
    if _scram_passwords():
        tasks += [
            f"{ROLE}kafka : Write the node's files",
            f"{ROLE}kafka_topics : Apply the declared SCRAM users, ACLs and client quotas",
        ]
        if group_hosts(inventory_listing(), "spark"):
            tasks += [f"{ROLE}spark_consumer : Render the job's settings"]
    for task in tasks:
        assert f"TASK [{task}" in log, f"the -vvv run did not run the task {task!r}"
    assert HIDDEN in log, "no task output was hidden (no_log) in the -vvv run"
    leaked = sorted(name for name, values in secrets.items() if any(v in log for v in values))
    assert leaked == [], f"{VVV_LOG} shows these secrets: {leaked}"


@pytest.mark.parametrize("name", MACHINES)
def test_no_file_a_non_root_user_can_read_holds_a_secret(name: str, secrets: dict[str, set[str]]) -> None:
    host = node(name)
    patterns = "/root/kafkalab-secret-patterns"
    values = sorted({v for vs in secrets.values() for v in vs})
    # The patterns go in a root-only file; nobody lists what it can read; root looks in those files.
    encoded = base64.b64encode("\n".join(values).encode()).decode()
    host.check_output(f"install -m 0600 /dev/null {patterns} && echo {encoded} | base64 -d > {patterns}")
    try:
        listing = host.run(
            f"runuser -u nobody -- find {SCANNED} -type f -readable -size -4M -print0 2>/dev/null"
            f" | xargs -0 -r grep -lF -f {patterns} --"
        )
        readable = host.run(f"runuser -u nobody -- find {SCANNED} -type f -readable -print 2>/dev/null | wc -l")
    finally:
        host.run(f"rm -f {patterns}")
    count = int(readable.stdout.strip() or 0)
    print(f"{name}: {count} files readable by nobody searched for {len(values)} strings")
    assert count > 100, f"{name}: nobody could read only {count} files: the search looked at nothing"
    assert listing.stdout.split() == [], f"{name}: files nobody can read hold a secret: {listing.stdout.split()}"
