"""The Docker engine the lab runs on: installs docker.io and starts dockerd if no engine answers."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from kafkalab.lab.common import LabError, apt_install, require_root, say

DOCKERD_DATA_ROOT = "/var/lib/docker"
DOCKERD_LOG = "/var/log/kafkalab-dockerd.log"


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def dockerd_running() -> bool:
    """True if a dockerd is already running (perhaps still starting), judged by its pid file."""
    try:
        pid = int(Path("/var/run/docker.pid").read_text().strip())
    except (OSError, ValueError):
        return False
    return Path(f"/proc/{pid}").exists()


def cmd_engine(wait_seconds: float = 90) -> None:
    if docker_answers():
        return
    require_root("starting the docker engine")
    if shutil.which("dockerd") is None or shutil.which("docker") is None:
        apt_install(["docker.io"])
    if not dockerd_running():
        say(f"starting dockerd (data root {DOCKERD_DATA_ROOT}, log {DOCKERD_LOG})")
        with open(DOCKERD_LOG, "ab") as log:
            # A session of its own: dockerd must outlive this process and not get its signals.
            subprocess.Popen(
                ["dockerd", "--data-root", DOCKERD_DATA_ROOT],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )  # fmt: skip
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if docker_answers():
            say("docker engine is up")
            return
        time.sleep(1)
    raise LabError(f"docker info did not answer within {wait_seconds:.0f} s: see {DOCKERD_LOG}")
