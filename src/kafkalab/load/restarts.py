"""The restarts a playbook run made, read from its log (ANSIBLE_LOG_PATH).

roles/kafka/tasks/restart_one.yml says, for every node it restarts, how long the node took to open its
ports and then to be whole again (registered, unfenced, its replicas back in the ISR: the gate after
the start). A load phase reports them beside its acks, so each phase's ISR recovery is measured where
the restart happened.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LINE = re.compile(
    r"restarted (?P<host>\S+): ports open after (?P<ports>[0-9.]+) s, back in the\s+cluster .*?"
    r"(?P<back>[0-9.]+) s later"
)


@dataclass(frozen=True)
class Restart:
    host: str
    ports_s: float
    back_s: float

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "ports_open_s": self.ports_s, "isr_recovery_s": self.back_s}


def restarts_in(text: str) -> list[Restart]:
    """Every restart the log reports, in order (a message folded over lines reads the same)."""
    flat = re.sub(r"\s+", " ", text)
    return [Restart(m["host"], float(m["ports"]), float(m["back"])) for m in _LINE.finditer(flat)]


def log_ends(paths: list[Path]) -> dict[str, int]:
    """Where each existing log ends now (path -> bytes): what it already holds is not a later phase's."""
    return {str(path): path.stat().st_size for path in paths if path.exists()}


def restarts_in_logs(
    paths: list[Path], read_to: Mapping[str, int] | None = None
) -> tuple[list[Restart], list[str], dict[str, int]]:
    """The restarts each log holds past where the previous phase stopped reading it (read_to: path ->
    bytes), a note per log that does not exist, and where this phase stopped reading each one. So one
    log may collect every playbook run of a scenario (ANSIBLE_LOG_PATH appends) and each phase still
    reports only its own restarts."""
    found: list[Restart] = []
    missing: list[str] = []
    ends: dict[str, int] = dict(read_to or {})
    for path in paths:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            missing.append(str(path))
            continue
        start = ends.get(str(path), 0)
        start = start if start <= len(data) else 0  # a log started afresh
        found += restarts_in(data[start:].decode("utf-8", errors="replace"))
        ends[str(path)] = len(data)
    return found, missing, ends
