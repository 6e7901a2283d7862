"""Jars (Spark's Kafka connector) and wheels (PySpark, the Spark job) for hosts that cannot download anything.

lock_jars pins explicit coordinates in a jar lock; fetch_jars verifies a jar lock's jars into a flat
directory; build_wheels builds hash-pinned requirements and local projects. Each directory gets a
SHA512SUMS manifest that the roles verify before pushing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from kafkalab.artifacts.checksums import sha512_file, sha512_line
from kafkalab.artifacts.errors import ArtifactError
from kafkalab.artifacts.lock import (
    Artifact,
    JarLock,
    jar_file_name,
    jar_lock_to_json,
    load_jar_lock,
    parse_jar_lock,
    parse_packaged_coordinate,
)
from kafkalab.artifacts.maven import DOWNLOAD_JOBS, download, fetch_all, verify_published
from kafkalab.artifacts.tarball import FIXED_MTIME

_REQUIREMENT_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([\w.+!-]+)\s")
WHEEL_MANIFEST = "SHA512SUMS"
# Wheels are zip files: a fixed timestamp makes a rebuilt wheel of unchanged sources byte-identical, so
# the roles see no change and restart nothing.
WHEEL_SOURCE_DATE_EPOCH = str(FIXED_MTIME)


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


def lock_jars(
    name: str,
    coordinates: Sequence[str],
    repository: str,
    lock_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
) -> Path:
    """Pin exactly the given jars or packaged archives (`...:all@tar.gz`; no transitive resolution): each download is
    checked against the repository's published checksum, then its sha512 goes into <lock_dir>/<name>.json."""
    artifacts = []
    with tempfile.TemporaryDirectory(prefix="kafkalab-lock-jars-") as tmp_name:
        for text in sorted(coordinates):
            group, artifact, version, classifier, extension = parse_packaged_coordinate(text)
            file = jar_file_name(artifact, version, classifier, extension)
            relative = "/".join([*group.split("."), artifact, version, file])
            dest = Path(tmp_name) / file
            download(opener, f"{repository}/{relative}", dest)
            sha512 = verify_published(opener, repository, relative, dest)
            size = dest.stat().st_size
            artifacts.append(Artifact(group, artifact, version, classifier, file, sha512, size, extension))
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
