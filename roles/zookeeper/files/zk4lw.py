#!/usr/bin/python3
"""zk4lw: ZooKeeper's four-letter words, and the ensemble's health as JSON.

Installed on ZooKeeper hosts as /usr/local/bin/zk4lw (the role's health checks and rolling restarts
use it) and imported by the verification suite (tests/cluster), so both read servers the same way.
Standard library only: the hosts have python3 for Ansible anyway.

    zk4lw [--tls DIR] WORD HOST:PORT          print the server's answer to WORD (ruok, srvr, mntr, ...)
    zk4lw [--tls DIR] status HOST:PORT [...]  JSON {"servers": {addr: mode}, "leaders": [...], "healthy": bool};
                                              exit 0 only when every server serves and there is one leader
                                              (or a single standalone server)

--tls DIR: the ensemble's client port runs TLS (the zookeeper role's zookeeper_tls): connect with TLS, trust
DIR/ca.pem, check that the server's certificate names the address dialled, and show DIR/node.pem (key and
certificate; ZooKeeper asks every TLS client for one).
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
from collections.abc import Iterable, Mapping

TIMEOUT = 5.0


def tls_context(tls_dir: str) -> ssl.SSLContext:
    """A client context for a TLS client port: the project CA, host names checked, this node's key store shown."""
    context = ssl.create_default_context(cafile=f"{tls_dir}/ca.pem")
    context.load_cert_chain(f"{tls_dir}/node.pem")
    return context


def four_letter_word(
    host: str, port: int, word: str, timeout: float = TIMEOUT, tls: ssl.SSLContext | None = None
) -> str:
    """Send one four-letter word and return the whole answer (the server closes the connection)."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            try:
                chunk = sock.recv(4096)
            except ssl.SSLZeroReturnError:
                break
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
    host, _colon, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def status(addresses: Iterable[str], tls: ssl.SSLContext | None = None) -> dict[str, object]:
    modes = {}
    for address in addresses:
        try:
            modes[address] = mode_of(four_letter_word(*split_address(address), "srvr", tls=tls))
        except OSError as exc:  # ssl.SSLError included
            modes[address] = f"unreachable ({exc.__class__.__name__})"
    return ensemble_health(modes)


def main(argv: list[str]) -> int:
    tls = None
    if argv[:1] == ["--tls"] and len(argv) > 1:
        try:
            tls = tls_context(argv[1])
        except OSError as exc:
            sys.stderr.write(f"zk4lw: --tls {argv[1]}: {exc}\n")
            return 2
        argv = argv[2:]
    if len(argv) < 2:
        sys.stderr.write(__doc__ or "")
        return 2
    if argv[0] == "status":
        report = status(argv[1:], tls)
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
        return 0 if report["healthy"] else 1
    try:
        sys.stdout.write(four_letter_word(*split_address(argv[1]), argv[0], tls=tls))
    except OSError as exc:
        sys.stderr.write(f"zk4lw: {argv[1]}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
