"""The alert rules Prometheus loads, checked by Prometheus's own tool: `promtool check rules` on the rendered
file, and `promtool test rules` (tests/unit/alerts/*.test.yml): each alert fires on synthetic series once its
`for` has passed, not before, and resolves."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "prometheus"
TESTS = Path(__file__).parent / "alerts"


def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail("promtool is not installed: `apt-get install prometheus` (Debian ships it there); .ci/run does")
    return found


def render(name: str, **overrides: object) -> str:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string((ROLE / "templates" / f"{name}.j2").read_text()).render(**{**defaults, **overrides})


def test_every_alert_fires_after_its_for_and_not_before(tmp_path: Path) -> None:
    (tmp_path / "kafka-alerts.rules.yml").write_text(render("kafka-alerts.rules.yml"))
    for test in TESTS.glob("*.test.yml"):
        shutil.copy(test, tmp_path)
    check = subprocess.run(
        [promtool(), "check", "rules", "kafka-alerts.rules.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run(
        [promtool(), "test", "rules", *sorted(p.name for p in tmp_path.glob("*.test.yml"))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
