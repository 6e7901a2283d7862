"""Assemble a runnable Apache Kafka binary distribution from a Maven repository.

Sites (and our CI) that cannot reach Apache's download site can still install Kafka, because every jar
of the official distribution's libs/ is published on Maven Central. A committed lock file
(artifacts/locks/kafka_<scala>-<version>.json) pins each jar by sha512 and records the main class of
every CLI tool. `assemble-kafka` downloads and verifies the jars and writes a deterministic
kafka_<scala>-<version>.tgz laid out like Apache's archive; `relock` (developers only, needs `mvn`
and network) regenerates a lock. Only the standard library is used at run time.

    python -m kafkalab.artifacts assemble-kafka --version 4.3.1 [--repository URL] [--out DIR]
    python -m kafkalab.artifacts relock --version 4.3.1

The Spark hosts need jars and wheels from the controller too (they cannot reach Maven or PyPI):
`fetch-jars` verifies the jars of a jar lock (artifacts/locks/spark-kafka-<version>.json: a flat list,
no tools) into <out>/<lock name>/; `lock-jars` (developers only) writes such a lock from explicit
coordinates, checked against the repository's published checksums; `build-wheels` builds the
hash-pinned requirements of artifacts/locks/pyspark-<version>.txt (plus local projects such as spark/)
into a wheel directory with a SHA512SUMS manifest that the roles verify before pushing.

    python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/spark-kafka-4.0.4.json [--out DIR]
    python -m kafkalab.artifacts lock-jars --name spark-kafka-4.0.4 GROUP:ARTIFACT:VERSION ...
    python -m kafkalab.artifacts build-wheels --requirements artifacts/locks/pyspark-4.0.4.txt \
        --project spark --out .cache/artifacts/spark-wheels

Exit codes: 0 success, 1 usage or environment error, 3 integrity error (a jar's sha512 differs
from the lock).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import ssl
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import BinaryIO

DEFAULT_REPOSITORY = "https://repo1.maven.org/maven2"
REPOSITORY_ENV = "KAFKALAB_MAVEN_REPO"
CA_BUNDLE_FALLBACK = Path("/etc/ssl/certs/ca-certificates.crt")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LOCK_DIR = PROJECT_ROOT / "artifacts" / "locks"
DEFAULT_OUT_DIR = PROJECT_ROOT / ".cache" / "artifacts"

LOCK_SCHEMA = 1
# Bump when the layout or content rules of the tarball change: it is part of the no-op fingerprint.
ASSEMBLY_FORMAT = 1
# 1980-01-01T00:00:00Z: a fixed, tool-friendly timestamp (zip's epoch) for every tar entry.
FIXED_MTIME = 315532800
USER_AGENT = "kafkalab-artifacts/1"
HTTP_TIMEOUT_S = 60
DOWNLOAD_ATTEMPTS = 3
DOWNLOAD_JOBS = 6

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTEGRITY = 3

_SHA512_RE = re.compile(r"^[0-9a-f]{128}$")
_TOOL_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_CLASS_NAME_RE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$")
_JAR_NAME_RE = re.compile(r"^[\w.+-]+\.jar$")
_PLACEHOLDER_RE = re.compile(r"@@([A-Z0-9_]+)@@")

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
}
# Only for releases that still bundle ZooKeeper (3.x).
ZOOKEEPER_TOOL_CANDIDATES: dict[str, tuple[str, ...]] = {
    "zookeeper-server-start": ("org.apache.zookeeper.server.quorum.QuorumPeerMain",),
    "zookeeper-shell": (
        "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka",
        "org.apache.zookeeper.ZooKeeperMain",
    ),
}
# Wrappers with their own template (server heap and logging, zookeeper-shell's `-server`); every other
# tool uses tool-wrapper.sh.in.
SPECIAL_WRAPPERS = {
    "kafka-server-start": "bin/kafka-server-start.sh",
    "zookeeper-server-start": "bin/zookeeper-server-start.sh",
    "zookeeper-shell": "bin/zookeeper-shell.sh",
}
# Apache's wrappers give these tools 512 MiB; the rest get kafka-run-class.sh's 256 MiB.
TOOL_HEAP_OPTS = {
    "kafka-console-producer": "-Xmx512M",
    "kafka-console-consumer": "-Xmx512M",
    "kafka-producer-perf-test": "-Xmx512M",
    "kafka-consumer-perf-test": "-Xmx512M",
}
DEFAULT_TOOL_HEAP_OPTS = "-Xmx256M"

# Apache Kafka 3.9 ships reload4j 1.2.25, newer than the 1.2.19 that slf4j-reload4j 1.7.36 asks for.
RELOAD4J_VERSION = "1.2.25"


@dataclasses.dataclass(frozen=True)
class LoggingFlavour:
    """How a Kafka release line logs: which config files the distribution ships and how the JVM finds them."""

    name: str
    template_dir: str
    server_config: str
    tools_config: str
    system_property: str  # -D<property>=<value prefix><path>
    value_prefix: str

    def jvm_option(self, config_file: str) -> str:
        return f"-D{self.system_property}={self.value_prefix}${{base_dir}}/config/{config_file}"


LOGGING_FLAVOURS = {
    "log4j2": LoggingFlavour(
        "log4j2", "config/log4j2", "log4j2.xml", "tools-log4j2.xml", "log4j2.configurationFile", ""
    ),
    "log4j1": LoggingFlavour(
        "log4j1",
        "config/log4j1",
        "log4j.properties",
        "tools-log4j.properties",
        "log4j.configuration",
        "file:",
    ),
}


class ArtifactError(Exception):
    """An error the CLI reports in one message, without a traceback."""

    exit_code = EXIT_ERROR


class ChecksumMismatchError(ArtifactError):
    """A jar's bytes differ from what the lock pins: never install it."""

    exit_code = EXIT_INTEGRITY


