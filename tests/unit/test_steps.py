"""make test's step driver: every step runs even after a failure, and the table names each step's time and result."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import steps


def test_table_lists_each_step_its_time_and_result_then_the_total() -> None:
    text = steps.table([steps.Step("lint", 61.4, 0), steps.Step("molecule-default", 605.0, 2)])
    lines = text.splitlines()
    assert lines[2].split() == ["lint", "1", "min", "01", "s", "ok"]
    assert lines[3].split() == ["molecule-default", "10", "min", "05", "s", "FAILED", "(2)"]
    assert lines[4].split() == ["total", "11", "min", "06", "s", "1", "failed"]


def test_every_step_runs_after_a_failure_and_the_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    makefile = tmp_path / "Makefile"
    makefile.write_text("bad:\n\t@exit 3\ngood:\n\t@touch ran-good\n")
    monkeypatch.chdir(tmp_path)
    code = steps.main(["bad", "good"])
    assert code == 1
    assert (tmp_path / "ran-good").exists()
    out = capsys.readouterr().out
    # make itself exits 2 when a recipe fails.
    assert "FAILED (2)" in out and "good" in out
