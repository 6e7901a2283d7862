"""`make test`'s driver: runs each step (a make target) in turn, timing it, and ends with a table of
every step's wall time and result, so CI's log says where its minutes went.

Every step runs even after one fails (a red lint should not hide a red scenario); the exit status is
non-zero if any step failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    name: str
    seconds: float
    returncode: int

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
        for s in steps
    ]
    failed = sum(not s.ok for s in steps)
    rows.append(f"{'total':<{width}}  {fmt_minutes(sum(s.seconds for s in steps)):>12}  {failed} failed")
    return "\n".join(rows)


def run_steps(targets: Sequence[str], make: str = "make") -> list[Step]:
    steps = []
    for target in targets:
        print(f"\n==> make {target}", flush=True)
        started = time.monotonic()
        code = subprocess.run([make, "--no-print-directory", target], check=False).returncode
        steps.append(Step(target, time.monotonic() - started, code))
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("targets", nargs="+", help="make targets, run in this order")
    args = parser.parse_args(argv)
    steps = run_steps(args.targets)
    print("\nStep times (make test):\n" + table(steps), flush=True)
    return 0 if all(s.ok for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
