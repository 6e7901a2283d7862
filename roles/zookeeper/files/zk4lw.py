#!/usr/bin/python3
"""zk4lw: ZooKeeper's four-letter words, and the ensemble's health as JSON.

Installed on ZooKeeper hosts as /usr/local/bin/zk4lw (the role's health checks and rolling restarts
use it) and imported by the verification suite (tests/cluster), so both read servers the same way.
Standard library only: the hosts have python3 for Ansible anyway.

    zk4lw WORD HOST:PORT              print the server's answer to WORD (ruok, srvr, mntr, ...)
    zk4lw status HOST:PORT [...]      JSON {"servers": {addr: mode}, "leaders": [...], "healthy": bool};
                                      exit 0 only when every server serves and there is one leader
                                      (or a single standalone server)
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterable, Mapping

TIMEOUT = 5.0


def four_letter_word(host: str, port: int, word: str, timeout: float = TIMEOUT) -> str:
    """Send one four-letter word and return the whole answer (the server closes the connection)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def parse_srvr(text: str) -> dict[str, str]:
    """`srvr` answers "Key: value" lines; a server that is not serving says so in one line instead."""
    result = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            result[key.strip()] = value.strip()
    return result


def mode_of(text: str) -> str:
    """leader, follower, standalone or observer; 'not serving' for anything else."""
    return parse_srvr(text).get("Mode", "not serving")


def ensemble_health(modes: Mapping[str, str]) -> dict[str, object]:
    """Healthy: every server serves, and one leader (or a single standalone server)."""
    leaders = sorted(a for a, m in modes.items() if m in ("leader", "standalone"))
    serving = all(m in ("leader", "follower", "observer", "standalone") for m in modes.values())
    healthy = bool(modes) and serving and len(leaders) == 1
    if len(modes) > 1 and "standalone" in modes.values():
        healthy = False  # a member of a multi-server ensemble that runs alone has lost its config
    return {"servers": dict(modes), "leaders": leaders, "healthy": healthy}


def split_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def status(addresses: Iterable[str]) -> dict[str, object]:
    modes = {}
    for address in addresses:
        try:
            modes[address] = mode_of(four_letter_word(*split_address(address), "srvr"))
        except OSError as exc:
            modes[address] = f"unreachable ({exc.__class__.__name__})"
    return ensemble_health(modes)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write(__doc__ or "")
        return 2
    if argv[0] == "status":
        report = status(argv[1:])
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
        return 0 if report["healthy"] else 1
    try:
        sys.stdout.write(four_letter_word(*split_address(argv[1]), argv[0]))
    except OSError as exc:
        sys.stderr.write(f"zk4lw: {argv[1]}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