@dataclasses.dataclass(frozen=True)
class Artifact:
    """One jar of the distribution, pinned by its Maven coordinates and sha512."""

    group: str
    artifact: str
    version: str
    classifier: str | None
    file: str
    sha512: str
    size: int

    @property
    def coordinate(self) -> str:
        parts = [self.group, self.artifact, self.version] + ([self.classifier] if self.classifier else [])
        return ":".join(parts)

    @property
    def repository_path(self) -> str:
        return "/".join([*self.group.split("."), self.artifact, self.version, self.file])


@dataclasses.dataclass(frozen=True)
class Lock:
    """A parsed lock file: everything needed to assemble one Kafka distribution offline."""

    kafka_version: str
    scala_version: str
    logging: str
    tools: Mapping[str, str]
    artifacts: tuple[Artifact, ...]

    @property
    def dist_name(self) -> str:
        return dist_name(self.scala_version, self.kafka_version)


@dataclasses.dataclass(frozen=True)
class JarLock:
    """A parsed jar lock: a named, flat set of pinned jars (no distribution around them)."""

    name: str
    artifacts: tuple[Artifact, ...]


@dataclasses.dataclass(frozen=True)
class FetchJarsResult:
    directory: Path
    files: tuple[str, ...]
    downloaded: int
    cached: int


@dataclasses.dataclass(frozen=True)
class BuildWheelsResult:
    directory: Path
    wheels: tuple[str, ...]
    built: int
    reused: int


@dataclasses.dataclass(frozen=True)
class DistEntry:
    """One file of the tarball: its path inside the archive, mode, and bytes or a file to copy."""

    name: str
    mode: int
    data: bytes | None = None
    source: Path | None = None


@dataclasses.dataclass(frozen=True)
class AssembleResult:
    tarball: Path
    sha512: str
    size: int
    reused: bool
    downloaded: int
    cached: int


# ---------------------------------------------------------------------------------------------------
# Pure helpers: names, lock parsing, templates


def dist_name(scala_version: str, kafka_version: str) -> str:
    return f"kafka_{scala_version}-{kafka_version}"


def lock_path(lock_dir: Path, scala_version: str, kafka_version: str) -> Path:
    return lock_dir / f"{dist_name(scala_version, kafka_version)}.json"


def major_version(version: str) -> int:
    head = version.split(".", 1)[0]
    if not head.isdigit():
        raise ArtifactError(f"not a Kafka version: {version!r} (expected something like 4.3.1)")
    return int(head)


def logging_for(kafka_version: str) -> str:
    """Kafka 4 logs through log4j2; 3.x through slf4j 1 and reload4j (log4j 1 API)."""
    return "log4j2" if major_version(kafka_version) >= 4 else "log4j1"


def _require(data: Mapping[str, object], key: str, kind: type, where: str) -> object:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ArtifactError(f"{where}: '{key}' must be a {kind.__name__}, got {value!r}")
    return value


def parse_artifact(data: object, where: str) -> Artifact:
    if not isinstance(data, dict):
        raise ArtifactError(f"{where}: each artifact must be an object, got {data!r}")
    text = {key: str(_require(data, key, str, where)) for key in ("group", "artifact", "version", "file", "sha512")}
    classifier = data.get("classifier")
    if classifier is not None and (not isinstance(classifier, str) or not classifier):
        raise ArtifactError(f"{where}: 'classifier' must be a non-empty string or absent, got {classifier!r}")
    size = int(str(_require(data, "size", int, where)))
    if not _SHA512_RE.match(text["sha512"]):
        raise ArtifactError(f"{where}: sha512 must be 128 lowercase hex digits, got {text['sha512']!r}")
    if not _JAR_NAME_RE.match(text["file"]):
        raise ArtifactError(f"{where}: file must be a plain .jar file name, got {text['file']!r}")
    expected = jar_file_name(text["artifact"], text["version"], classifier)
    if text["file"] != expected:
        raise ArtifactError(f"{where}: file {text['file']!r} does not match its coordinates (expected {expected!r})")
    return Artifact(text["group"], text["artifact"], text["version"], classifier, text["file"], text["sha512"], size)


def parse_lock(data: object, source: str = "lock") -> Lock:
    """Validate a decoded lock file; raise ArtifactError naming the first problem."""
    if not isinstance(data, dict):
        raise ArtifactError(f"{source}: top level must be a JSON object")
    schema = data.get("schema")
    if schema != LOCK_SCHEMA:
        raise ArtifactError(f"{source}: unsupported lock schema {schema!r} (this tool reads schema {LOCK_SCHEMA})")
    kafka_version = str(_require(data, "kafka_version", str, source))
    scala_version = str(_require(data, "scala_version", str, source))
    logging = str(_require(data, "logging", str, source))
    if logging not in LOGGING_FLAVOURS:
        raise ArtifactError(f"{source}: logging must be one of {sorted(LOGGING_FLAVOURS)}, got {logging!r}")
    raw_tools = _require(data, "tools", dict, source)
    assert isinstance(raw_tools, dict)
    tools: dict[str, str] = {}
    for name, cls in raw_tools.items():
        if not isinstance(name, str) or not _TOOL_NAME_RE.match(name):
            raise ArtifactError(f"{source}: bad tool name {name!r}")
        if not isinstance(cls, str) or not _CLASS_NAME_RE.match(cls):
            raise ArtifactError(f"{source}: tool {name}: bad Java class name {cls!r}")
        tools[name] = cls
    if "kafka-server-start" not in tools:
        raise ArtifactError(f"{source}: tools must include kafka-server-start")
    raw_artifacts = _require(data, "artifacts", list, source)
    assert isinstance(raw_artifacts, list)
    if not raw_artifacts:
        raise ArtifactError(f"{source}: artifacts is empty")
    artifacts = tuple(parse_artifact(item, f"{source}: artifacts[{i}]") for i, item in enumerate(raw_artifacts))
    seen: dict[str, str] = {}
    for art in artifacts:
        if art.file in seen:
            raise ArtifactError(
                f"{source}: two artifacts share the file name {art.file} ({seen[art.file]}, {art.coordinate})"
            )
        seen[art.file] = art.coordinate
    return Lock(kafka_version, scala_version, logging, dict(sorted(tools.items())), artifacts)


