"""Assemble a Kafka binary distribution from a lock: plan its files, render them, write the tarball.

The bin/ wrappers, logging configs and README come from the templates under kafkalab/distribution/
(package data); the jars are fetched and verified into the Maven cache first. A tarball built from the
same lock and templates is reused, so a second run is a no-op.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import urllib.request
from collections.abc import Callable, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from kafkalab.artifacts.checksums import sha512_file, sha512_line
from kafkalab.artifacts.errors import ArtifactError
from kafkalab.artifacts.lock import Artifact, Lock, load_lock
from kafkalab.artifacts.logging_flavours import LOGGING_FLAVOURS
from kafkalab.artifacts.maven import DOWNLOAD_JOBS, fetch_all
from kafkalab.artifacts.tarball import DistEntry, write_tarball

# Bump when the layout or content rules of the tarball change: it is part of the no-op fingerprint.
ASSEMBLY_FORMAT = 1
_PLACEHOLDER_RE = re.compile(r"@@([A-Z0-9_]+)@@")
# The templates are package data of kafkalab itself (pyproject's package-data), one level above this package.
TEMPLATE_PACKAGE = "kafkalab"

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


@dataclasses.dataclass(frozen=True)
class AssembleResult:
    tarball: Path
    sha512: str
    size: int
    reused: bool
    downloaded: int
    cached: int


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
    base = root if root is not None else resources.files(TEMPLATE_PACKAGE).joinpath("distribution")
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
