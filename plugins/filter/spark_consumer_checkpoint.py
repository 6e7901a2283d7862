"""Whether the consumer job's checkpoints can serve the build and settings about to be deployed.

A Structured Streaming checkpoint holds the offsets of each batch and the state of stateful queries. Spark
resumes from it whatever changed, and some changes make that wrong (Spark's "Recovery Semantics after Changes
in a Streaming Query"): the windowed counts' state kept for another window length, a topic the job no longer
reads (its partitions vanish from the source and, with failOnDataLoss, the query fails), or a job build that
declares its checkpoints incompatible (kafkalab_spark.CHECKPOINT_FORMAT, bumped by whoever changes a query's
sources, sinks or state). Each start that succeeds records beside the checkpoints what they were written for
(the role writes <checkpoint>/kafkalab-checkpoint.json); these pure functions compare that record with the
deployment at hand, and read the format of a build from its wheel on the controller.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

_FORMAT_RE = re.compile(r"^CHECKPOINT_FORMAT\s*(?::\s*int\s*)?=\s*(\d+)\s*$", re.MULTILINE)
_PACKAGE_INIT = "kafkalab_spark/__init__.py"


def checkpoint_format_of(source: str, where: str) -> int:
    """CHECKPOINT_FORMAT as kafkalab_spark/__init__.py declares it (source: that file's text)."""
    match = _FORMAT_RE.search(source)
    if match is None:
        raise AnsibleFilterError(
            f"{where}: kafkalab_spark/__init__.py declares no CHECKPOINT_FORMAT: rebuild the job's wheel from this "
            "repository's spark/ (python -m kafkalab.artifacts build-wheels --project spark)."
        )
    return int(match.group(1))


def wheel_checkpoint_format(wheel: str) -> int:
    """The checkpoint format the job's wheel (a path on the controller) declares."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            source = archive.read(_PACKAGE_INIT).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise AnsibleFilterError(f"cannot read {_PACKAGE_INIT} from the job's wheel {wheel}: {exc}") from None
    return checkpoint_format_of(source, wheel)


def checkpoint_changes(recorded: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> list[str]:
    """Each way the deployment `wanted` differs from what the checkpoints were written for (`recorded`, the
    kafkalab-checkpoint.json of their last start) that they cannot serve; [] when they can or when nothing is
    recorded (no checkpoint yet, or one from before the record existed: adopted as it is)."""
    if not recorded:
        return []
    changes = []
    if int(recorded.get("format", 0)) != int(wanted["format"]):
        changes.append(
            f"the job's checkpoint format goes from {recorded.get('format')} to {wanted['format']} "
            f"(kafkalab_spark.CHECKPOINT_FORMAT of {wanted.get('build', 'the new build')})"
        )
    if "window_duration" in wanted and str(recorded.get("window_duration")) != str(wanted["window_duration"]):
        changes.append(
            f"spark_consumer_window_duration goes from {recorded.get('window_duration')!r} to "
            f"{wanted['window_duration']!r} (the windowed counts' state holds windows of the old length)"
        )
    dropped = sorted(set(recorded.get("topics") or []) - set(wanted.get("topics") or []))
    if dropped:
        changes.append(
            f"spark_consumer_topics no longer lists {', '.join(dropped)} (the checkpoints hold offsets of "
            "partitions the source would no longer read, and the query fails on them)"
        )
    return changes


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "spark_consumer_wheel_checkpoint_format": wheel_checkpoint_format,
            "spark_consumer_checkpoint_changes": checkpoint_changes,
        }
