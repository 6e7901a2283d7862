"""The physical section: the limits every Kafka figure is shown as a fraction of.

Sequential write throughput of a broker's log dir (dd, fdatasync) and loopback TCP (iperf3 on the controller).
"""

from __future__ import annotations

import json
import random
import shlex
import subprocess
import time
import uuid
from typing import Any

from kafkalab.bench.cluster import Cluster
from kafkalab.bench.measure import MeasurementError, measured
from kafkalab.bench.parsing import parse_dd, parse_iperf3
from kafkalab.bench.runner import Ansible
from kafkalab.bench.settings import BENCH_PREFIX, DD_MIB, IPERF_SECONDS
from kafkalab.lab import LabError, ensure_tools


def physical(ansible: Ansible, cluster: Cluster) -> dict[str, Any]:
    def disk() -> dict[str, Any]:
        target = f"{cluster.log_dir.rstrip('/')}/{BENCH_PREFIX}dd-{uuid.uuid4().hex[:8]}"
        script = (
            f"LC_ALL=C dd if=/dev/zero of={shlex.quote(target)} bs=1M count={DD_MIB} conv=fdatasync; "
            f"rc=$?; rm -f {shlex.quote(target)}; exit $rc"
        )
        r = ansible.run(cluster.tool_host, ["sh", "-c", script], timeout=600)
        return parse_dd(r.stderr) | {"command": f"dd if=/dev/zero bs=1M count={DD_MIB} conv=fdatasync"}

    def loopback() -> dict[str, Any]:
        try:
            ensure_tools({"iperf3": "iperf3"})
        except LabError as exc:
            raise MeasurementError(str(exc)) from None
        port = str(5201 + random.randrange(500))
        server = subprocess.Popen(
            ["iperf3", "--server", "--one-off", "--bind", "127.0.0.1", "--port", port],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1)
            proc = subprocess.run(
                ["iperf3", "--client", "127.0.0.1", "--port", port, "--time", str(IPERF_SECONDS), "--json"],
                capture_output=True,
                text=True,
                timeout=IPERF_SECONDS + 60,
                check=False,
            )
        finally:
            server.terminate()
            server.wait(timeout=10)
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            raise MeasurementError(f"iperf3 failed: {proc.stderr.strip()[-300:]}") from None
        return parse_iperf3(report) | {"command": f"iperf3 -c 127.0.0.1 -t {IPERF_SECONDS} (1 TCP stream)"}

    return {
        "disk": measured(
            f"disk: dd {DD_MIB} MiB into {cluster.tool_host}:{cluster.log_dir}",
            disk,
            {"host": cluster.tool_host, "log_dir": cluster.log_dir},
        ),
        "loopback": measured("loopback TCP: iperf3 on the controller", loopback, {"host": "controller"}),
    }
