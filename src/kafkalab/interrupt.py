"""Kill a run at a chosen moment: SIGKILL a command (ansible-playbook and every process it started) as soon
as a probe holds on every host, to rehearse a controller that died halfway through a change.

    python -m kafkalab.interrupt --hosts kafka1,kafka2,kafka3 \\
        --probe 'docker exec {host} grep -qx log.retention.hours=72 /etc/kafka/server.properties' \\
        [--timeout 600] [--log run.log] -- ansible-playbook -i INVENTORY playbooks/kafka.yml -e ...

Exit 0: the probe held on every host and the command was killed (prints the seconds it ran). Exit 1: the
command ended on its own before that (the moment was missed: its output's tail is printed), or the probe did
not hold within --timeout (the command is killed all the same). Used by the default molecule scenario's side
effect; the probe is any shell command, {host} replaced by each host.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def probe_holds(probe: str, hosts: Sequence[str]) -> bool:
    """The probe exits 0 for every host."""
    for host in hosts:
        command = probe.replace("{host}", shlex.quote(host))
        if subprocess.run(command, shell=True, capture_output=True, check=False, timeout=30).returncode != 0:
            return False
    return True


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.interrupt", description=__doc__)
    parser.add_argument("--hosts", required=True, help="comma-separated hosts the probe must hold on")
    parser.add_argument("--probe", required=True, help="shell command, {host} replaced; exit 0 = the moment came")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the moment")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between probes")
    parser.add_argument("--log", type=Path, default=Path("interrupted-run.log"), help="the command's output")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run and kill")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    hosts = [h for h in args.hosts.split(",") if h]
    started = time.monotonic()
    with args.log.open("wb") as log:
        # Its own session: the kill reaches ansible-playbook's workers and connections too, as a crash would.
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        while time.monotonic() - started < args.timeout:
            if proc.poll() is not None:
                print(
                    f"interrupt: the command ended (exit {proc.returncode}) before the probe held on "
                    f"{', '.join(hosts)}: the moment was missed. Its output ends:\n{_tail(args.log)}",
                    file=sys.stderr,
                )
                return 1
            if probe_holds(args.probe, hosts):
                _kill(proc)
                print(f"interrupt: killed the run {time.monotonic() - started:.1f} s after its start (probe held)")
                return 0
            time.sleep(args.interval)
        _kill(proc)
    print(f"interrupt: the probe did not hold within {args.timeout:.0f} s; the run was killed", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
