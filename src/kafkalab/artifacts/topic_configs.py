"""Kafka's own config references, read from a release archive: topic configs, broker update modes, features.

Kafka documents its configs by running two of its classes, each printing a config reference as HTML:
`LogConfig.main` (one `topicconfigs_<name>` anchor per topic config) and `KafkaConfig.main` (one
`brokerconfigs_<name>` anchor per broker config, each with an "Update Mode" row: read-only,
per-broker or cluster-wide). The release's own classes are the authority, so the lists can never
drift from the pinned release the way hand-typed ones would. This runs those classes from the
archive's libs/ with the controller's java and writes, beside the archive:

- `<stem>.topic-configs.json`: the topic config names (a JSON list), what `kafka_topics` may declare;
  the kafka_topics preflight reads it.
- `<stem>.broker-configs.json`: every broker config and its update mode (a JSON object), i.e. which
  broker properties the release can change at run time (per-broker, cluster-wide) and which only
  take effect after a restart (read-only). It covers the configs KafkaConfig documents, nothing else:
  listener-prefixed overrides (`listener.name.<listener>.<config>`) are not in it, and 3.9.2 does not
  list the replication throttle rates (`leader.replication.throttled.rate`) that 4.3.1 does. A name
  missing from the file is "not documented here", not "read-only".
- `<stem>.features.json`: the feature levels the release finalizes by default (a JSON object feature
  name -> level, plus `metadata.version.name`, e.g. "4.3-IV0"), as its own `kafka-features.sh
  version-mapping` prints them. FeatureCommand has no version-mapping before 4.0: for 3.9.x (only run
  in ZooKeeper mode here) no file is written, and that is not an error.

Each file is written only when it is missing, independently of the others. The classes run with a
log4j config (log4j2 for 4.x, reload4j for 3.9) that sends warnings to stderr, so stdout is only what
the class prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from kafkalab.artifacts.errors import ArtifactError

# Where LogConfig lives: the storage module since Kafka 3.6 (3.9.2 and 4.x alike).
LOG_CONFIG_CLASS = "org.apache.kafka.storage.internals.log.LogConfig"
# KafkaConfig (core) prints the broker reference with the update modes of DynamicBrokerConfig (3.9.2 and 4.x).
KAFKA_CONFIG_CLASS = "kafka.server.KafkaConfig"
# kafka-features.sh; version-mapping needs no broker, but 4.2's argparse demands a bootstrap option (4.3 takes it).
FEATURE_COMMAND_CLASS = "org.apache.kafka.tools.FeatureCommand"
VERSION_MAPPING_ARGS = ("--bootstrap-server", "localhost:1", "version-mapping")
METADATA_VERSION = "metadata.version"
# `metadata.version=30 (4.3-IV0)`, `kraft.version=1`: one feature a line, a name in parentheses for some.
_FEATURE_LINE = re.compile(r"([a-z][a-z0-9._-]*)=(\d+)(?: \(([^()\s]+)\))?")
# 3.9's argparse4j justifies its message (`invalid  choice:  'version-mapping'`) and may wrap it.
_NO_VERSION_MAPPING = re.compile(r"invalid\s+choice:\s+'version-mapping'")
# On the classpath ahead of libs/ (whose jars carry no log4j config): log4j2 (4.x) and reload4j (3.9) find
# these first, and log warnings and errors to stderr instead of the default configuration's stdout.
_LOG_CONFIGS = {
    "log4j2.properties": (
        "status = error\n"
        "appender.stderr.type = Console\n"
        "appender.stderr.name = STDERR\n"
        "appender.stderr.target = SYSTEM_ERR\n"
        "appender.stderr.layout.type = PatternLayout\n"
        "appender.stderr.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = warn\n"
        "rootLogger.appenderRef.stderr.ref = STDERR\n"
    ),
    "log4j.properties": (
        "log4j.rootLogger=WARN, stderr\n"
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stderr.Target=System.err\n"
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    ),
}
_ANCHOR = re.compile(r'id="topicconfigs_([A-Za-z0-9._-]+)"')
_BROKER_ANCHOR = re.compile(r'id="brokerconfigs_([A-Za-z0-9._-]+)"')
_UPDATE_MODE = re.compile(r"<tr><th>Update Mode:</th><td>([a-z-]+)</td></tr>")


class NoJavaError(ArtifactError):
    """No java on the controller: the lists cannot be read (the kafka role then leaves the check to the broker)."""

    exit_code = 4


def _stem(archive: Path) -> str:
    return re.sub(r"\.(tgz|tar\.gz)$", "", archive.name)


def configs_path(archive: Path) -> Path:
    """kafka_2.13-4.3.1.tgz -> kafka_2.13-4.3.1.topic-configs.json, beside it."""
    return archive.with_name(_stem(archive) + ".topic-configs.json")


def broker_configs_path(archive: Path) -> Path:
    """kafka_2.13-4.3.1.tgz -> kafka_2.13-4.3.1.broker-configs.json, beside it."""
    return archive.with_name(_stem(archive) + ".broker-configs.json")


def features_path(archive: Path) -> Path:
    """kafka_2.13-4.3.1.tgz -> kafka_2.13-4.3.1.features.json, beside it."""
    return archive.with_name(_stem(archive) + ".features.json")


def parse_config_html(html: str) -> list[str]:
    """The config names of LogConfig's HTML reference, sorted and unique."""
    return sorted(set(_ANCHOR.findall(html)))


