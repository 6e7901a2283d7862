"""Kafka's own config references, read from the pinned releases' archives: LogConfig's topic configs,
KafkaConfig's broker configs with their update modes and FeatureCommand's default feature levels."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from kafkalab.artifacts.errors import ArtifactError
from kafkalab.artifacts.topic_configs import (
    NoJavaError,
    broker_configs,
    broker_configs_path,
    configs_path,
    features,
    features_path,
    parse_broker_config_html,
    parse_config_html,
    parse_version_mapping,
    topic_configs,
    write_broker_configs,
    write_features,
    write_topic_configs,
)

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
        ("4.4.0", ["retention.ms", "min.insync.replicas", "remote.storage.enable"], ["message.format.version"]),
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


def _broker_config(name: str, mode: str, description: str = "") -> str:
    """One config as KafkaConfig.main prints it (4.3.1), most rows left out."""
    return (
        f'<li>\n<h4><a id="{name}"></a><a id="brokerconfigs_{name}" href="#brokerconfigs_{name}">{name}</a></h4>\n'
        f"<p>{description}</p>\n<table><tbody>\n<tr><th>Importance:</th><td>high</td></tr>\n"
        f"<tr><th>Update Mode:</th><td>{mode}</td></tr>\n</tbody></table>\n</li>\n"
    )


BROKER_HTML = (
    '<ul class="config-list">\n'
    # A link to another config in a description is an href, not an anchor of its own.
    + _broker_config("log.retention.hours", "read-only", 'tertiary to <a href="#brokerconfigs_log.retention.ms">it</a>')
    + _broker_config("log.retention.ms", "cluster-wide")
    + _broker_config("advertised.listeners", "per-broker")
    + "</ul>\n"
)


def test_each_broker_config_gets_the_update_mode_of_its_own_row_sorted_by_name() -> None:
    assert list(parse_broker_config_html(BROKER_HTML).items()) == [
        ("advertised.listeners", "per-broker"),
        ("log.retention.hours", "read-only"),
        ("log.retention.ms", "cluster-wide"),
    ]


def test_a_reference_without_broker_configs_is_refused() -> None:
    with pytest.raises(ArtifactError, match="no brokerconfigs_"):
        parse_broker_config_html('<ul class="config-list"></ul>')


def test_a_broker_config_without_an_update_mode_is_refused_not_left_out() -> None:
    html = BROKER_HTML.replace("<tr><th>Update Mode:</th><td>cluster-wide</td></tr>", "")
    with pytest.raises(ArtifactError, match=r"log\.retention\.ms: no Update Mode row"):
        parse_broker_config_html(html)


def test_the_broker_configs_are_written_beside_the_archive() -> None:
    assert broker_configs_path(Path("/c/kafka_2.13-4.3.1.tgz")) == Path("/c/kafka_2.13-4.3.1.broker-configs.json")


def test_a_present_topic_list_does_not_keep_the_broker_file_from_being_written(tmp_path: Path) -> None:
    # Machines that ran the topic-only version have the topic list already; the broker file must still come.
    html = tmp_path / "broker.html"
    html.write_text(BROKER_HTML)
    # The java prints the broker reference; LogConfig would fail, so the topic list must not run it.
    archive, java = _fake_release(tmp_path, f'[ "$3" = kafka.server.KafkaConfig ] && exec cat {html}\nexit 1\n')
    configs_path(archive).write_text('["retention.ms"]\n')

    assert write_topic_configs(archive, java) == configs_path(archive)
    assert write_broker_configs(archive, java) == broker_configs_path(archive)
    assert json.loads(broker_configs_path(archive).read_text()) == parse_broker_config_html(BROKER_HTML)
    broker_configs_path(archive).write_text("{}\n")
    write_broker_configs(archive, java)  # present: a no-op, even when it differs
    assert broker_configs_path(archive).read_text() == "{}\n"


# What each release's KafkaConfig says, checked by hand. advertised.listeners is per-broker in 3.9.2 and
# read-only in 4.x: why the table is read from each release and not typed once.
SAME_IN_ALL = {
    "log.retention.hours": "read-only",
    "log.retention.ms": "cluster-wide",
    "listener.security.protocol.map": "per-broker",
    "min.insync.replicas": "cluster-wide",
}


@pytest.mark.parametrize(
    "version,modes",
    [
        (
            "4.3.1",
            {**SAME_IN_ALL, "advertised.listeners": "read-only", "leader.replication.throttled.rate": "cluster-wide"},
        ),
        (
            "4.4.0",
            {
                **SAME_IN_ALL,
                "advertised.listeners": "read-only",
                "leader.replication.throttled.rate": "cluster-wide",
                "group.share.delivery.count.limit": "read-only",
            },
        ),
        ("3.9.2", {**SAME_IN_ALL, "advertised.listeners": "per-broker", "zookeeper.connect": "read-only"}),
    ],
)
def test_each_pinned_release_gives_its_own_broker_update_modes(version: str, modes: dict[str, str]) -> None:
    archive = CACHE / f"kafka_2.13-{version}.tgz"
    assert archive.exists(), f"{archive} missing: make artifacts builds it (make unit depends on it)"
    read = broker_configs(archive)
    assert {name: read.get(name) for name in modes} == modes
    assert set(read.values()) == {"read-only", "per-broker", "cluster-wide"}
    written = broker_configs_path(archive)
    if written.exists():  # what make artifacts wrote is the same table
        assert json.loads(written.read_text()) == read


# What 4.3.1's `kafka-features.sh version-mapping` prints.
VERSION_MAPPING = """metadata.version=30 (4.3-IV0)
kraft.version=1
transaction.version=2
group.version=1
eligible.leader.replicas.version=1
share.version=1
streams.version=1
"""


def test_each_feature_gets_its_level_and_metadata_version_its_name_too() -> None:
    assert parse_version_mapping(VERSION_MAPPING) == {
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "kraft.version": 1,
        "metadata.version": 30,
        "metadata.version.name": "4.3-IV0",
        "share.version": 1,
        "streams.version": 1,
        "transaction.version": 2,
    }


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "no metadata.version"),
        ("kraft.version=1\n", "no metadata.version"),
        ("metadata.version=30\nkraft.version=1\n", "no metadata.version"),  # the name is part of the output
        (VERSION_MAPPING + "[2026-01-01 10:00:00,000] WARN something (org.apache.kafka)\n", "unexpected line"),
        (VERSION_MAPPING.replace("kraft.version=1", "kraft.version: 1"), "unexpected line"),
        (VERSION_MAPPING + "group.version=2\n", "group.version twice"),
    ],
)
def test_a_version_mapping_in_another_format_is_refused(text: str, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        parse_version_mapping(text)


def test_the_features_are_written_beside_the_archive() -> None:
    assert features_path(Path("/c/kafka_2.13-4.3.1.tgz")) == Path("/c/kafka_2.13-4.3.1.features.json")


def _fake_release(tmp_path: Path, script: str) -> tuple[Path, str]:
    """An archive with one (empty) jar in libs/ and a java that runs the shell script instead."""
    archive = tmp_path / "kafka_2.13-4.3.1.tgz"
    jar = tmp_path / "kafka-tools-4.3.1.jar"
    jar.write_bytes(b"")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(jar, arcname="kafka_2.13-4.3.1/libs/kafka-tools-4.3.1.jar")
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\n" + script)
    java.chmod(0o755)
    return archive, str(java)


def test_the_features_file_is_written_once_from_version_mapping(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.txt"
    mapping.write_text(VERSION_MAPPING)
    archive, java = _fake_release(
        tmp_path,
        f'[ "$3 $4 $5 $6" = "org.apache.kafka.tools.FeatureCommand --bootstrap-server localhost:1 version-mapping" ]'
        f" || exit 1\necho 'WARN ignored: stderr is not read on success' >&2\nexec cat {mapping}\n",
    )
    assert write_features(archive, java) == features_path(archive)
    assert json.loads(features_path(archive).read_text()) == parse_version_mapping(VERSION_MAPPING)
    features_path(archive).write_text("{}\n")
    write_features(archive, java)  # present: a no-op, even when it differs
    assert features_path(archive).read_text() == "{}\n"


def test_a_release_without_version_mapping_writes_no_features_and_does_not_fail(tmp_path: Path) -> None:
    # 3.9.2's argparse4j, justified and wrapped as it prints it.
    archive, java = _fake_release(
        tmp_path,
        "cat >&2 <<'EOF'\nusage: kafka-features [-h] [--command-config COMMAND_CONFIG]\n"
        "kafka-features:  error:  invalid  choice:  'version-mapping'  (choose  from\n"
        "'describe', 'upgrade', 'downgrade', 'disable')\nEOF\nexit 1\n",
    )
    assert write_features(archive, java) is None
    assert not features_path(archive).exists()


def test_any_other_failure_of_version_mapping_is_an_error(tmp_path: Path) -> None:
    archive, java = _fake_release(tmp_path, "echo 'Exception in thread main: boom' >&2\nexit 1\n")
    with pytest.raises(ArtifactError, match=r"version-mapping failed \(exit 1\): Exception in thread main: boom"):
        write_features(archive, java)
    assert not features_path(archive).exists()


@pytest.mark.parametrize(
    "version,level,name",
    [("4.4.0", 33, "4.4-IV2"), ("4.3.1", 30, "4.3-IV0"), ("3.9.2", None, None)],
)
def test_each_pinned_release_gives_its_own_default_features(version: str, level: int | None, name: str | None) -> None:
    archive = CACHE / f"kafka_2.13-{version}.tgz"
    assert archive.exists(), f"{archive} missing: make artifacts builds it (make unit depends on it)"
    read = features(archive)
    written = features_path(archive)
    if level is None:  # 3.9.x: no version-mapping, only run in ZooKeeper mode here
        assert read is None
        assert not written.exists()
        return
    assert read is not None
    assert (read["metadata.version"], read["metadata.version.name"]) == (level, name)
    assert {"kraft.version", "transaction.version", "group.version"} <= set(read)
    if written.exists():  # what make artifacts wrote is the same table
        assert json.loads(written.read_text()) == read
