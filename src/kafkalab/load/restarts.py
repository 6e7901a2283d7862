"""The restarts a playbook run made, read from its log (ANSIBLE_LOG_PATH).

roles/kafka/tasks/restart_one.yml says, for every node it restarts, how long the node took to open its
ports and then to be whole again (registered, unfenced, its replicas back in the ISR: the gate after
the start). A load phase reports them beside its acks, so each phase's ISR recovery is measured where
the restart happened.
"""

from __future__ import annotations

import re
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


def restarts_in_logs(paths: list[Path]) -> tuple[list[Restart], list[str]]:
    """The restarts in each log that exists, and a note per log that does not."""
    found: list[Restart] = []
    missing: list[str] = []
    for path in paths:
        try:
            found += restarts_in(path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            missing.append(str(path))
    return found, missing
