"""The deterministic tar writer: the same entries always give a byte-identical .tgz."""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

# 1980-01-01T00:00:00Z: a fixed, tool-friendly timestamp (zip's epoch) for every tar entry.
FIXED_MTIME = 315532800


@dataclasses.dataclass(frozen=True)
class DistEntry:
    """One file of the tarball: its path inside the archive, mode, and bytes or a file to copy."""

    name: str
    mode: int
    data: bytes | None = None
    source: Path | None = None


def _tar_info(name: str, mode: int, size: int, is_dir: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.rstrip("/") if is_dir else name)
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.mode = mode
    info.size = 0 if is_dir else size
    info.mtime = FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_tarball(entries: Iterable[DistEntry], dest: Path) -> None:
    """Write a reproducible .tgz: entries in given order, fixed metadata, gzip header without name/time."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
        ):
            for entry in entries:
                if entry.name.endswith("/"):
                    tar.addfile(_tar_info(entry.name, entry.mode, 0, is_dir=True))
                elif entry.source is not None:
                    with entry.source.open("rb") as handle:
                        size = entry.source.stat().st_size
                        tar.addfile(_tar_info(entry.name, entry.mode, size, False), handle)
                else:
                    data = entry.data or b""
                    tar.addfile(_tar_info(entry.name, entry.mode, len(data), False), io.BytesIO(data))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
