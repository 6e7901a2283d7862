"""Kafka's own topic-config list, read from the pinned releases' archives by running their LogConfig."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.artifacts.topic_configs import NoJavaError, configs_path, parse_config_html, topic_configs

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "artifacts"


def test_config_names_come_from_the_anchors_of_logconfigs_html() -> None:
    html = (
        '<li><h4><a id="cleanup.policy"></a><a id="topicconfigs_cleanup.policy" href="#x">cleanup.policy</a></h4>'
        '<li><h4><a id="topicconfigs_retention.ms" href="#y">retention.ms</a></h4><a id="topicconfigs_retention.ms">'
    )
    assert parse_config_html(html) == ["cleanup.policy", "retention.ms"]


def test_the_list_is_written_beside_the_archive() -> None:
    assert configs_path(Path("/c/kafka_2.13-4.3.1.tgz")) == Path("/c/kafka_2.13-4.3.1.topic-configs.json")


def test_without_java_the_controller_is_told_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on this PATH
    with pytest.raises(NoJavaError, match="openjdk-17-jre-headless"):
        topic_configs(tmp_path / "kafka.tgz")


@pytest.mark.parametrize(
    "version,present,absent",
    [
        ("4.3.1", ["retention.ms", "min.insync.replicas", "remote.storage.enable"], ["message.format.version"]),
        ("3.9.2", ["retention.ms", "message.format.version", "message.downconversion.enable"], []),
    ],
)
def test_each_pinned_release_lists_its_own_topic_configs(version: str, present: list[str], absent: list[str]) -> None:
    archive = CACHE / f"kafka_2.13-{version}.tgz"
    assert archive.exists(), f"{archive} missing: make artifacts builds it (make unit depends on it)"
    names = topic_configs(archive)
    assert set(present) <= set(names)
    assert not set(absent) & set(names)
    written = configs_path(archive)
    if written.exists():  # what make artifacts wrote is the same list
        assert json.loads(written.read_text()) == names
