"""The docker settings of a lab host: systemd as PID 1 in a container that behaves like a VM.

They are written once, in molecule/systemd_host.yml, as molecule-plugins docker platform keys. The molecule
scenarios' create playbook (molecule/create.yml) applies them to every platform; this module reads the same
file for `python -m kafkalab.lab`: `up` turns it into `docker run` flags, `image` builds the release's image
(images/releases.yml) with its command as CMD.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.lab.common import LabError, read_yaml

SYSTEMD_HOST_FILE = Path("molecule/systemd_host.yml")

# systemd halts cleanly on SIGRTMIN+3; on docker's default SIGTERM it re-executes itself and
# `docker stop` ends in SIGKILL after 10 s. (docker import cannot set STOPSIGNAL in the image.)
# The lab's alone: only the lab stops its containers, molecule's destroy kills its own.
STOP_SIGNAL_FLAGS = ("--stop-signal", "SIGRTMIN+3")

_TEXT_KEYS = ("command", "cgroupns_mode")
_LIST_KEYS = ("capabilities", "security_opts", "volumes", "tmpfs")


@dataclass(frozen=True)
class SystemdHost:
    """molecule/systemd_host.yml: what every lab and molecule host is started with."""

    command: str
    cgroupns_mode: str
    capabilities: tuple[str, ...]
    security_opts: tuple[str, ...]
    volumes: tuple[str, ...]
    tmpfs: tuple[str, ...]


def parse_systemd_host(data: Any, source: str = str(SYSTEMD_HOST_FILE)) -> SystemdHost:
    """The settings from the file's parsed YAML. A key the lab does not pass on to docker is an error,
    so that a setting added for molecule cannot silently be missing from the lab."""
    if not isinstance(data, Mapping):
        raise LabError(f"{source} must be a mapping of docker platform keys")
    unknown = sorted(set(data) - {*_TEXT_KEYS, *_LIST_KEYS})
    if unknown:
        raise LabError(
            f"{source}: the lab does not pass {', '.join(unknown)} to docker run: "
            "teach systemd_run_flags in src/kafkalab/lab/systemd_host.py (and molecule/create.yml) the new key"
        )
    missing = sorted({*_TEXT_KEYS, *_LIST_KEYS} - set(data))
    if missing:
        raise LabError(f"{source} has no {', '.join(missing)}")
    for key in _TEXT_KEYS:
        if not isinstance(data[key], str) or not data[key]:
            raise LabError(f"{source}: {key} must be a non-empty string, not {data[key]!r}")
    for key in _LIST_KEYS:
        if not isinstance(data[key], list) or not all(isinstance(item, str) for item in data[key]):
            raise LabError(f"{source}: {key} must be a list of strings, not {data[key]!r}")
    return SystemdHost(
        command=data["command"],
        cgroupns_mode=data["cgroupns_mode"],
        capabilities=tuple(data["capabilities"]),
        security_opts=tuple(data["security_opts"]),
        volumes=tuple(data["volumes"]),
        tmpfs=tuple(data["tmpfs"]),
    )


def load_systemd_host(root: Path) -> SystemdHost:
    return parse_systemd_host(read_yaml(root, SYSTEMD_HOST_FILE))


def systemd_run_flags(systemd: SystemdHost) -> list[str]:
    """The `docker run` flags for the settings (the image and the command aside: they end the command line)."""
    return [
        f"--cgroupns={systemd.cgroupns_mode}",
        *(arg for cap in systemd.capabilities for arg in ("--cap-add", cap)),
        *(arg for opt in systemd.security_opts for arg in ("--security-opt", opt)),
        *(arg for volume in systemd.volumes for arg in ("--volume", volume)),
        *(arg for path in systemd.tmpfs for arg in ("--tmpfs", path)),
        *STOP_SIGNAL_FLAGS,
    ]
