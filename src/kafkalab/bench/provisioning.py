"""The provisioning section: wall time of a cold converge of playbooks/site.yml and of its no-op re-run.

A cold converge (--cold) first destroys and recreates the lab's hosts with kafkalab.lab's own commands; the
changed tasks and the ten slowest tasks come from Ansible's JSON callback.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafkalab.bench.measure import MeasurementError, measured
from kafkalab.bench.runner import Ansible, slowest_tasks


def provisioning(ansible: Ansible, cold: bool, out_dir: Path, root: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"playbook": "playbooks/site.yml"}
    result["hosts"] = len(ansible.groups().get("cluster") or [])

    def cold_converge() -> dict[str, Any]:
        # The lab module's own commands, as `make lab-destroy` and `make lab-up` run them.
        started = time.monotonic()
        for action in ("down", "up"):
            proc = subprocess.run(
                [sys.executable, "-m", "kafkalab.lab", action, "--inventory", ansible.inventory],
                capture_output=True,
                text=True,
                cwd=root,
                check=False,
            )
            if proc.returncode != 0:
                raise MeasurementError(f"lab {action} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        lab_up = time.monotonic() - started
        wall, summary = ansible.playbook("playbooks/site.yml", out_dir / "converge-cold.json")
        return {
            "lab_up_s": round(lab_up, 1),
            "wall_s": round(wall, 1),
            "changed_total": summary["changed_total"],
            "changed": summary["changed"],
            "slowest_tasks": slowest_tasks(summary["tasks"]),
        }

    def noop() -> dict[str, Any]:
        wall, summary = ansible.playbook("playbooks/site.yml", out_dir / "converge-noop.json")
        return {
            "wall_s": round(wall, 1),
            "changed_total": summary["changed_total"],
            "changed": summary["changed"],
            "slowest_tasks": slowest_tasks(summary["tasks"]),
        }

    if cold:
        result["cold"] = measured("cold converge: lab hosts destroyed and recreated, then site.yml", cold_converge)
    else:
        result["cold"] = {"skipped": "--no-cold (BENCH_COLD=0): hosts were not recreated"}
    result["noop"] = measured("no-op re-run of site.yml", noop)
    return result