def load_lock(path: Path) -> Lock:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(
            f"no lock file {path}: this Kafka version is not locked yet; a developer runs "
            f"`python -m kafkalab.artifacts relock --version <version>` and commits the result"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON: {exc}") from None
    return parse_lock(data, str(path))


def artifact_to_json(art: Artifact) -> dict[str, object]:
    """One artifacts[] entry of a lock (the inverse of parse_artifact)."""
    entry: dict[str, object] = {
        "group": art.group,
        "artifact": art.artifact,
        "version": art.version,
        "file": art.file,
        "sha512": art.sha512,
        "size": art.size,
    }
    if art.classifier:
        entry["classifier"] = art.classifier
    return entry


def lock_to_json(lock: Lock, roots: Sequence[str], repository: str) -> str:
    """Serialise a lock with stable ordering, so a relock that resolves the same jars gives the same file."""
    artifacts = [
        artifact_to_json(art)
        for art in sorted(lock.artifacts, key=lambda a: (a.group, a.artifact, a.classifier or "", a.version))
    ]
    doc = {
        "_comment": (
            f"Generated by `python -m kafkalab.artifacts relock --version {lock.kafka_version} "
            f"--scala {lock.scala_version}`; do not edit by hand."
        ),
        "schema": LOCK_SCHEMA,
        "kafka_version": lock.kafka_version,
        "scala_version": lock.scala_version,
        "logging": lock.logging,
        "resolved_from": repository,
        "roots": list(roots),
        "tools": dict(sorted(lock.tools.items())),
        "artifacts": artifacts,
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def jar_file_name(artifact: str, version: str, classifier: str | None) -> str:
    return f"{artifact}-{version}-{classifier}.jar" if classifier else f"{artifact}-{version}.jar"


def render(template: str, values: Mapping[str, str], name: str = "template") -> str:
    """Replace @@KEY@@ placeholders; an unknown placeholder is a bug in the template, so fail loudly."""

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ArtifactError(f"{name}: no value for placeholder @@{key}@@")
        return values[key]

    return _PLACEHOLDER_RE.sub(substitute, template)


def load_templates(root: Traversable | None = None) -> dict[str, str]:
    """Every file under the distribution/ package data, keyed by its relative path."""
    base = root if root is not None else resources.files(__package__ or "kafkalab").joinpath("distribution")
    templates: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                if child.name != "__pycache__":
                    walk(child, rel + "/")
            elif not child.name.endswith((".pyc", ".py")):
                templates[rel] = child.read_text(encoding="utf-8")

    walk(base, "")
    if not templates:
        raise ArtifactError("the kafkalab/distribution/ templates are missing from this installation")
    return dict(sorted(templates.items()))


def _template(templates: Mapping[str, str], name: str) -> str:
    try:
        return templates[name]
    except KeyError:
        raise ArtifactError(f"distribution template {name} is missing") from None


def plan_distribution(
    lock: Lock, jar_path: Callable[[Artifact], Path], templates: Mapping[str, str], lock_sha256: str
) -> list[DistEntry]:
    """Everything that goes into the tarball, sorted by path (directories included)."""
    top = lock.dist_name
    flavour = LOGGING_FLAVOURS[lock.logging]
    common = {
        "KAFKA_VERSION": lock.kafka_version,
        "SCALA_VERSION": lock.scala_version,
        "TOOLS_LOG_CONFIG": flavour.tools_config,
        "TOOLS_LOG_CONFIG_OPT": flavour.jvm_option(flavour.tools_config),
        "SERVER_LOG_CONFIG_OPT": flavour.jvm_option(flavour.server_config),
    }
    files: list[DistEntry] = []
    files.append(
        DistEntry(
            f"{top}/bin/kafka-run-class.sh",
            0o755,
            render(_template(templates, "bin/kafka-run-class.sh"), common, "kafka-run-class.sh").encode(),
        )
    )
    for tool, main_class in sorted(lock.tools.items()):
        values = dict(
            common,
            TOOL_NAME=tool,
            MAIN_CLASS=main_class,
            TOOL_HEAP_OPTS=TOOL_HEAP_OPTS.get(tool, DEFAULT_TOOL_HEAP_OPTS),
        )
        template_name = SPECIAL_WRAPPERS.get(tool, "bin/tool-wrapper.sh.in")
        text = render(_template(templates, template_name), values, template_name)
        files.append(DistEntry(f"{top}/bin/{tool}.sh", 0o755, text.encode()))
    for config in (flavour.server_config, flavour.tools_config):
        files.append(
            DistEntry(
                f"{top}/config/{config}",
                0o644,
                _template(templates, f"{flavour.template_dir}/{config}").encode(),
            )
        )
    width = max(len(tool) for tool in lock.tools) + 3
    readme_values = dict(
        common,
        JAR_COUNT=str(len(lock.artifacts)),
        LOCK_NAME=f"{lock.dist_name}.json",
        LOCK_SHA256=lock_sha256,
        LOGGING=flavour.name,
        SERVER_LOG_CONFIG=flavour.server_config,
        TOOLS_TABLE="\n".join(f"  {tool + '.sh':<{width}} {cls}" for tool, cls in sorted(lock.tools.items())),
    )
    files.append(
        DistEntry(
            f"{top}/README.assembled",
            0o644,
            render(_template(templates, "README.assembled.in"), readme_values, "README.assembled.in").encode(),
        )
    )
    for art in lock.artifacts:
        files.append(DistEntry(f"{top}/libs/{art.file}", 0o644, source=jar_path(art)))
    dirs = {top}
    for entry in files:
        parent = entry.name.rsplit("/", 1)[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
    entries = files + [DistEntry(d + "/", 0o755) for d in dirs]
    return sorted(entries, key=lambda e: e.name)


def inputs_fingerprint(lock_text: str, templates: Mapping[str, str]) -> str:
    """What the tarball is a function of: the lock (which pins every jar) and the templates."""
    digest = hashlib.sha256(f"assembly-format:{ASSEMBLY_FORMAT}\n".encode())
    digest.update(b"lock\0" + lock_text.encode() + b"\0")
    for name, text in sorted(templates.items()):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def sha512_line(hexdigest: str, file_name: str) -> str:
    return f"{hexdigest}  {file_name}\n"


# ---------------------------------------------------------------------------------------------------
# Repository access


def normalize_repository(value: str) -> str:
    """Accept http(s):// and file:// URLs, or a plain local directory; return a URL without trailing slash."""
    parsed = urllib.parse.urlparse(value)
    if parsed.scheme in ("http", "https", "file"):
        return value.rstrip("/")
    if parsed.scheme == "" and value:
        return Path(value).resolve().as_uri()
    raise ArtifactError(f"unsupported repository {value!r}: use an http(s):// or file:// URL, or a local directory")


def resolve_repository(cli_value: str | None, environ: Mapping[str, str]) -> str:
    return normalize_repository(cli_value or environ.get(REPOSITORY_ENV) or DEFAULT_REPOSITORY)


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """SSL_CERT_FILE wins; else the default trust store, plus the system bundle when the default is empty."""
    cert_file = environ.get("SSL_CERT_FILE")
    if cert_file:
        if not Path(cert_file).is_file():
            raise ArtifactError(f"SSL_CERT_FILE={cert_file} does not exist")
        return ssl.create_default_context(cafile=cert_file)
    context = ssl.create_default_context()
    # A Python built against another OpenSSL may find no CAs at all; Debian's bundle is the fallback.
    if context.cert_store_stats().get("x509_ca", 0) == 0 and CA_BUNDLE_FALLBACK.is_file():
        context.load_verify_locations(cafile=str(CA_BUNDLE_FALLBACK))
    return context


def build_opener(context: ssl.SSLContext) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))


def _open(opener: urllib.request.OpenerDirector, url: str) -> BinaryIO:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    response: BinaryIO = opener.open(request, timeout=HTTP_TIMEOUT_S)
    return response


def _is_not_found(exc: Exception) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in (404, 410)
    return isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, FileNotFoundError)


