"""Developers only: (re)write a Kafka distribution lock (needs mvn and network; a JDK is not needed).

Maven resolves the runtime closure of the distribution's roots, every jar is checked against the
repository's published checksum, and each CLI tool's main class is found in the jars.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

from kafkalab.artifacts.classfile import find_tool_classes
from kafkalab.artifacts.errors import ArtifactError
from kafkalab.artifacts.lock import Artifact, Lock, lock_path, lock_to_json, parse_lock
from kafkalab.artifacts.logging_flavours import logging_for
from kafkalab.artifacts.maven import DEFAULT_REPOSITORY, fetch_text, verify_published

# Where each CLI tool's main class lives, newest location first. Apache moved tools out of the Scala
# core (kafka.*) into the Java tools module (org.apache.kafka.tools.*) over the 3.x/4.x releases, and
# sometimes a moved class stays behind for a while; the official bin/ scripts use the new one as soon
# as it exists. `relock` picks the first candidate that exists with a `public static void main`.
KAFKA_TOOL_CANDIDATES: dict[str, tuple[str, ...]] = {
    "kafka-server-start": ("kafka.Kafka",),
    "kafka-storage": ("org.apache.kafka.tools.StorageTool", "kafka.tools.StorageTool"),
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "kafka-metadata-quorum": (
        "org.apache.kafka.tools.MetadataQuorumCommand",
        "kafka.admin.MetadataQuorumCommand",
    ),
    "kafka-consumer-groups": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ),
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-console-producer": ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
    "kafka-console-consumer": (
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "kafka.tools.ConsoleConsumer",
    ),
    "kafka-producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",),
    "kafka-consumer-perf-test": (
        "org.apache.kafka.tools.ConsumerPerformance",
        "kafka.tools.ConsumerPerformance",
    ),
    "kafka-broker-api-versions": (
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        "kafka.admin.BrokerApiVersionsCommand",
    ),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"),
    "kafka-reassign-partitions": (
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "kafka.admin.ReassignPartitionsCommand",
    ),
    "kafka-leader-election": (
        "org.apache.kafka.tools.LeaderElectionCommand",
        "kafka.admin.LeaderElectionCommand",
    ),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),
    # unregister: a drained KRaft broker leaves the cluster's registrations (playbooks/decommission.yml).
    "kafka-cluster": ("org.apache.kafka.tools.ClusterTool", "kafka.admin.ClusterTool"),
    # Open, hanging and aborted transactions, by transactional id or partition.
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
}
# Share groups (KIP-932): Kafka 4 (generally available from 4.2).
SHARE_GROUP_TOOL_CANDIDATES: dict[str, tuple[str, ...]] = {
    "kafka-share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",),
    "kafka-console-share-consumer": ("org.apache.kafka.tools.consumer.ConsoleShareConsumer",),
}
# Only for releases that still bundle ZooKeeper (3.x).
ZOOKEEPER_TOOL_CANDIDATES: dict[str, tuple[str, ...]] = {
    "zookeeper-server-start": ("org.apache.zookeeper.server.quorum.QuorumPeerMain",),
    "zookeeper-shell": (
        "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka",
        "org.apache.zookeeper.ZooKeeperMain",
    ),
}

# Apache Kafka 3.9 ships reload4j 1.2.25, newer than the 1.2.19 that slf4j-reload4j 1.7.36 asks for.
RELOAD4J_VERSION = "1.2.25"


def relock_roots(
    kafka_version: str, scala_version: str, slf4j_version: str, log4j2_version: str | None
) -> list[tuple[str, str, str]]:
    """The Maven roots whose runtime closure is the distribution's libs/."""
    roots = [
        ("org.apache.kafka", f"kafka_{scala_version}", kafka_version),
        # The CLI tools (and, through them, connect-runtime as in Apache's libs/) live here.
        ("org.apache.kafka", "kafka-tools", kafka_version),
    ]
    if logging_for(kafka_version) == "log4j2":
        if log4j2_version is None:
            raise ArtifactError(f"Kafka {kafka_version}: could not find which log4j2 version it uses")
        # slf4j 1.x needs log4j-slf4j-impl; slf4j 2.x needs log4j-slf4j2-impl.
        binding = "log4j-slf4j-impl" if slf4j_version.startswith("1.") else "log4j-slf4j2-impl"
        roots += [
            ("org.apache.logging.log4j", "log4j-api", log4j2_version),
            ("org.apache.logging.log4j", "log4j-core", log4j2_version),
            ("org.apache.logging.log4j", binding, log4j2_version),
        ]
    else:
        roots += [
            ("org.slf4j", "slf4j-reload4j", slf4j_version),
            ("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION),
        ]
    return roots


def relock_pom(roots: Sequence[tuple[str, str, str]]) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in roots
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Temporary pom from kafkalab.artifacts relock: resolves a Kafka distribution's runtime closure. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkalab.relock</groupId>
  <artifactId>kafka-distribution</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def relock_settings(repository: str) -> str:
    """Maven settings that send every download to one repository (a site mirror)."""
    return f"""<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>kafkalab-mirror</id><mirrorOf>*</mirrorOf><url>{repository}</url></mirror>
  </mirrors>
</settings>
"""


def artifact_from_layout(relative: str, sha512: str, size: int) -> Artifact:
    """Coordinates of a jar from its repository-layout path (group/dirs/artifact/version/file.jar)."""
    parts = relative.split("/")
    if len(parts) < 4 or not parts[-1].endswith(".jar"):
        raise ArtifactError(f"not a repository-layout jar path: {relative}")
    *group_parts, artifact, version, file = parts
    stem = f"{artifact}-{version}"
    if not file.startswith(stem):
        raise ArtifactError(f"jar {relative}: file name does not start with {stem}")
    rest = file[len(stem) : -len(".jar")]
    if rest and not rest.startswith("-"):
        raise ArtifactError(f"jar {relative}: cannot tell the classifier from the file name")
    classifier = rest[1:] or None
    return Artifact(".".join(group_parts), artifact, version, classifier, file, sha512, size)


def pom_dependency_version(pom_xml: str, group: str, artifact: str) -> str | None:
    """The version a published pom declares for one dependency (published poms have them resolved)."""
    root = ET.fromstring(pom_xml)
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    for dep in root.findall("m:dependencies/m:dependency", ns):
        if dep.findtext("m:groupId", "", ns) == group and dep.findtext("m:artifactId", "", ns) == artifact:
            return dep.findtext("m:version", None, ns)
    return None


def relock(
    kafka_version: str,
    scala_version: str,
    repository: str,
    lock_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
    mvn: str = "mvn",
) -> Path:
    """Resolve the runtime closure with Maven, verify it against published checksums, write the lock."""
    if shutil.which(mvn) is None:
        raise ArtifactError(f"relock needs Maven ({mvn!r} not found on PATH)")
    base = f"{repository}/org/apache/kafka"
    poms: dict[str, str] = {}
    for artifact in (f"kafka_{scala_version}", "kafka-tools", "kafka-clients", "kafka-server"):
        pom = fetch_text(opener, f"{base}/{artifact}/{kafka_version}/{artifact}-{kafka_version}.pom")
        if pom is None and artifact in (f"kafka_{scala_version}", "kafka-tools"):
            raise ArtifactError(
                f"org.apache.kafka:{artifact}:{kafka_version} is not published in {repository}; a complete "
                f"distribution cannot be resolved. Check {base}/{artifact}/maven-metadata.xml for versions."
            )
        if pom is not None:
            poms[artifact] = pom
    slf4j = pom_dependency_version(poms["kafka-clients"], "org.slf4j", "slf4j-api") if "kafka-clients" in poms else None
    if slf4j is None:
        raise ArtifactError(f"cannot tell which slf4j-api Kafka {kafka_version} uses (kafka-clients pom)")
    log4j2 = pom_dependency_version(poms.get("kafka-server", "<project/>"), "org.apache.logging.log4j", "log4j-core")
    roots = relock_roots(kafka_version, scala_version, slf4j, log4j2)
    log(f"resolving runtime closure of: {', '.join(':'.join(r) for r in roots)}")

    with tempfile.TemporaryDirectory(prefix="kafkalab-relock-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "pom.xml").write_text(relock_pom(roots), encoding="utf-8")
        command = [mvn, "-B", "-q", "--strict-checksums", "-f", str(tmp / "pom.xml")]
        if repository != DEFAULT_REPOSITORY:
            (tmp / "settings.xml").write_text(relock_settings(repository), encoding="utf-8")
            command += ["-s", str(tmp / "settings.xml")]
        command += [
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
            "-DincludeScope=runtime",
            "-Dmdep.useRepositoryLayout=true",
            f"-DoutputDirectory={tmp / 'libs'}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            errors = [line for line in result.stdout.splitlines() if "[ERROR]" in line][:5]
            raise ArtifactError(
                "mvn could not resolve the closure:\n"
                + "\n".join(errors or [result.stdout[-2000:], result.stderr[-2000:]])
            )
        jars = sorted((tmp / "libs").rglob("*.jar"))
        artifacts = []
        for jar in jars:
            relative = jar.relative_to(tmp / "libs").as_posix()
            sha512 = verify_published(opener, repository, relative, jar)
            artifacts.append(artifact_from_layout(relative, sha512, jar.stat().st_size))
        candidates = dict(KAFKA_TOOL_CANDIDATES)
        if any(a.group == "org.apache.zookeeper" and a.artifact == "zookeeper" for a in artifacts):
            candidates.update(ZOOKEEPER_TOOL_CANDIDATES)
        if int(kafka_version.split(".")[0]) >= 4:
            candidates.update(SHARE_GROUP_TOOL_CANDIDATES)
        tools = find_tool_classes(jars, candidates)
    lock = Lock(kafka_version, scala_version, logging_for(kafka_version), tools, tuple(artifacts))
    text = lock_to_json(lock, [":".join(r) for r in roots], repository)
    parse_lock(json.loads(text), "generated lock")  # what we write must be what assemble accepts
    path = lock_path(lock_dir, scala_version, kafka_version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
