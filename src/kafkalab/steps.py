"""`make test`'s driver: runs each step (a make target) in turn, timing it, and ends with a table of
every step's wall time and result, so CI's log says where its minutes went.

Every step runs even after one fails (a red lint should not hide a red scenario); the exit status is
non-zero if any step failed. Each step's output is also kept in .cache/steps/<step>.log, and after the
table every failed step's failure lines are printed again (fatal tasks, failed tests, assertion
messages), so the end of a long CI log says why, not only where.

Targets joined by "+" (`unit+images`) run side by side: a CPU-bound step beside one that mostly waits on
the network or the disk (debootstrap). The first one's output streams to the terminal; each other one's is
printed when the group ends. The table gives each its own time, and the total counts the group's wall time
once.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LOG_DIR = Path(".cache/steps")
# What says why a step failed: Ansible's fatal and failed tasks, pytest's failures and errors, molecule's
# failed actions, make's own error line.
_FAILURE = re.compile(
    r"fatal: \[|failed: \[|FAILED|^E\s|Error:|ERROR\s|AssertionError|\bmsg\b.*(refused|failed|not)|make: \*\*\*"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FRAME = re.compile(r"^\s*│\s?")  # molecule's frame around an action's output


@dataclass(frozen=True)
class Step:
    name: str
    seconds: float
    returncode: int
    # The steps that ran side by side with this one (the same group), if any.
    beside: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def fmt_minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60:d} min {whole % 60:02d} s"


def table(steps: Sequence[Step]) -> str:
    """The step-time table: one row per step, then the total."""
    width = max([len("step"), len("total"), *(len(s.name) for s in steps)])
    rows = [f"{'step':<{width}}  {'wall time':>12}  result", f"{'-' * width}  {'-' * 12}  ------"]
    rows += [
        f"{s.name:<{width}}  {fmt_minutes(s.seconds):>12}  {'ok' if s.ok else f'FAILED ({s.returncode})'}"
        + (f"  (beside {', '.join(s.beside)})" if s.beside else "")
        for s in steps
    ]
    failed = sum(not s.ok for s in steps)
    rows.append(f"{'total':<{width}}  {fmt_minutes(wall_seconds(steps)):>12}  {failed} failed")
    return "\n".join(rows)


def wall_seconds(steps: Sequence[Step]) -> float:
    """The run's wall time: steps that ran side by side count once, as the longest of them."""
    groups: dict[frozenset[str], float] = {}
    for s in steps:
        key = frozenset((s.name, *s.beside))
        groups[key] = max(groups.get(key, 0.0), s.seconds)
    return sum(groups.values())


def failure_lines(text: str, limit: int = 40, width: int = 300) -> list[str]:
    """The last `limit` lines of a step's output that say what failed, without colours or molecule's frame."""
    lines = [_FRAME.sub("", _ANSI.sub("", line)).rstrip() for line in text.splitlines()]
    hits = [line[:width] for line in lines if _FAILURE.search(line)]
    return hits[-limit:]


def run_step(target: str, make: str, log: Path) -> int:
    """Run one make target, its output to the terminal and to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as kept:
        proc = subprocess.Popen(
            [make, "--no-print-directory", target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert proc.stdout is not None
        for chunk in iter(proc.stdout.readline, b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            kept.write(chunk)
        return proc.wait()


def run_beside(targets: Sequence[str], make: str) -> list[Step]:
    """Run the targets side by side (one target: just it): the first one streams, the others' logs are printed
    once all have ended."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    beside = f" (beside it, output at its end: {', '.join(targets[1:])})" if targets[1:] else ""
    print(f"\n==> make {targets[0]}{beside}", flush=True)
    started = time.monotonic()
    others = []
    for target in targets[1:]:
        log = (LOG_DIR / f"{target}.log").open("wb")
        cmd = [make, "--no-print-directory", target]
        others.append((target, log, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
    code = run_step(targets[0], make, LOG_DIR / f"{targets[0]}.log")
    results = {targets[0]: (time.monotonic() - started, code)}
    for target, log, proc in others:
        other_code = proc.wait()
        results[target] = (time.monotonic() - started, other_code)
        log.close()
        print(f"\n==> make {target} (ran beside {targets[0]}), its output:", flush=True)
        sys.stdout.write((LOG_DIR / f"{target}.log").read_text(encoding="utf-8", errors="replace"))
        sys.stdout.flush()
    return [Step(t, seconds, rc, tuple(o for o in targets if o != t)) for t, (seconds, rc) in results.items()]


def run_steps(targets: Sequence[str], make: str = "make") -> list[Step]:
    steps: list[Step] = []
    for token in targets:
        steps += run_beside([t for t in token.split("+") if t], make)
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("targets", nargs="+", help="make targets, run in this order; a+b: a and b side by side")
    args = parser.parse_args(argv)
    steps = run_steps(args.targets)
    for step in steps:
        if not step.ok:
            log = LOG_DIR / f"{step.name}.log"
            lines = failure_lines(log.read_text(encoding="utf-8", errors="replace"))
            print(f"\nWhy {step.name} failed (its failure lines; the whole output is in {log}):", flush=True)
            print("\n".join(f"  {line}" for line in lines) or "  (no failure line recognised)", flush=True)
    print("\nStep times (make test):\n" + table(steps), flush=True)
    return 0 if all(s.ok for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
