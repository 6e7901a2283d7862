"""The lock model: pinned jars (Artifact), Kafka distribution locks (Lock) and flat jar locks (JarLock).

Parses and validates lock files (naming the first problem), loads them, and serialises them with stable
ordering; artifact_to_json writes one lock entry. No I/O beyond reading a lock file.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkalab.artifacts.errors import ArtifactError
from kafkalab.artifacts.logging_flavours import LOGGING_FLAVOURS

LOCK_SCHEMA = 1
JAR_LOCK_KIND = "jars"

_SHA512_RE = re.compile(r"^[0-9a-f]{128}$")
_TOOL_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_CLASS_NAME_RE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$")
# A jar, or a packaged distribution (Apicurio Registry's runnable tar.gz), as Maven names them.
EXTENSIONS = ("jar", "tar.gz", "zip")
_JAR_NAME_RE = re.compile(r"^[\w.+-]+\.(jar|tar\.gz|zip)$")
_LOCK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_COORDINATE_RE = re.compile(r"^[\w.-]+:[\w.-]+:[\w.+-]+(:[\w.-]+)?(@(jar|tar\.gz|zip))?$")


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
    # What Maven packaged: a jar, or a distribution archive (tar.gz, zip).
    extension: str = "jar"

    @property
    def coordinate(self) -> str:
        parts = [self.group, self.artifact, self.version] + ([self.classifier] if self.classifier else [])
        return ":".join(parts) + ("" if self.extension == "jar" else f"@{self.extension}")

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


def dist_name(scala_version: str, kafka_version: str) -> str:
    return f"kafka_{scala_version}-{kafka_version}"


def lock_path(lock_dir: Path, scala_version: str, kafka_version: str) -> Path:
    return lock_dir / f"{dist_name(scala_version, kafka_version)}.json"


def jar_file_name(artifact: str, version: str, classifier: str | None, extension: str = "jar") -> str:
    return f"{artifact}-{version}-{classifier}.{extension}" if classifier else f"{artifact}-{version}.{extension}"


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
    extension = data.get("extension", "jar")
    if extension not in EXTENSIONS:
        raise ArtifactError(f"{where}: 'extension' must be one of {', '.join(EXTENSIONS)} or absent, got {extension!r}")
    size = int(str(_require(data, "size", int, where)))
    if not _SHA512_RE.match(text["sha512"]):
        raise ArtifactError(f"{where}: sha512 must be 128 lowercase hex digits, got {text['sha512']!r}")
    if not _JAR_NAME_RE.match(text["file"]):
        raise ArtifactError(f"{where}: file must be a plain .jar (or .tar.gz, .zip) file name, got {text['file']!r}")
    expected = jar_file_name(text["artifact"], text["version"], classifier, extension)
    if text["file"] != expected:
        raise ArtifactError(f"{where}: file {text['file']!r} does not match its coordinates (expected {expected!r})")
    return Artifact(
        text["group"], text["artifact"], text["version"], classifier, text["file"], text["sha512"], size, extension
    )


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
    if art.extension != "jar":
        entry["extension"] = art.extension
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
    """group:artifact:version[:classifier] (a jar; parse_packaged_coordinate reads an @extension too)"""
    group, artifact, version, classifier, extension = parse_packaged_coordinate(text)
    if extension != "jar":
        raise ArtifactError(f"not a jar's Maven coordinate: {text!r} (expected group:artifact:version[:classifier])")
    return group, artifact, version, classifier


def parse_packaged_coordinate(text: str) -> tuple[str, str, str, str | None, str]:
    """group:artifact:version[:classifier][@extension], e.g. io.apicurio:apicurio-registry-app:3.0.9:all@tar.gz"""
    if not _COORDINATE_RE.match(text):
        raise ArtifactError(
            f"not a Maven coordinate: {text!r} (expected group:artifact:version[:classifier][@jar|@tar.gz|@zip])"
        )
    text, _at, extension = text.partition("@")
    parts = text.split(":")
    return parts[0], parts[1], parts[2], (parts[3] if len(parts) == 4 else None), extension or "jar"
