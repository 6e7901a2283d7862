"""Java properties files: the one writer (server.properties, zoo.cfg) and the one reader in the project.

The writer escapes the way java.util.Properties reads values back (backslash and newline), so a value
that contains either cannot break the file or inject a second key. The reader is its inverse for the
files this project writes, and reads the plain `key=value` files Kafka and Spark ship too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any


def java_text(raw: Any) -> str:
    """A value as a properties file holds it: booleans as Java writes them (true/false), the rest as str()."""
    return ("true" if raw else "false") if isinstance(raw, bool) else str(raw)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def to_properties(props: Mapping[str, Any], order: Callable[[str], Any] | None = None) -> str:
    """Properties text, one key per line (sorted, or by `order`), booleans as Java writes them."""
    return "".join(f"{key}={_escape(java_text(props[key]))}\n" for key in sorted(props, key=order))


def parse_properties(text: str) -> dict[str, str]:
    """key -> value of a properties text, read the way java.util.Properties reads one line.

    The key ends at the first `=`, `:` or white space (so Spark's `key value` conf files read too);
    comment lines (# !) and blank lines are skipped; the escapes to_properties writes are read back.
    Continuation lines are not used by any file this project reads or writes.
    """
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = _SEPARATOR.search(line)
        key, value = (line[: match.start()], line[match.end() :]) if match else (line, "")
        props[key] = _unescape(value)
    return props


def kafka_stage(text: str | None) -> str:
    """What a Kafka node's server.properties makes it run: zookeeper, migration, kraft, or none (no file).

    `migration` is a node with zookeeper.metadata.migration.enable=true (a broker still in ZooKeeper
    mode, or a KRaft controller copying ZooKeeper's metadata); `kraft` has process.roles; the rest is
    ZooKeeper mode. The migration playbooks, the ZooKeeper-mode guard and the tests all ask this one.
    """
    if text is None:
        return "none"
    props = parse_properties(text)
    if props.get("zookeeper.metadata.migration.enable", "").strip() == "true":
        return "migration"
    return "kraft" if "process.roles" in props else "zookeeper"


# White space around one = or :, or white space alone: what ends a key.
_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)
