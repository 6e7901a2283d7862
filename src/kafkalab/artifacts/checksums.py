"""sha512 of files, and the `<hex>  <name>` line that .sha512 files and SHA512SUMS manifests are made of."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha512_file(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sha512_line(hexdigest: str, file_name: str) -> str:
    return f"{hexdigest}  {file_name}\n"
