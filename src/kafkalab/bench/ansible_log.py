"""Where an Ansible run's time went, read from its log (ANSIBLE_LOG_PATH): every run, its tasks, its roles.

    python -m kafkalab.bench.ansible_log .cache/lifecycle/molecule-default.ansible.log [--top 15]

The molecule scenarios and `make lab` log every ansible-playbook run to one file; each run is one process id
there. A task's time is from its banner to the next banner (or the recap), the wall time a play spends on it over
all its hosts; the roles' share adds those up by the role the banner names (`kafkalab.kafka.kafka : ...`), and
the tasks of no role (a playbook's own) count as `(playbook)`. Printed, never asserted: the tests assert
correctness, the figures go to docs/measurements.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) p=(\d+) u=\S+ n=ansible \w+\| (.*)$")
BANNER = re.compile(r"^(TASK|RUNNING HANDLER|PLAY RECAP|PLAY) \[?(.*?)\]? \*+\s*$")
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")
VALIDATION = "Validating arguments against arg spec"


@dataclass
class Run:
    pid: str
    started: float
    ended: float = 0.0
    plays: list[str] = field(default_factory=list)
    tasks: list[tuple[str, float]] = field(default_factory=list)
    recap: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def changed(self) -> int:
        return sum(changed for _ok, changed, _skipped in self.recap.values())


def _stamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def read_runs(lines: Iterable[str]) -> list[Run]:
    runs: dict[str, Run] = {}
    open_task: dict[str, tuple[str, float]] = {}
    for raw in lines:
        match = LINE.match(raw.rstrip("\n"))
        if not match:
            continue
        when, pid, text = _stamp(match.group(1)), match.group(2), match.group(3)
        run = runs.setdefault(pid, Run(pid, when))
        run.ended = when
        banner = BANNER.match(text)
        if banner:
            if pid in open_task:
                name, since = open_task.pop(pid)
                run.tasks.append((name, when - since))
            kind, name = banner.groups()
            if kind in ("TASK", "RUNNING HANDLER"):
                open_task[pid] = (name, when)
            elif kind == "PLAY":
                run.plays.append(name)
            continue
        recap = RECAP.match(text)
        if recap:
            host, ok, changed, _unreachable, _failed, skipped = recap.groups()
            run.recap[host] = (int(ok), int(changed), int(skipped))
    return sorted(runs.values(), key=lambda r: r.started)


def role_of(task: str) -> str:
    return task.split(" : ", 1)[0] if " : " in task else "(playbook)"


def summary(run: Run, top: int) -> list[str]:
    by_role: defaultdict[str, float] = defaultdict(float)
    for name, seconds in run.tasks:
        by_role[role_of(name)] += seconds
    validations = [s for name, s in run.tasks if VALIDATION in name]
    ranked = sorted(by_role.items(), key=lambda item: -item[1])
    out = [
        f"run {run.pid}: {run.seconds:.1f} s, {len(run.tasks)} tasks, {len(run.plays)} plays, "
        f"{len(run.recap)} hosts, changed={run.changed}; first play: {run.plays[0] if run.plays else '-'}",
        f"  argument-spec validations: {len(validations)} tasks, {sum(validations):.1f} s",
        "  by role: " + ", ".join(f"{role} {secs:.1f} s" for role, secs in ranked),
    ]
    per_task: defaultdict[str, float] = defaultdict(float)
    for name, seconds in run.tasks:
        per_task[name] += seconds
    slowest = sorted(per_task.items(), key=lambda item: -item[1])[:top]
    out += [f"  {seconds:7.2f} s  {name}" for name, seconds in slowest]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench.ansible_log", description=__doc__.split("\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=10, help="the slowest tasks of each run")
    parser.add_argument("--min-seconds", type=float, default=20.0, help="leave out runs shorter than this")
    args = parser.parse_args(argv)
    with args.log.open(errors="replace") as handle:
        runs = read_runs(handle)
    for run in runs:
        if run.seconds >= args.min_seconds:
            print("\n".join(summary(run, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
