"""Taking one measurement: the error a failed one raises, progress on stderr, and recording a failure as its `error`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


class MeasurementError(Exception):
    """A measurement could not be taken; the message says which and why."""


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def measured(what: str, fn: Callable[[], dict[str, Any]], base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Take one measurement; a failure is recorded as its `error` (the run then exits non-zero)."""
    say(what)
    try:
        return {**(base or {}), **fn()}
    except Exception as exc:  # any failure of one measurement is reported, and the others still run
        say(f"  could not measure {what}: {exc}")
        return {**(base or {}), "error": f"{type(exc).__name__}: {exc}"}