def download(opener: urllib.request.OpenerDirector, url: str, dest: Path) -> str:
    """Stream url into dest (via a temporary file), retrying transient errors; return the sha512."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    last_error: Exception | None = None
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            digest = hashlib.sha512()
            with os.fdopen(fd, "wb") as out, _open(opener, url) as response:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            os.replace(tmp, dest)
            return digest.hexdigest()
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            tmp.unlink(missing_ok=True)
            if _is_not_found(exc):
                raise ArtifactError(f"not found in the repository: {url}") from None
            last_error = exc
            if attempt < DOWNLOAD_ATTEMPTS:
                time.sleep(2 * attempt)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    raise ArtifactError(f"download failed after {DOWNLOAD_ATTEMPTS} attempts: {url}: {last_error}")


def fetch_text(opener: urllib.request.OpenerDirector, url: str) -> str | None:
    """A small text resource (pom, checksum), or None when the repository does not have it."""
    try:
        with _open(opener, url) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        if _is_not_found(exc):
            return None
        raise ArtifactError(f"cannot read {url}: {exc}") from None


def sha512_file(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def mismatch_message(art: Artifact, url: str, actual: str) -> str:
    return (
        f"checksum mismatch for {art.file} ({art.coordinate})\n"
        f"  from:     {url}\n"
        f"  expected: sha512 {art.sha512}\n"
        f"  actual:   sha512 {actual}\n"
        "Refusing to assemble: the repository served different bytes than the committed lock pins.\n"
        "What to do: check that the repository is a faithful mirror of Maven Central (a corrupted or\n"
        "tampered proxy cache is the usual cause), fix or bypass it, and run assemble-kafka again. Do not\n"
        "edit the lock to match: if upstream really changed, a developer must review it and run relock."
    )


def ensure_jar(
    art: Artifact,
    repository: str,
    cache_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
) -> bool:
    """Make cache_dir hold a verified copy of art; return True when it had to be downloaded."""
    dest = cache_dir / art.repository_path
    if dest.is_file():
        if sha512_file(dest) == art.sha512:
            return False
        log(f"cached {art.file} does not match the lock; downloading it again")
        dest.unlink()
    url = f"{repository}/{art.repository_path}"
    actual = download(opener, url, dest)
    if actual != art.sha512:
        # Keep the refused bytes out of the cache, so nothing later mistakes them for verified.
        dest.unlink(missing_ok=True)
        raise ChecksumMismatchError(mismatch_message(art, url, actual))
    log(f"fetched {art.file} ({art.size / 1e6:.1f} MB)")
    return True


def fetch_all(
    lock: Lock | JarLock,
    repository: str,
    cache_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
    jobs: int = DOWNLOAD_JOBS,
) -> tuple[int, int]:
    """Verify every jar of the lock into the cache; return (downloaded, cached). All errors are reported."""
    downloaded = cached = 0
    failures: list[ArtifactError] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(ensure_jar, art, repository, cache_dir, opener, log) for art in lock.artifacts]
        for future in futures:
            try:
                if future.result():
                    downloaded += 1
                else:
                    cached += 1
            except ArtifactError as exc:
                failures.append(exc)
    if failures:
        mismatches = [f for f in failures if isinstance(f, ChecksumMismatchError)]
        first = mismatches[0] if mismatches else failures[0]
        more = f"\n({len(failures) - 1} more jar(s) failed too)" if len(failures) > 1 else ""
        raise type(first)(f"{first}{more}")
    return downloaded, cached


# ---------------------------------------------------------------------------------------------------
# Tarball


def _tar_info(name: str, mode: int, size: int, is_dir: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.rstrip("/") if is_dir else name)
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.mode = mode
    info.size = 0 if is_dir else size
    info.mtime = FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_tarball(entries: Iterable[DistEntry], dest: Path) -> None:
    """Write a reproducible .tgz: entries in given order, fixed metadata, gzip header without name/time."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
        ):
            for entry in entries:
                if entry.name.endswith("/"):
                    tar.addfile(_tar_info(entry.name, entry.mode, 0, is_dir=True))
                elif entry.source is not None:
                    with entry.source.open("rb") as handle:
                        size = entry.source.stat().st_size
                        tar.addfile(_tar_info(entry.name, entry.mode, size, False), handle)
                else:
                    data = entry.data or b""
                    tar.addfile(_tar_info(entry.name, entry.mode, len(data), False), io.BytesIO(data))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _stamp_path(tarball: Path) -> Path:
    return tarball.with_name(f".{tarball.name}.stamp.json")


