"""A node's small text files read and replaced atomically (the modules that write configuration and key stores)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable


def read_text(path: str) -> str | None:
    """The file's text, or None when it is absent, unreadable or not UTF-8."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def owned_as(path: str, uid: int, gid: int, mode: int, *, directory: bool = False) -> bool:
    """Whether `path` is a regular file (or, with `directory`, a directory) with this owner, group and mode."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR if directory else stat.S_ISREG
    return kind(status.st_mode) and (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (uid, gid, mode)


def write_atomically(
    path: str, content: str, uid: int, gid: int, mode: int, check: Callable[[str], None] | None = None
) -> None:
    """A temporary file in the same directory, owned and moded first, renamed over `path`: a reader never sees half
    a file, nor the content under the wrong owner or mode. `check` gets the temporary file's path before the rename:
    what it raises (or a module's fail_json, which exits) leaves `path` as it was and the temporary file gone."""
    handle, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        os.chown(temporary, uid, gid)
        os.chmod(temporary, mode)
        if check is not None:
            check(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
