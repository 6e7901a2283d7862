"""What a service runs, and whether it must restart: the logic behind the restart_marker module.

A node's process runs the configuration it read when it last started. The roles record that as the
"applied" fingerprint (one sha256 per input: each config file, minus the keys Kafka applies at run time,
and named values such as the release directory) when a start or a gated restart succeeds. A node whose
inputs on disk differ from what it applied has a restart pending, whatever happened in between: a run
that was killed after writing a config file but before restarting the node leaves the difference on
disk, and the next run finds it and finishes the restart. The "pending" file beside the applied one says
so to a person at the shell, and also carries restarts an operator asked for (rolling_restart.yml),
which no file difference shows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import parse_properties

# The reason recorded for a restart an operator asked for: it stays pending until the node restarted.
REQUESTED = "requested"


def file_digest(path: str, content: bytes, ignore_keys: Iterable[str] = ()) -> str:
    """sha256 of a file as the process sees it: a properties file without its run-time keys.

    Only the keys named in ignore_keys are dropped (they are applied to the running process another
    way); the rest of a properties file is compared key by key, so reordering or comments do not count.
    """
    ignore = set(ignore_keys)
    if ignore:
        props = parse_properties(content.decode("utf-8"))
        kept = {key: value for key, value in props.items() if key not in ignore}
        content = json.dumps(kept, sort_keys=True).encode("utf-8")
    return "sha256:" + hashlib.sha256(content).hexdigest()


def value_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def differences(applied: Mapping[str, str] | None, current: Mapping[str, str]) -> list[str]:
    """The inputs whose fingerprint differs from the applied one (all of them when nothing was applied)."""
    if applied is None:
        return ["never started by this project (no applied fingerprint)"]
    names = sorted(set(applied) | set(current))
    return [name for name in names if applied.get(name) != current.get(name)]


def pending_reasons(
    applied: Mapping[str, str] | None, current: Mapping[str, str], pending: Mapping[str, Any] | None
) -> list[str]:
    """Why a restart is pending: changed inputs, plus an operator's request still not carried out."""
    reasons = differences(applied, current)
    if pending and REQUESTED in pending.get("reasons", []):
        reasons.append(REQUESTED)
    return reasons


def load_json(text: str | None) -> Any:
    """A state file's JSON, or None for a missing or torn file (a torn file counts as nothing applied)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