def parse_broker_config_html(html: str) -> dict[str, str]:
    """{broker config name: update mode} from KafkaConfig's HTML reference, sorted by name.

    A config's update mode is the "Update Mode" row between its anchor and the next config's. A config
    without one, or no config at all, means the format is not the one this parser knows: refused rather
    than returned partly, since a config left out would look undocumented.
    """
    anchors = list(_BROKER_ANCHOR.finditer(html))
    if not anchors:
        raise ArtifactError("no brokerconfigs_<name> anchors in the broker config reference")
    modes: dict[str, str] = {}
    for anchor, following in zip(anchors, [*anchors[1:], None], strict=True):
        section = html[anchor.end() : following.start() if following else len(html)]
        mode = _UPDATE_MODE.search(section)
        if mode is None:
            raise ArtifactError(f"broker config {anchor.group(1)}: no Update Mode row in the broker config reference")
        modes[anchor.group(1)] = mode.group(1)
    return dict(sorted(modes.items()))


def parse_version_mapping(text: str) -> dict[str, int | str]:
    """{feature name: level} from FeatureCommand's version-mapping, plus `metadata.version.name` ("4.3-IV0").

    A name in parentheses after a level goes under `<feature>.name` (only metadata.version has one). Any
    other line, a feature twice, or no metadata.version with its name means a format this parser does
    not know: refused rather than returned partly.
    """
    features: dict[str, int | str] = {}
    for line in filter(None, (raw.strip() for raw in text.splitlines())):
        match = _FEATURE_LINE.fullmatch(line)
        if match is None:
            raise ArtifactError(f"unexpected line in the version mapping: {line!r}")
        name, level, label = match.groups()
        if name in features:
            raise ArtifactError(f"feature {name} twice in the version mapping")
        features[name] = int(level)
        if label is not None:
            features[f"{name}.name"] = label
    if not isinstance(features.get(f"{METADATA_VERSION}.name"), str):
        raise ArtifactError(f"no {METADATA_VERSION}=<level> (<name>) line in the version mapping")
    return dict(sorted(features.items()))


