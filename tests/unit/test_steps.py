"""make test's step driver: every step runs even after a failure, and the table names each step's time and result."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import steps


def run_makefile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, makefile: str, targets: list[str]) -> int:
    """steps.main over `targets` of a Makefile with this text, in tmp_path."""
    (tmp_path / "Makefile").write_text(makefile)
    monkeypatch.chdir(tmp_path)
    return steps.main(targets)


def test_table_lists_each_step_its_time_and_result_then_the_total() -> None:
    text = steps.table([steps.Step("lint", 61.4, 0), steps.Step("molecule-default", 605.0, 2)])
    lines = text.splitlines()
    assert lines[2].split() == ["lint", "1", "min", "01", "s", "ok"]
    assert lines[3].split() == ["molecule-default", "10", "min", "05", "s", "FAILED", "(2)"]
    assert lines[4].split() == ["total", "11", "min", "06", "s", "1", "failed"]


def test_every_step_runs_after_a_failure_and_the_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_makefile(tmp_path, monkeypatch, "bad:\n\t@exit 3\ngood:\n\t@touch ran-good\n", ["bad", "good"])
    assert code == 1
    assert (tmp_path / "ran-good").exists()
    out = capsys.readouterr().out
    # make itself exits 2 when a recipe fails.
    assert "FAILED (2)" in out and "good" in out


def test_a_failed_steps_failure_lines_are_printed_again_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    makefile = (
        "bad:\n"
        "\t@echo 'TASK [kafka : Gate after the start] ok'\n"
        # molecule's frame (the box-drawing bar) and a colour around it
        '\t@printf \'  \\342\\224\\202 \\033[31mfatal: [kafka1]: FAILED! => {"msg": "node 1 down"}\\033[0m\\n\'\n'
        "\t@exit 3\n"
    )
    assert run_makefile(tmp_path, monkeypatch, makefile, ["bad"]) == 1
    out = capsys.readouterr().out
    why = out[out.index("Why bad failed") :]
    assert 'fatal: [kafka1]: FAILED! => {"msg": "node 1 down"}' in why
    assert "Gate after the start" not in why
    assert (tmp_path / ".cache" / "steps" / "bad.log").exists()


def test_failure_lines_keep_the_last_ones() -> None:
    text = "\n".join(f"fatal: [h{i}]: FAILED!" for i in range(50))
    assert steps.failure_lines(text, limit=3) == [f"fatal: [h{i}]: FAILED!" for i in (47, 48, 49)]


def test_steps_joined_by_plus_run_side_by_side_and_count_once_in_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each waits for the other's file: they finish only if they run at the same time.
    makefile = (
        "a:\n\t@touch a-started; for i in $$(seq 100); do [ -e b-started ] && exit 0; sleep 0.1; done; exit 7\n"
        "b:\n\t@touch b-started; for i in $$(seq 100); do [ -e a-started ] && echo b-saw-a && exit 0; sleep 0.1; done;"
        " exit 7\n"
    )
    assert run_makefile(tmp_path, monkeypatch, makefile, ["a+b"]) == 0
    out = capsys.readouterr().out
    assert "b-saw-a" in out
    assert "(beside b)" in out and "(beside a)" in out


def test_the_total_counts_a_side_by_side_group_once() -> None:
    ran = [
        steps.Step("lint", 60.0, 0),
        steps.Step("unit", 200.0, 0, ("images",)),
        steps.Step("images", 150.0, 0, ("unit",)),
    ]
    assert steps.wall_seconds(ran) == 260.0
    assert steps.table(ran).splitlines()[-1].split()[:5] == ["total", "4", "min", "20", "s"]
