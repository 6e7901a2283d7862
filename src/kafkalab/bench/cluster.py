"""What the bench runs against: the machine (controller and hosts), the brokers' addresses, the bench's own topics.

The bench creates topics and consumer groups only under the kafkalab-bench- prefix, and deletes only those.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties
from kafka.admin import KafkaAdminClient

from kafkalab import kafka_client, report
from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.parsing import (
    ProcessCpu,
    bench_listeners,
    cpu_model,
    meminfo_total_bytes,
    parse_loadavg,
    parse_process_cpu,
)
from kafkalab.bench.runner import Ansible
from kafkalab.bench.settings import BENCH_PREFIX, KAFKA_SERVICE, SERVER_PROPERTIES

# Prints what parse_process_cpu reads: the unit's main PID, its stat line, the clock tick, its command line.
PROCESS_CPU_SCRIPT = (
    'pid=$(systemctl show -p MainPID --value "$1") && echo "$pid" && cat "/proc/$pid/stat" && getconf CLK_TCK '
    "&& tr '\\0' ' ' < \"/proc/$pid/cmdline\" && echo"
)


def loadavg() -> list[float]:
    return parse_loadavg(Path("/proc/loadavg").read_text())


def machine(ansible: Ansible, hosts: list[str]) -> dict[str, Any]:
    controller = {
        "cores": os.cpu_count(),
        "memory_bytes": meminfo_total_bytes(Path("/proc/meminfo").read_text()),
        "cpu": cpu_model(Path("/proc/cpuinfo").read_text()),
        "kernel": os.uname().release,
    }
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    found: dict[str, Any] = {}
    results = ansible.module(
        ":".join(hosts),
        "ansible.builtin.command",
        {"argv": ["sh", "-c", "nproc; cat /proc/sys/kernel/random/boot_id; cat /proc/meminfo"]},
        timeout=120,
    )
    for host in hosts:
        r = results.get(host)
        if r is None or not r.ok:
            found[host] = {"error": f"unreachable or failed: {r.msg if r else 'no result'}"}
            continue
        lines = r.stdout.splitlines()
        found[host] = {
            "cores": int(lines[0]),
            "memory_bytes": meminfo_total_bytes(r.stdout),
            "same_kernel_as_controller": lines[1].strip() == boot_id,
        }
    return {
        "controller": controller,
        "hosts": found,
        "hosts_share_controller": bool(found) and all(h.get("same_kernel_as_controller") for h in found.values()),
    }


@dataclass
class Listener:
    """A listener the kafka section measures, and the client settings each side of it needs."""

    name: str
    protocol: str
    bootstrap: str
    # kafka-python's settings file on the controller (what the kafka role wrote beside the CA); '' for PLAINTEXT,
    # and for the inter-broker listener, whose settings the bench's clients already read ($KAFKALAB_CLIENT_CONFIG).
    controller_config: str = ""
    # The perf tools' --producer.config / --consumer.config on the tool host; '' lets the wrapper choose.
    node_config: str = ""


@dataclass
class Cluster:
    bootstrap: str
    brokers: list[str]
    tool_host: str
    log_dir: str
    listeners: list[Listener] = field(default_factory=list)


def discover(ansible: Ansible, brokers: list[str], bootstrap: str | None, tls_dir: str = "") -> Cluster:
    props = {}
    results = ansible.module(
        ":".join(brokers), "ansible.builtin.command", {"argv": ["cat", SERVER_PROPERTIES]}, timeout=120
    )
    for host in brokers:
        r = results.get(host)
        if r is None or not r.ok:
            raise MeasurementError(f"cannot read {SERVER_PROPERTIES} on {host}: {r.msg if r else 'no result'}")
        props[host] = parse_properties(r.stdout)
    first = brokers[0]
    measured_listeners = bench_listeners(props, brokers)
    if bootstrap and bootstrap != measured_listeners[0][2]:
        # Bootstrap servers of the caller's choosing: one run over them, in the client settings the caller gives.
        listeners = [Listener(name="bootstrap", protocol="as the client settings say", bootstrap=bootstrap)]
    else:
        # The inter-broker listener in the bench's own client settings, then each other one in the settings the
        # kafka role wrote for it (TLS listeners only; a PLAINTEXT one needs none).
        conf_dir = os.path.dirname(SERVER_PROPERTIES)
        own = [i > 0 and protocol != "PLAINTEXT" for i, (_, protocol, _) in enumerate(measured_listeners)]
        listeners = [
            Listener(
                name=name,
                protocol=protocol,
                bootstrap=servers,
                controller_config=os.path.join(tls_dir, f"client-{name.lower()}.properties") if settings else "",
                node_config=f"{conf_dir}/client-{name.lower()}.properties" if settings else "",
            )
            for settings, (name, protocol, servers) in zip(own, measured_listeners, strict=True)
        ]
    bootstrap = listeners[0].bootstrap
    return Cluster(
        bootstrap=bootstrap,
        brokers=brokers,
        tool_host=first,
        log_dir=props[first].get("log.dirs", props[first].get("log.dir", "/tmp/kafka-logs")).split(",")[0],
        listeners=listeners,
    )


def process_cpu(ansible: Ansible, hosts: list[str], service: str = KAFKA_SERVICE) -> dict[str, ProcessCpu]:
    """The CPU time each host's service has used so far (one reading; cpu_used() subtracts two)."""
    results = ansible.module(
        ":".join(hosts),
        "ansible.builtin.command",
        {"argv": ["sh", "-c", PROCESS_CPU_SCRIPT, "sh", service]},
        timeout=120,
    )
    readings: dict[str, ProcessCpu] = {}
    for host in hosts:
        r = results.get(host)
        if r is None or not r.ok:
            raise MeasurementError(f"cannot read {service}'s CPU time on {host}: {r.msg if r else 'no result'}")
        readings[host] = parse_process_cpu(r.stdout)
    return readings


def admin_client(bootstrap: str) -> Any:
    return KafkaAdminClient(
        **kafka_client.settings(), bootstrap_servers=bootstrap, client_id="kafkalab-bench", request_timeout_ms=60_000
    )


def delete_bench_topics(bootstrap: str, only: Iterable[str] | None = None) -> list[str]:
    """Delete the bench's own topics: those named, or every kafkalab-bench-* topic (leftovers of a killed run)."""
    admin = admin_client(bootstrap)
    try:
        existing = set(admin.list_topics())
        names = sorted(t for t in (existing if only is None else set(only) & existing) if t.startswith(BENCH_PREFIX))
        if names:
            admin.delete_topics(names)
        return names
    finally:
        admin.close()


def delete_bench_groups(bootstrap: str, names: Iterable[str]) -> list[str]:
    """Delete the perf consumer's groups that still exist (one without committed offsets is gone already)."""
    admin = admin_client(bootstrap)
    try:
        existing = set(report.list_group_ids(admin))
        doomed = sorted(n for n in set(names) & existing if n.startswith(BENCH_PREFIX))
        if doomed:
            admin.delete_groups(doomed)
        return doomed
    finally:
        admin.close()