def _existing_result(tarball: Path, fingerprint: str) -> tuple[str, int] | None:
    """(sha512, size) of an existing tarball built from the same inputs and still intact, else None."""
    stamp = _stamp_path(tarball)
    sha_file = tarball.with_name(tarball.name + ".sha512")
    if not (tarball.is_file() and stamp.is_file() and sha_file.is_file()):
        return None
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(recorded, dict) or recorded.get("inputs") != fingerprint:
        return None
    sha = recorded.get("sha512")
    if not isinstance(sha, str) or sha_file.read_text(encoding="utf-8") != sha512_line(sha, tarball.name):
        return None
    if sha512_file(tarball) != sha:
        return None
    return sha, tarball.stat().st_size


def assemble(
    lock_file: Path,
    repository: str,
    out_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
    jobs: int = DOWNLOAD_JOBS,
) -> AssembleResult:
    """Fetch, verify and package the distribution a lock file describes; a no-op when already built."""
    lock_text = lock_file.read_text(encoding="utf-8") if lock_file.is_file() else ""
    lock = load_lock(lock_file)
    templates = load_templates()
    fingerprint = inputs_fingerprint(lock_text, templates)
    tarball = out_dir / f"{lock.dist_name}.tgz"
    existing = _existing_result(tarball, fingerprint)
    if existing is not None:
        return AssembleResult(tarball, existing[0], existing[1], reused=True, downloaded=0, cached=0)

    cache_dir = out_dir / "maven"
    log(f"{lock.dist_name}: verifying {len(lock.artifacts)} jars from {repository}")
    downloaded, cached = fetch_all(lock, repository, cache_dir, opener, log, jobs)
    lock_sha256 = hashlib.sha256(lock_text.encode()).hexdigest()
    entries = plan_distribution(lock, lambda art: cache_dir / art.repository_path, templates, lock_sha256)
    write_tarball(entries, tarball)
    sha = sha512_file(tarball)
    sha_file = tarball.with_name(tarball.name + ".sha512")
    sha_file.write_text(sha512_line(sha, tarball.name), encoding="utf-8")
    _stamp_path(tarball).write_text(json.dumps({"inputs": fingerprint, "sha512": sha}) + "\n", encoding="utf-8")
    return AssembleResult(tarball, sha, tarball.stat().st_size, reused=False, downloaded=downloaded, cached=cached)


# ---------------------------------------------------------------------------------------------------
# Relock (developer-only: needs mvn, a JDK is not needed)


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


def has_public_static_main(classfile: bytes) -> bool:
    """Whether a .class file declares `public static void main(String[])` (parses the class file format)."""
    if classfile[:4] != b"\xca\xfe\xba\xbe":
        return False
    pos = 8
    (count,) = struct.unpack_from(">H", classfile, pos)
    pos += 2
    utf8: dict[int, str] = {}
    index = 1
    # Constant pool entry sizes after the tag byte, by tag (JVMS 4.4); Utf8 is variable.
    sizes = {
        3: 4,
        4: 4,
        5: 8,
        6: 8,
        7: 2,
        8: 2,
        9: 4,
        10: 4,
        11: 4,
        12: 4,
        15: 3,
        16: 2,
        17: 4,
        18: 4,
        19: 2,
        20: 2,
    }
    while index < count:
        tag = classfile[pos]
        pos += 1
        if tag == 1:
            (length,) = struct.unpack_from(">H", classfile, pos)
            utf8[index] = classfile[pos + 2 : pos + 2 + length].decode("utf-8", "replace")
            pos += 2 + length
        elif tag in sizes:
            pos += sizes[tag]
        else:
            return False
        index += 2 if tag in (5, 6) else 1  # longs and doubles take two slots
    pos += 6  # access_flags, this_class, super_class
    (interfaces,) = struct.unpack_from(">H", classfile, pos)
    pos += 2 + 2 * interfaces

    def read_members(start: int) -> tuple[list[tuple[int, int, int]], int]:
        """(flags, name index, descriptor index) of each field or method, and the offset after them."""
        (n,) = struct.unpack_from(">H", classfile, start)
        cursor = start + 2
        found = []
        for _ in range(n):
            flags, name, descriptor, attributes = struct.unpack_from(">HHHH", classfile, cursor)
            cursor += 8
            for _ in range(attributes):
                (length,) = struct.unpack_from(">I", classfile, cursor + 2)
                cursor += 6 + length
            found.append((flags, name, descriptor))
        return found, cursor

    _, methods_start = read_members(pos)  # fields come first
    methods, _ = read_members(methods_start)
    for flags, name, descriptor in methods:
        if utf8.get(name) == "main" and utf8.get(descriptor) == "([Ljava/lang/String;)V" and flags & 0x0009 == 0x0009:
            return True
    return False


