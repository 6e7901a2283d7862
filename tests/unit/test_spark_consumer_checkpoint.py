"""A job build or settings that the consumer job's checkpoints cannot serve is found before any host changes
(plugins/filter/spark_consumer_checkpoint.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.kafkalab.kafka.plugins.filter.spark_consumer_checkpoint import (
    checkpoint_changes,
    checkpoint_format_of,
    wheel_checkpoint_format,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = {"format": 1, "topics": ["events", "clicks"], "window_duration": "1 minute", "build": "a.whl"}


def test_nothing_recorded_is_adopted_as_it_is() -> None:
    assert checkpoint_changes(None, RECORDED) == []
    assert checkpoint_changes({}, RECORDED) == []


def test_a_new_build_of_the_same_format_and_added_topics_keep_the_checkpoints() -> None:
    wanted = {**RECORDED, "build": "kafkalab_spark-0.2.0-py3-none-any.whl", "topics": ["events", "clicks", "views"]}
    assert checkpoint_changes(RECORDED, wanted) == []


def test_a_new_format_another_window_and_a_dropped_topic_are_each_named() -> None:
    wanted = {"format": 2, "topics": ["events"], "window_duration": "5 minutes", "build": "b.whl"}
    assert checkpoint_changes(RECORDED, wanted) == [
        "the job's checkpoint format goes from 1 to 2 (kafkalab_spark.CHECKPOINT_FORMAT of b.whl)",
        "spark_consumer_window_duration goes from '1 minute' to '5 minutes' (the windowed counts' state holds "
        "windows of the old length)",
        "spark_consumer_topics no longer lists clicks (the checkpoints hold offsets of partitions the source would "
        "no longer read, and the query fails on them)",
    ]


def test_the_low_latency_path_has_no_window_to_compare() -> None:
    recorded = {"format": 1, "topics": ["events"]}
    assert checkpoint_changes(recorded, {"format": 1, "topics": ["events"], "build": "c.whl"}) == []


def test_the_format_is_read_from_the_wheel_as_the_job_declares_it(tmp_path: Path) -> None:
    wheel = tmp_path / "kafkalab_spark-0.1.0-py3-none-any.whl"
    source = (ROOT / "spark/src/kafkalab_spark/__init__.py").read_text()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("kafkalab_spark/__init__.py", source)
    assert wheel_checkpoint_format(str(wheel)) == checkpoint_format_of(source, "source") >= 1


def test_a_wheel_without_the_declaration_is_refused_with_the_fix(tmp_path: Path) -> None:
    wheel = tmp_path / "old.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("kafkalab_spark/__init__.py", '"""An old build."""\n')
    with pytest.raises(AnsibleFilterError, match="declares no CHECKPOINT_FORMAT: rebuild the job's wheel"):
        wheel_checkpoint_format(str(wheel))
    with pytest.raises(AnsibleFilterError, match=r"cannot read kafkalab_spark/__init__\.py"):
        wheel_checkpoint_format(str(tmp_path / "missing.whl"))
