"""Running Ansible for the bench, and reading its JSON callback's documents: per-host results, changes, task times.

Ansible itself is run by kafkalab.ansible_driver; this module turns its documents into what the sections use.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.ansible_driver import AnsibleError, group_hosts, list_inventory, run_playbook
from kafkalab.bench.measure import MeasurementError
from kafkalab.bench.parsing import iso_seconds


@dataclass(frozen=True)
class TaskTime:
    play: str
    name: str
    seconds: float


def playbook_summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What ansible.posix.json's document says about a run: changes and failures per host, task times."""
    stats: Mapping[str, Mapping[str, int]] = doc.get("stats") or {}
    tasks: list[TaskTime] = []
    failures: list[str] = []
    for play in doc.get("plays") or []:
        play_name = str(play.get("play", {}).get("name", ""))
        for task in play.get("tasks") or []:
            info = task.get("task") or {}
            duration = info.get("duration") or {}
            if "start" in duration and "end" in duration:
                seconds = iso_seconds(duration["end"]) - iso_seconds(duration["start"])
                tasks.append(TaskTime(play_name, str(info.get("name", "")), max(seconds, 0.0)))
            for host, result in (task.get("hosts") or {}).items():
                if (result.get("failed") and not result.get("ignore_errors")) or result.get("unreachable"):
                    failures.append(f"{host}: {info.get('name')}: {str(result.get('msg', ''))[:300]}")
    return {
        "changed": {host: int(s.get("changed", 0)) for host, s in sorted(stats.items())},
        "changed_total": sum(int(s.get("changed", 0)) for s in stats.values()),
        "failed_hosts": sorted(h for h, s in stats.items() if s.get("failures") or s.get("unreachable")),
        "failures": failures,
        "tasks": tasks,
    }


def slowest_tasks(tasks: Iterable[TaskTime], n: int = 10) -> list[dict[str, Any]]:
    ranked = sorted(tasks, key=lambda t: t.seconds, reverse=True)[:n]
    return [{"task": t.name, "play": t.play, "seconds": round(t.seconds, 2)} for t in ranked]


@dataclass(frozen=True)
class HostResult:
    host: str
    rc: int
    stdout: str
    stderr: str
    ok: bool
    msg: str


def adhoc_results(doc: Mapping[str, Any]) -> dict[str, HostResult]:
    """Per-host results of one ad-hoc module run, from ansible.posix.json's document."""
    results: dict[str, HostResult] = {}
    for play in doc.get("plays") or []:
        for task in play.get("tasks") or []:
            for host, r in (task.get("hosts") or {}).items():
                ok = not (r.get("failed") or r.get("unreachable"))
                results[host] = HostResult(
                    host=host,
                    rc=int(r.get("rc", 0 if ok else 1)),
                    stdout=str(r.get("stdout", "")),
                    stderr=str(r.get("stderr", "")),
                    ok=ok,
                    msg=str(r.get("msg", "")),
                )
    return results


class Ansible:
    """Ad-hoc commands and playbooks against one inventory, read back through the JSON callback."""

    def __init__(self, inventory: str) -> None:
        self.inventory = inventory

    def groups(self) -> dict[str, list[str]]:
        try:
            listing = list_inventory(self.inventory)
        except AnsibleError as exc:
            raise MeasurementError(str(exc)) from None
        return {group: sorted(group_hosts(listing, group)) for group in listing if group != "_meta"}

    def module(
        self, pattern: str, module: str, args: Mapping[str, Any], timeout: float = 900, become: bool = False
    ) -> dict[str, HostResult]:
        """One module on the hosts of a pattern, as `ansible PATTERN -m MODULE -a ARGS [-b]` runs it: no facts
        gathered.

        It runs as a one-task play, since kafkalab.ansible_driver (the only code that runs Ansible's tools)
        runs playbooks; the JSON callback reports a play's results as it does an ad-hoc command's.
        """
        play = [
            {
                "name": f"{module} on {pattern}",
                "hosts": pattern,
                "gather_facts": False,
                "become": become,
                "tasks": [{"name": module, module: dict(args)}],
            }
        ]
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
            playbook = Path(tmp) / "module.yml"
            playbook.write_text(json.dumps(play))  # YAML reads JSON
            try:
                run = run_playbook(playbook, self.inventory, json_callback=True, timeout=timeout)
            except AnsibleError as exc:
                raise MeasurementError(f"{module} on {pattern}: {exc}") from None
        if run.doc is None:
            raise MeasurementError(f"ansible {module} on {pattern} failed: {run.stderr.strip()[-300:]}")
        return adhoc_results(run.doc)

    def run(self, host: str, argv: Sequence[str], timeout: float = 900, check: bool = True) -> HostResult:
        """A command on one host (ansible.builtin.command: no shell)."""
        result = self.module(host, "ansible.builtin.command", {"argv": list(argv)}, timeout).get(host)
        if result is None:
            raise MeasurementError(f"no result from {host} for {shlex.join(argv)}")
        if check and not result.ok:
            detail = (result.stderr or result.msg or result.stdout).strip()[-400:]
            raise MeasurementError(f"{host}: {shlex.join(argv)[:200]} failed (rc {result.rc}): {detail}")
        return result

    def playbook(self, playbook: str, log: Path) -> tuple[float, dict[str, Any]]:
        """Run a playbook; (wall seconds, summary). The JSON document and stderr are kept beside `log`."""
        try:
            run = run_playbook(playbook, self.inventory, json_callback=True)
        except AnsibleError as exc:
            raise MeasurementError(str(exc)) from None
        log.write_text(run.stdout)
        log.with_suffix(".stderr.log").write_text(run.stderr)
        if run.doc is None and run.stdout:
            raise MeasurementError(f"{playbook} printed no JSON (rc {run.returncode}): see {log}")
        summary = playbook_summary(run.doc or {})
        if run.returncode != 0:
            raise MeasurementError(
                f"{playbook} failed (rc {run.returncode}): " + "; ".join(summary["failures"][:3]) + f" (see {log})"
            )
        return run.duration_s, summary
