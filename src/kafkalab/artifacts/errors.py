"""Errors of the artifacts tools, and the exit code the CLI reports each kind with."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTEGRITY = 3


class ArtifactError(Exception):
    """An error the CLI reports in one message, without a traceback."""

    exit_code = EXIT_ERROR


class ChecksumMismatchError(ArtifactError):
    """A jar's bytes differ from what the lock pins: never install it."""

    exit_code = EXIT_INTEGRITY
