"""What the journeys' steps share: reading a run's output, and when a node's Kafka last started."""

from __future__ import annotations

import re

from inventory_hosts import kafka_unit, node


def one_line(output: str) -> str:
    """A run's output with every run of white space made one space: Ansible wraps its messages anywhere."""
    return re.sub(r"\s+", " ", output)


def started_at(name: str) -> int:
    """When the host's Kafka last started (systemd's monotonic clock: one kernel for every container)."""
    unit = kafka_unit(name)
    return int(node(name).check_output(f"systemctl show {unit} --property=ActiveEnterTimestampMonotonic --value"))
