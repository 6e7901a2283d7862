"""The Prometheus of group monitoring as the live suites see it: its HTTP API, its alerts, its settings, and a wait
that tolerates the moment an answer is away (tests/cluster/test_monitoring.py, tests/spark_cluster)."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from inventory_hosts import runner


def seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if duration.endswith(unit) and duration[: -len(unit)].isdigit():
            return int(duration[: -len(unit)]) * units[unit]
    raise ValueError(f"not a simple Prometheus duration: {duration}")


class Prometheus:
    def __init__(self, host: str) -> None:
        variables = runner().get_variables(host)
        address = variables.get("firewall_address") or variables.get("ansible_host", host)
        self.url = f"http://{address}:{variables.get('prometheus_port', 9090)}"
        self.settings = variables

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=15) as response:
            body = response.read().decode()
        return json.loads(body) if path.startswith("/api/") else body

    def query(self, expr: str) -> list[dict[str, Any]]:
        reply = self.get("/api/v1/query", query=expr)
        assert reply["status"] == "success", reply
        return list(reply["data"]["result"])

    def alerts(self, name: str) -> list[dict[str, Any]]:
        return [a for a in self.get("/api/v1/alerts")["data"]["alerts"] if a["labels"]["alertname"] == name]

    def interval(self, name: str, default: str) -> float:
        return seconds(str(self.settings.get(name, default)))

    def state(self, name: str, **labels: str) -> str:
        """An alert's state: firing if any of its series (those with these labels) fires, pending if any is pending,
        else inactive."""
        states = {a["state"] for a in self.alerts(name) if all(a["labels"].get(k) == v for k, v in labels.items())}
        return "firing" if "firing" in states else ("pending" if states else "inactive")


def wait_until(check: Callable[[], Any], timeout_s: float, what: str, every_s: float = 1.0) -> Any:
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as exc:  # Prometheus or the cluster may be away for a moment; ask again
            last = exc
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} (last: {last!r})")
