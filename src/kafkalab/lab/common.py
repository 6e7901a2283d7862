"""What every part of the lab shares: LabError, running commands, the repository root, apt installs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

# The base image's recipe (every Debian release's); its tidy.sh also marks the repository root (project_root).
IMAGE_DIR = Path("images/debian")


class LabError(Exception):
    """A failure with a message that says what failed and what to do about it."""


def say(message: str) -> None:
    print(message, flush=True)


def run(
    cmd: Sequence[str],
    *,
    check: bool = True,
    capture: bool = True,
    input: bytes | None = None,
    timeout: float | None = None,
    what: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a command; on failure raise LabError naming the command and its stderr."""
    try:
        proc = subprocess.run(
            list(cmd),
            input=input,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.PIPE if capture else None,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise LabError(f"{cmd[0]} is not installed ({what or ' '.join(cmd)})") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"timed out after {timeout:.0f} s: {what or ' '.join(cmd)}") from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or b"").decode(errors="replace").strip()
        raise LabError(
            f"{what or 'command'} failed (exit {proc.returncode}): {' '.join(cmd)}" + (f"\n{detail}" if detail else "")
        )
    return proc


def read_yaml(root: Path, relative: Path) -> object:
    """The YAML document at root/relative (a file of the repository's), or LabError naming it and why."""
    try:
        return yaml.safe_load((root / relative).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LabError(f"cannot read {relative}: {exc}") from exc


def out(cmd: Sequence[str], **kwargs: Any) -> str:
    return run(cmd, **kwargs).stdout.decode().strip()


def project_root() -> Path:
    """The repository root: KAFKALAB_ROOT, else the nearest directory up from here holding images/."""
    if env := os.environ.get("KAFKALAB_ROOT"):
        return Path(env).resolve()
    for candidate in (Path.cwd(), *Path.cwd().parents, *Path(__file__).resolve().parents):
        if (candidate / IMAGE_DIR / "tidy.sh").is_file():
            return candidate
    raise LabError("cannot find the repository root (no images/debian/tidy.sh): run from the repo")


def require_root(action: str) -> None:
    if os.geteuid() != 0:
        raise LabError(f"{action} needs root: run it with sudo")


_apt_updated = False


def apt_install(packages: Iterable[str]) -> None:
    global _apt_updated
    pkgs = list(packages)
    require_root(f"installing {' '.join(pkgs)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    say(f"installing {' '.join(pkgs)} with apt-get")
    try:
        if not _apt_updated:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
            _apt_updated = True
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *pkgs],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise LabError(f"apt-get could not install {' '.join(pkgs)}: {exc}; install them by hand") from exc


def ensure_tools(tools: Mapping[str, str]) -> None:
    """Install the Debian packages providing any missing commands ({command: package})."""
    missing = sorted({pkg for cmd, pkg in tools.items() if shutil.which(cmd) is None})
    if missing:
        apt_install(missing)