def _run_release_class(
    archive: Path, class_name: str, java: str | None, args: tuple[str, ...] = ()
) -> tuple[int, str, str]:
    """Run class_name's main (with args) from the archive's libs/ with java: (exit code, stdout, stderr)."""
    java = java or shutil.which("java")
    if not java:
        raise NoJavaError(
            "java is not on the controller's PATH: it runs the release's own LogConfig, KafkaConfig and "
            "FeatureCommand to list the topic and broker configs and the features. Install a JRE "
            "(apt-get install openjdk-17-jre-headless)."
        )
    with tempfile.TemporaryDirectory(prefix="kafkalab-release-configs-") as tmp:
        try:
            with tarfile.open(archive) as tar:
                jars = [m for m in tar.getmembers() if m.isfile() and "/libs/" in m.name and m.name.endswith(".jar")]
                if not jars:
                    raise ArtifactError(f"{archive}: no libs/*.jar inside: not a Kafka binary distribution")
                tar.extractall(tmp, members=jars, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise ArtifactError(f"{archive}: cannot be read as a Kafka binary distribution (.tgz): {exc}") from exc
        conf = Path(tmp) / "log-config"
        conf.mkdir()
        for name, text in _LOG_CONFIGS.items():
            (conf / name).write_text(text, encoding="utf-8")
        libs = {str(Path(tmp) / Path(m.name).parent) for m in jars}
        classpath = ":".join([str(conf), *(f"{d}/*" for d in sorted(libs))])
        proc = subprocess.run(
            [java, "-cp", classpath, class_name, *args], capture_output=True, text=True, timeout=120, check=False
        )
    return proc.returncode, proc.stdout, proc.stderr


def topic_configs(archive: Path, java: str | None = None) -> list[str]:
    """Run the archive's LogConfig.main and return the topic config names it documents."""
    returncode, stdout, stderr = _run_release_class(archive, LOG_CONFIG_CLASS, java)
    names = parse_config_html(stdout)
    if returncode != 0 or not names:
        raise ArtifactError(
            f"{archive}: {LOG_CONFIG_CLASS} listed no topic configs (exit {returncode}): {stderr.strip()[-300:]}"
        )
    return names


def broker_configs(archive: Path, java: str | None = None) -> dict[str, str]:
    """Run the archive's KafkaConfig.main and return each broker config's update mode."""
    returncode, stdout, stderr = _run_release_class(archive, KAFKA_CONFIG_CLASS, java)
    if returncode != 0:
        raise ArtifactError(f"{archive}: {KAFKA_CONFIG_CLASS} failed (exit {returncode}): {stderr.strip()[-300:]}")
    try:
        return parse_broker_config_html(stdout)
    except ArtifactError as exc:
        raise ArtifactError(f"{archive}: {KAFKA_CONFIG_CLASS}: {exc}") from exc


def features(archive: Path, java: str | None = None) -> dict[str, int | str] | None:
    """Run the archive's FeatureCommand version-mapping: the feature levels the release finalizes by default.

    None when the release's FeatureCommand has no version-mapping (before 4.0, e.g. 3.9.2).
    """
    returncode, stdout, stderr = _run_release_class(archive, FEATURE_COMMAND_CLASS, java, VERSION_MAPPING_ARGS)
    if returncode != 0:
        if _NO_VERSION_MAPPING.search(stderr):
            return None
        raise ArtifactError(
            f"{archive}: {FEATURE_COMMAND_CLASS} version-mapping failed (exit {returncode}): {stderr.strip()[-300:]}"
        )
    try:
        return parse_version_mapping(stdout)
    except ArtifactError as exc:
        raise ArtifactError(f"{archive}: {FEATURE_COMMAND_CLASS} version-mapping: {exc}") from exc


def write_topic_configs(archive: Path, java: str | None = None) -> Path:
    """Write configs_path(archive) (a JSON list of names); a no-op when it is already there."""
    out = configs_path(archive)
    if not out.exists():
        out.write_text(json.dumps(topic_configs(archive, java), indent=1) + "\n", encoding="utf-8")
    return out


def write_broker_configs(archive: Path, java: str | None = None) -> Path:
    """Write broker_configs_path(archive) (a JSON object name -> update mode); a no-op when it is already there."""
    out = broker_configs_path(archive)
    if not out.exists():
        out.write_text(json.dumps(broker_configs(archive, java), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def write_features(archive: Path, java: str | None = None) -> Path | None:
    """Write features_path(archive) (a JSON object feature -> level); a no-op when it is already there.

    None when the release has no version-mapping (3.9.x): nothing is written, so each run asks again.
    """
    out = features_path(archive)
    if not out.exists():
        read = features(archive, java)
        if read is None:
            return None
        out.write_text(json.dumps(read, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out
