"""systemd_sandbox: the sandbox every long-running service of this project gets in its systemd unit.

The whole file system is read-only to the service (ProtectSystem=strict) except the paths it writes, which are
listed; /home, /root and /run/user are out of its reach; it has a /tmp of its own; it can gain no privilege
(no setuid, no capability: the bounding and ambient sets are empty); what it creates is not world-readable
(UMask 0027). A listed path that does not exist is skipped (the '-' prefix) rather than failing the start;
the roles create every path before the unit starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ansible.errors import AnsibleFilterError

SANDBOX = (
    "NoNewPrivileges=true",
    "ProtectSystem=strict",
    "ProtectHome=true",
    "PrivateTmp=true",
    "CapabilityBoundingSet=",
    "AmbientCapabilities=",
    "UMask=0027",
)


def systemd_sandbox(write_paths: Iterable[Any]) -> str:
    """The [Service] lines: the sandbox, then ReadWritePaths= with each absolute path once, in the given order,
    leaving out those inside another listed path."""
    paths: list[str] = []
    for raw in write_paths:
        path = str(raw).strip().rstrip("/")
        if not path.startswith("/") or any(c.isspace() for c in path):
            raise AnsibleFilterError(f"systemd_sandbox: {raw!r} is not an absolute path without spaces")
        paths.append(path)
    # A path inside another listed one is writable already: listed once, by its outermost directory.
    paths = [p for i, p in enumerate(paths) if p not in paths[:i] and not any(p.startswith(q + "/") for q in paths)]
    if not paths:
        raise AnsibleFilterError("systemd_sandbox: a service that writes nothing needs no ReadWritePaths; give one")
    return "\n".join([*SANDBOX, "ReadWritePaths=" + " ".join(f"-{p}" for p in paths)])


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"systemd_sandbox": systemd_sandbox}