def find_tool_classes(jars: Iterable[Path], candidates: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """For each tool, the first candidate class present in the jars with a runnable main method."""
    wanted = {cls.replace(".", "/") + ".class" for options in candidates.values() for cls in options}
    runnable: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as archive:
            for name in wanted.intersection(archive.namelist()):
                if has_public_static_main(archive.read(name)):
                    runnable.add(name[: -len(".class")].replace("/", "."))
    tools: dict[str, str] = {}
    missing = []
    for tool, options in candidates.items():
        found = next((cls for cls in options if cls in runnable), None)
        if found is None:
            missing.append(f"{tool} (looked for {', '.join(options)})")
        else:
            tools[tool] = found
    if missing:
        raise ArtifactError("no main class found for: " + "; ".join(missing))
    return tools


def published_checksum(opener: urllib.request.OpenerDirector, url: str) -> tuple[str, str]:
    """(algorithm, hex) from the repository's .sha512, else its .sha1 (older artifacts only have sha1)."""
    for algorithm in ("sha512", "sha1"):
        text = fetch_text(opener, f"{url}.{algorithm}")
        if text and text.split():
            return algorithm, text.split()[0].lower()
    raise ArtifactError(f"the repository publishes neither .sha512 nor .sha1 for {url}")


def verify_published(opener: urllib.request.OpenerDirector, repository: str, relative: str, path: Path) -> str:
    """Check a downloaded file against the repository's published checksum; return its sha512 for the lock."""
    sha512 = sha512_file(path)
    algorithm, expected = published_checksum(opener, f"{repository}/{relative}")
    actual = sha512 if algorithm == "sha512" else hashlib.new(algorithm, path.read_bytes()).hexdigest()
    if actual != expected:
        raise ChecksumMismatchError(
            f"{relative}: {algorithm} {actual} differs from the repository's published {expected}"
        )
    return sha512


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
        tools = find_tool_classes(jars, candidates)
    lock = Lock(kafka_version, scala_version, logging_for(kafka_version), tools, tuple(artifacts))
    text = lock_to_json(lock, [":".join(r) for r in roots], repository)
    parse_lock(json.loads(text), "generated lock")  # what we write must be what assemble accepts
    path = lock_path(lock_dir, scala_version, kafka_version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------
# Jar locks (Spark's Kafka connector) and wheels (PySpark) for hosts that cannot download anything

JAR_LOCK_KIND = "jars"
_LOCK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_COORDINATE_RE = re.compile(r"^[\w.-]+:[\w.-]+:[\w.+-]+(:[\w.-]+)?$")
_REQUIREMENT_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([\w.+!-]+)\s")
WHEEL_MANIFEST = "SHA512SUMS"
# Wheels are zip files: a fixed timestamp makes a rebuilt wheel of unchanged sources byte-identical, so
# the roles see no change and restart nothing.
WHEEL_SOURCE_DATE_EPOCH = str(FIXED_MTIME)


def parse_jar_lock(data: object, source: str = "jar lock") -> JarLock:
    """Validate a decoded jar lock; raise ArtifactError naming the first problem."""
    if not isinstance(data, dict):
        raise ArtifactError(f"{source}: top level must be a JSON object")
    if data.get("schema") != LOCK_SCHEMA:
        raise ArtifactError(f"{source}: unsupported lock schema {data.get('schema')!r} (this tool reads {LOCK_SCHEMA})")
    if data.get("kind") != JAR_LOCK_KIND:
        raise ArtifactError(f"{source}: 'kind' must be {JAR_LOCK_KIND!r} (a Kafka distribution lock is not a jar lock)")
    name = str(_require(data, "name", str, source))
    if not _LOCK_NAME_RE.match(name):
        raise ArtifactError(f"{source}: bad name {name!r} (lowercase letters, digits, '.', '_', '-')")
    raw = _require(data, "artifacts", list, source)
    assert isinstance(raw, list)
    if not raw:
        raise ArtifactError(f"{source}: artifacts is empty")
    artifacts = tuple(parse_artifact(item, f"{source}: artifacts[{i}]") for i, item in enumerate(raw))
    files = [a.file for a in artifacts]
    if len(set(files)) != len(files):
        raise ArtifactError(f"{source}: two artifacts share a file name")
    return JarLock(name, artifacts)


def load_jar_lock(path: Path) -> JarLock:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError(f"no jar lock {path}: a developer runs `python -m kafkalab.artifacts lock-jars`") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON: {exc}") from None
    return parse_jar_lock(data, str(path))


def jar_lock_to_json(lock: JarLock, roots: Sequence[str], repository: str) -> str:
    entries = [artifact_to_json(art) for art in lock.artifacts]
    doc = {
        "_comment": (
            f"Generated by `python -m kafkalab.artifacts lock-jars --name {lock.name} {' '.join(roots)}`; "
            "do not edit by hand."
        ),
        "schema": LOCK_SCHEMA,
        "kind": JAR_LOCK_KIND,
        "name": lock.name,
        "resolved_from": repository,
        "artifacts": entries,
    }
    return json.dumps(doc, indent=2) + "\n"


def parse_coordinate(text: str) -> tuple[str, str, str, str | None]:
    """group:artifact:version[:classifier]"""
    if not _COORDINATE_RE.match(text):
        raise ArtifactError(f"not a Maven coordinate: {text!r} (expected group:artifact:version[:classifier])")
    parts = text.split(":")
    return parts[0], parts[1], parts[2], (parts[3] if len(parts) == 4 else None)


def lock_jars(
    name: str,
    coordinates: Sequence[str],
    repository: str,
    lock_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
) -> Path:
    """Pin exactly the given jars (no transitive resolution): each download is checked against the
    repository's published checksum, then its sha512 goes into <lock_dir>/<name>.json."""
    artifacts = []
    with tempfile.TemporaryDirectory(prefix="kafkalab-lock-jars-") as tmp_name:
        for text in sorted(coordinates):
            group, artifact, version, classifier = parse_coordinate(text)
            file = jar_file_name(artifact, version, classifier)
            relative = "/".join([*group.split("."), artifact, version, file])
            dest = Path(tmp_name) / file
            download(opener, f"{repository}/{relative}", dest)
            sha512 = verify_published(opener, repository, relative, dest)
            artifacts.append(Artifact(group, artifact, version, classifier, file, sha512, dest.stat().st_size))
            log(f"pinned {text}")
    lock = JarLock(name, tuple(artifacts))
    text = jar_lock_to_json(lock, sorted(coordinates), repository)
    parse_jar_lock(json.loads(text), "generated jar lock")
    path = lock_dir / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def fetch_jars(
    lock_file: Path,
    repository: str,
    out_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
    jobs: int = DOWNLOAD_JOBS,
) -> FetchJarsResult:
    """Verify every jar of a jar lock into the shared Maven cache, then lay them out flat in
    <out_dir>/<lock name>/ (exactly the locked files, each re-checked, stale ones removed)."""
    lock = load_jar_lock(lock_file)
    cache_dir = out_dir / "maven"
    downloaded, cached = fetch_all(lock, repository, cache_dir, opener, log, jobs)
    target = out_dir / lock.name
    target.mkdir(parents=True, exist_ok=True)
    wanted = {art.file: art for art in lock.artifacts}
    for stale in target.iterdir():
        if stale.name not in wanted and stale.name != WHEEL_MANIFEST:
            stale.unlink()
    for art in lock.artifacts:
        dest = target / art.file
        if not (dest.is_file() and sha512_file(dest) == art.sha512):
            shutil.copyfile(cache_dir / art.repository_path, dest)
            os.chmod(dest, 0o644)
    manifest = "".join(sha512_line(art.sha512, art.file) for art in sorted(lock.artifacts, key=lambda a: a.file))
    manifest_path = target / WHEEL_MANIFEST
    if not manifest_path.is_file() or manifest_path.read_text(encoding="utf-8") != manifest:
        manifest_path.write_text(manifest, encoding="utf-8")
    return FetchJarsResult(target, tuple(sorted(wanted)), downloaded, cached)


def read_requirements(path: Path) -> list[tuple[str, str]]:
    """(name, version) of each `name==version --hash=...` line of a hash-pinned requirements file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ArtifactError(f"no requirements lock {path}") from None
    pins = []
    for number, line in enumerate(lines, 1):
        stripped = line.split("#", 1)[0].strip()
        if not stripped:
            continue
        match = _REQUIREMENT_RE.match(stripped + " ")
        if match is None or "--hash=sha256:" not in stripped:
            raise ArtifactError(f"{path}:{number}: expected `name==version --hash=sha256:...`, got {line!r}")
        pins.append((match.group(1), match.group(2)))
    if not pins:
        raise ArtifactError(f"{path}: no requirements")
    return pins


def wheel_matches(file_name: str, name: str, version: str) -> bool:
    """Whether a wheel file name is a build of name==version (names compare normalised, PEP 427)."""
    parts = file_name.split("-")
    normal = re.sub(r"[-_.]+", "_", name).lower()
    return file_name.endswith(".whl") and len(parts) >= 5 and parts[0].lower() == normal and parts[1] == version


def _pip_wheel(args: Sequence[str], log: Callable[[str], None]) -> None:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *args]
    env = dict(os.environ, SOURCE_DATE_EPOCH=WHEEL_SOURCE_DATE_EPOCH, PIP_DISABLE_PIP_VERSION_CHECK="1")
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        raise ArtifactError(f"pip wheel failed ({' '.join(command)}):\n{result.stdout[-2000:]}{result.stderr[-3000:]}")
    log(f"built {' '.join(args)}")


def build_wheels(
    requirements: Path,
    projects: Sequence[Path],
    out_dir: Path,
    log: Callable[[str], None],
    runner: Callable[[Sequence[str], Callable[[str], None]], None] = _pip_wheel,
) -> BuildWheelsResult:
    """Wheels for hosts without PyPI: each hash-pinned requirement (built once; pip checks the hashes of
    what it downloads) and each local project (rebuilt every time, reproducibly). Writes SHA512SUMS."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pins = read_requirements(requirements)
    built = reused = 0
    missing = [pin for pin in pins if not any(wheel_matches(p.name, *pin) for p in out_dir.iterdir())]
    if missing:
        log("building " + ", ".join(f"{n}=={v}" for n, v in missing) + " (pip checks the pinned hashes)")
        runner(["--require-hashes", "-r", str(requirements), "-w", str(out_dir)], log)
        built += len(missing)
    reused += len(pins) - len(missing)
    project_wheels = []
    for project in projects:
        with tempfile.TemporaryDirectory(prefix="kafkalab-wheel-") as tmp_name:
            # pip builds in the source tree (build/, *.egg-info): build a copy so the checkout stays clean.
            source = Path(tmp_name) / "src"
            shutil.copytree(project, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            runner([str(source), "-w", tmp_name], log)
            for wheel in Path(tmp_name).glob("*.whl"):
                dest = out_dir / wheel.name
                if not (dest.is_file() and sha512_file(dest) == sha512_file(wheel)):
                    shutil.copyfile(wheel, dest)
                    built += 1
                else:
                    reused += 1
                project_wheels.append(wheel.name)
    keep = [p.name for p in out_dir.iterdir() if any(wheel_matches(p.name, *pin) for pin in pins)] + project_wheels
    unbuilt = [f"{n}=={v}" for n, v in pins if not any(wheel_matches(name, n, v) for name in keep)]
    if unbuilt:
        raise ArtifactError(f"pip built no wheel for {', '.join(unbuilt)} in {out_dir}")
    wheels = tuple(sorted(set(keep)))
    manifest = "".join(sha512_line(sha512_file(out_dir / name), name) for name in wheels)
    manifest_path = out_dir / WHEEL_MANIFEST
    if not manifest_path.is_file() or manifest_path.read_text(encoding="utf-8") != manifest:
        manifest_path.write_text(manifest, encoding="utf-8")
    return BuildWheelsResult(out_dir, wheels, built, reused)


# ---------------------------------------------------------------------------------------------------
# CLI


def _log(message: str) -> None:
    print(message, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kafkalab.artifacts", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("assemble-kafka", "download and verify the locked jars, write the distribution tarball"),
        ("relock", "developers only: resolve the jars with mvn and (re)write the lock file"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--version", required=True, help="Kafka version, e.g. 4.3.1")
        cmd.add_argument("--scala", default="2.13", help="Scala binary version (default 2.13)")
        cmd.add_argument(
            "--repository",
            help=f"Maven repository URL or directory (default ${REPOSITORY_ENV} or {DEFAULT_REPOSITORY})",
        )
        cmd.add_argument(
            "--lock-dir",
            type=Path,
            default=DEFAULT_LOCK_DIR,
            help="where lock files live (default artifacts/locks)",
        )
        if name == "assemble-kafka":
            cmd.add_argument(
                "--out",
                type=Path,
                default=DEFAULT_OUT_DIR,
                help="output and cache directory (default .cache/artifacts)",
            )
            cmd.add_argument("--jobs", type=int, default=DOWNLOAD_JOBS, help="parallel downloads")
    repo_help = f"Maven repository URL or directory (default ${REPOSITORY_ENV} or {DEFAULT_REPOSITORY})"
    fetch = sub.add_parser("fetch-jars", help="download and verify the jars of a jar lock into <out>/<lock name>/")
    fetch.add_argument("--lock", type=Path, required=True, help="e.g. artifacts/locks/spark-kafka-4.0.4.json")
    fetch.add_argument("--repository", help=repo_help)
    fetch.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR, help="cache directory (default .cache/artifacts)")
    fetch.add_argument("--jobs", type=int, default=DOWNLOAD_JOBS, help="parallel downloads")
    pin = sub.add_parser("lock-jars", help="developers only: pin the given jars by sha512 in a jar lock")
    pin.add_argument("--name", required=True, help="lock name, e.g. spark-kafka-4.0.4")
    pin.add_argument("coordinates", nargs="+", help="group:artifact:version[:classifier]")
    pin.add_argument("--repository", help=repo_help)
    pin.add_argument("--lock-dir", type=Path, default=DEFAULT_LOCK_DIR, help="default artifacts/locks")
    wheels = sub.add_parser("build-wheels", help="build hash-pinned requirements and local projects into wheels")
    wheels.add_argument("--requirements", type=Path, required=True, help="e.g. artifacts/locks/pyspark-4.0.4.txt")
    wheels.add_argument("--project", type=Path, action="append", default=[], help="a local project, e.g. spark")
    wheels.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR / "spark-wheels", help="wheel directory")
    return parser


def _spark_command(args: argparse.Namespace) -> int:
    """fetch-jars, lock-jars and build-wheels."""
    started = time.monotonic()
    if args.command == "build-wheels":
        built = build_wheels(args.requirements, args.project, args.out, _log)
        _log(
            f"{built.directory}: {', '.join(built.wheels)} ({built.built} built, {built.reused} unchanged, "
            f"{time.monotonic() - started:.1f}s)"
        )
        return EXIT_OK
    repository = resolve_repository(args.repository, os.environ)
    opener = build_opener(ssl_context(os.environ))
    if args.command == "lock-jars":
        _log(f"wrote {lock_jars(args.name, args.coordinates, repository, args.lock_dir, opener, _log)}")
        return EXIT_OK
    result = fetch_jars(args.lock, repository, args.out, opener, _log, args.jobs)
    _log(
        f"{result.directory}: {len(result.files)} jars verified against {args.lock} ({result.downloaded} "
        f"downloaded, {result.cached} from cache, {time.monotonic() - started:.1f}s)"
    )
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    if args.command in ("fetch-jars", "lock-jars", "build-wheels"):
        try:
            return _spark_command(args)
        except ArtifactError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            return 130
    try:
        repository = resolve_repository(args.repository, os.environ)
        opener = build_opener(ssl_context(os.environ))
        if args.command == "relock":
            path = relock(args.version, args.scala, repository, args.lock_dir, opener, _log)
            _log(f"wrote {path}")
            return EXIT_OK
        lock_file = lock_path(args.lock_dir, args.scala, args.version)
        result = assemble(lock_file, repository, args.out, opener, _log, args.jobs)
    except ArtifactError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    elapsed = time.monotonic() - started
    if result.reused:
        _log(f"up to date: {result.tarball} (sha512 {result.sha512[:16]}…, {elapsed:.1f}s)")
    else:
        _log(f"jars: {result.downloaded} downloaded, {result.cached} from cache, all verified against the lock")
        _log(f"wrote {result.tarball} ({result.size / 1e6:.1f} MB) and .sha512 in {elapsed:.1f}s")
        _log(f"sha512 {result.sha512}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
