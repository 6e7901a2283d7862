"""Kafka's own list of topic configs, read from a release archive: what `kafka_topics` may declare.

Kafka documents its topic configs by running `LogConfig.main` (it prints the config reference as HTML,
one `topicconfigs_<name>` anchor per config); the release's own classes are the authority, so the list
can never drift from the pinned release the way a hand-typed one would. This runs that class from the
archive's libs/ with the controller's java and writes the names as JSON beside the archive, where the
kafka_topics preflight reads them.
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
_ANCHOR = re.compile(r'id="topicconfigs_([A-Za-z0-9._-]+)"')


class NoJavaError(ArtifactError):
    """No java on the controller: the list cannot be read (the kafka role then leaves the check to the broker)."""

    exit_code = 4


def configs_path(archive: Path) -> Path:
    """kafka_2.13-4.3.1.tgz -> kafka_2.13-4.3.1.topic-configs.json, beside it."""
    return archive.with_name(re.sub(r"\.(tgz|tar\.gz)$", "", archive.name) + ".topic-configs.json")


def parse_config_html(html: str) -> list[str]:
    """The config names of LogConfig's HTML reference, sorted and unique."""
    return sorted(set(_ANCHOR.findall(html)))


def topic_configs(archive: Path, java: str | None = None) -> list[str]:
    """Run the archive's LogConfig.main and return the topic config names it documents."""
    java = java or shutil.which("java")
    if not java:
        raise NoJavaError(
            "java is not on the controller's PATH: it runs the release's own LogConfig to list the topic configs. "
            "Install a JRE (apt-get install openjdk-17-jre-headless)."
        )
    with tempfile.TemporaryDirectory(prefix="kafkalab-topic-configs-") as tmp:
        with tarfile.open(archive) as tar:
            jars = [m for m in tar.getmembers() if m.isfile() and "/libs/" in m.name and m.name.endswith(".jar")]
            if not jars:
                raise ArtifactError(f"{archive}: no libs/*.jar inside: not a Kafka binary distribution")
            tar.extractall(tmp, members=jars, filter="data")
        libs = {str(Path(tmp) / Path(m.name).parent) for m in jars}
        classpath = ":".join(f"{d}/*" for d in sorted(libs))
        proc = subprocess.run(
            [java, "-cp", classpath, LOG_CONFIG_CLASS], capture_output=True, text=True, timeout=120, check=False
        )
    names = parse_config_html(proc.stdout)
    if proc.returncode != 0 or not names:
        raise ArtifactError(
            f"{archive}: {LOG_CONFIG_CLASS} listed no topic configs (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-300:]}"
        )
    return names


def write_topic_configs(archive: Path, java: str | None = None) -> Path:
    """Write configs_path(archive) (a JSON list of names); a no-op when it is already there."""
    out = configs_path(archive)
    if not out.exists():
        out.write_text(json.dumps(topic_configs(archive, java), indent=1) + "\n", encoding="utf-8")
    return out
