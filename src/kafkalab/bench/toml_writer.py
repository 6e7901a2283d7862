"""A TOML writer for the Spark job's settings file (tomllib only reads): scalars, lists and tables."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)  # "fetch.max.bytes" needs quotes


def to_toml(doc: Mapping[str, Any], prefix: str = "") -> str:
    """A TOML document of scalars, lists and tables (what the job's settings file holds)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    for key, value in doc.items():
        if isinstance(value, Mapping):
            name = f"{prefix}{_toml_key(key)}"
            lines += ["", f"[{name}]", to_toml(value, f"{name}.").rstrip("\n")]
    return "\n".join(lines).strip("\n") + "\n"
