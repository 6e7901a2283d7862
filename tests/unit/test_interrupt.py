"""kafkalab.interrupt kills a run at the moment a probe holds, and says so when the moment was missed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kafkalab.interrupt import main


def test_the_run_is_killed_once_the_probe_holds(tmp_path: Path) -> None:
    flag, after = tmp_path / "rendered", tmp_path / "restarted"
    script = (
        f"import time, pathlib; time.sleep(0.3); pathlib.Path('{flag}').touch(); "
        f"time.sleep(3); pathlib.Path('{after}').touch()"
    )
    began = time.monotonic()
    rc = main(
        [
            "--hosts",
            "a,b",
            "--probe",
            f"test -e {flag} && echo {{host}} >/dev/null",
            "--log",
            str(tmp_path / "log"),
            "--",
            sys.executable,
            "-c",
            script,
        ]
    )
    assert rc == 0
    assert time.monotonic() - began < 3
    time.sleep(3.5)
    assert not after.exists(), "the killed run went on"


def test_a_run_that_ends_before_the_moment_is_reported(tmp_path: Path) -> None:
    rc = main(
        [
            "--hosts",
            "a",
            "--probe",
            "false",
            "--log",
            str(tmp_path / "log"),
            "--",
            sys.executable,
            "-c",
            "print('done')",
        ]
    )
    assert rc == 1
