"""Shared pytest setup: the repository root and importable role plugins."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Role filter plugins are plain modules; tests import them directly to test the pure logic.
sys.path.insert(0, str(ROOT / "roles" / "kafka" / "filter_plugins"))
