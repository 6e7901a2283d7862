"""The one place the project's Python runs Ansible's command-line tools (the lab, the bench, the tests).

Ansible has no stable Python API, so its CLIs are the interface: `ansible-inventory --list` for the
inventory, `ansible-playbook` for everything that touches hosts. The tools are taken from the venv
running us before PATH, so a run never mixes two Ansible versions; playbooks always read the repository's
ansible.cfg (whatever the working directory); a failure raises AnsibleError saying what failed and how to
fix it. What a run's JSON document means (changes, failures, task times) is left to its caller.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# src/kafkalab/ansible_driver.py -> the repository root (the package is installed editable from it).
_ANSIBLE_CFG = Path(__file__).resolve().parents[2] / "ansible.cfg"
# ansible.posix.json on stdout and no other callback writing there (ansible.cfg enables profile_tasks too).
_JSON_CALLBACK_ENV = {
    "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
    # preload_jinja (ansible.cfg) prints nothing; it keeps timed runs (make bench) as fast as an operator's.
    "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json,kafkalab.kafka.preload_jinja",
    "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
    "ANSIBLE_JSON_INDENT": "0",
    "ANSIBLE_NOCOLOR": "1",
}
_STDERR_TAIL = 300


class AnsibleError(Exception):
    """An Ansible tool could not be found or run; the message names the command and the fix."""


@dataclass(frozen=True)
class PlaybookRun:
    """One ansible-playbook run: its exit code, output, wall time and (with the JSON callback) its document."""

    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    doc: dict[str, Any] | None = None


def tool(name: str) -> str:
    """The path of an Ansible CLI: the one beside the running Python (the venv), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise AnsibleError(f"{name} not found: activate the project's venv (pip install ansible-core)")
    return found


def list_inventory(inventory: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`ansible-inventory -i INVENTORY --list`, parsed: groups (hosts, children) and _meta.hostvars.

    env is added to this process's environment. Verbosity is off by default: at -v and above Ansible
    prints to stdout, in front of the JSON.
    """
    cmd = [tool("ansible-inventory"), "-i", inventory, "--list"]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_VERBOSITY": "0", **(env or {})},
        check=False,
    )
    if proc.returncode != 0:
        raise AnsibleError(
            f"ansible-inventory -i {inventory} --list failed (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-_STDERR_TAIL:]}"
        )
    try:
        listing = json.loads(proc.stdout)
    except ValueError:
        raise AnsibleError(
            f"ansible-inventory -i {inventory} --list printed no JSON: {proc.stdout.strip()[-_STDERR_TAIL:]!r}"
        ) from None
    if not isinstance(listing, dict):
        raise AnsibleError(f"ansible-inventory -i {inventory} --list printed {type(listing).__name__}, not an object")
    return listing


def group_hosts(listing: Mapping[str, Any], group: str) -> list[str]:
    """The hosts of a group and of its children, depth first in inventory order, each once ([] if no such group)."""
    found: dict[str, None] = {}  # an ordered set

    def visit(name: str, path: frozenset[str]) -> None:
        node = listing.get(name) or {}
        for host in node.get("hosts") or []:
            found.setdefault(str(host), None)
        for child in node.get("children") or []:
            if child not in path:  # Ansible refuses cycles; a hand-made listing might not
                visit(child, path | {child})

    visit(group, frozenset({group}))
    return list(found)


def run_playbook(
    playbook: str | os.PathLike[str],
    inventory: str | os.PathLike[str],
    *,
    extra_vars: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = False,
    json_callback: bool = False,
    timeout: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
    args: Sequence[str] = (),
) -> PlaybookRun:
    """Run ansible-playbook and capture its output; a failed run is returned, not raised (see returncode).

    ANSIBLE_CONFIG is the repository's ansible.cfg unless env sets it; env is added to this process's
    environment. extra_vars go in as one JSON `-e` (types survive, nothing is split on spaces). With
    json_callback, stdout is ansible.posix.json's document, parsed into `doc` (None if it printed none,
    e.g. when the playbook did not parse). args are passed to ansible-playbook as they are.
    Raises AnsibleError if ansible-playbook is missing or runs longer than timeout seconds.
    """
    cmd = [tool("ansible-playbook"), "-i", os.fspath(inventory)]
    if extra_vars:
        cmd += ["-e", json.dumps(dict(extra_vars))]
    if check:
        cmd.append("--check")
    cmd += [*args, os.fspath(playbook)]
    full_env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(_ANSIBLE_CFG),
        **(_JSON_CALLBACK_ENV if json_callback else {}),
        **(env or {}),
    }
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise AnsibleError(f"ansible-playbook {os.fspath(playbook)} did not finish in {timeout:.0f} s") from None
    duration = time.monotonic() - started
    doc = None
    if json_callback:
        try:
            parsed = json.loads(proc.stdout)
        except ValueError:
            parsed = None
        doc = parsed if isinstance(parsed, dict) else None
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, duration, doc)
