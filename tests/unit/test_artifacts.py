"""Unit tests for kafkalab.artifacts: lock parsing, checksum refusal, deterministic and idempotent assembly.

No network and no Kafka: a fake Maven repository of tiny jars lives in tmp_path and is served by file:// URLs.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import struct
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kafkalab.artifacts.classfile import has_public_static_main
from kafkalab.artifacts.cli import main
from kafkalab.artifacts.distribution import AssembleResult, render
from kafkalab.artifacts.distribution import assemble as assemble_distribution
from kafkalab.artifacts.errors import EXIT_INTEGRITY, ArtifactError, ChecksumMismatchError
from kafkalab.artifacts.lock import jar_file_name, load_lock, lock_path, parse_lock
from kafkalab.artifacts.maven import DEFAULT_REPOSITORY, REPOSITORY_ENV, build_opener, resolve_repository, ssl_context
from kafkalab.artifacts.relock import artifact_from_layout, relock_roots
from kafkalab.artifacts.tarball import FIXED_MTIME

ROOT = Path(__file__).resolve().parents[2]
# Kafka distribution locks; the jar locks (spark-kafka-*.json) have their own format and tests.
COMMITTED_LOCKS = sorted((ROOT / "artifacts" / "locks").glob("kafka_*.json"))
REQUIRED_TOOLS = {
    "kafka-server-start",
    "kafka-storage",
    "kafka-topics",
    "kafka-metadata-quorum",
    "kafka-consumer-groups",
    "kafka-configs",
    "kafka-console-producer",
    "kafka-console-consumer",
    "kafka-producer-perf-test",
    "kafka-consumer-perf-test",
    "kafka-broker-api-versions",
    "kafka-get-offsets",
    "kafka-features",
    "kafka-reassign-partitions",
    "kafka-leader-election",
    "kafka-log-dirs",
    "kafka-acls",
}


def quiet(_: str) -> None:
    """Progress sink for tests."""


def fake_jar(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", (1980, 1, 1, 0, 0, 0)), f"Name: {name}\n")
    return buffer.getvalue()


FAKE_COORDINATES = [
    ("org.apache.kafka", "kafka_2.13", "9.9.9", None),
    ("org.apache.kafka", "kafka-tools", "9.9.9", None),
    ("org.apache.logging.log4j", "log4j-core", "2.99.0", None),
    ("com.github.luben", "zstd-jni", "1.5.6", "linux_amd64"),
]


def lock_document(repo: Path) -> dict[str, Any]:
    """Write fake jars into repo (Maven layout) and return a lock that pins them."""
    entries = []
    for group, artifact, version, classifier in FAKE_COORDINATES:
        file = jar_file_name(artifact, version, classifier)
        data = fake_jar(file)
        path = repo / "/".join([*group.split("."), artifact, version, file])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        entry: dict[str, Any] = {
            "group": group,
            "artifact": artifact,
            "version": version,
            "file": file,
            "sha512": hashlib.sha512(data).hexdigest(),
            "size": len(data),
        }
        if classifier:
            entry["classifier"] = classifier
        entries.append(entry)
    return {
        "schema": 1,
        "kafka_version": "9.9.9",
        "scala_version": "2.13",
        "logging": "log4j2",
        "tools": {"kafka-server-start": "kafka.Kafka", "kafka-topics": "org.apache.kafka.tools.TopicCommand"},
        "artifacts": entries,
    }


@pytest.fixture
def fake_site(tmp_path: Path) -> tuple[Path, str, Path]:
    """(lock file, file:// repository URL, repository dir) for a fake Kafka 9.9.9."""
    repo = tmp_path / "repo"
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir()
    lock_file = lock_path(lock_dir, "2.13", "9.9.9")
    lock_file.write_text(json.dumps(lock_document(repo), indent=2) + "\n")
    return lock_file, repo.as_uri(), repo


def opener() -> Any:
    return build_opener(ssl_context({}))


def assemble(lock_file: Path, repository: str, out: Path) -> AssembleResult:
    return assemble_distribution(lock_file, repository, out, opener(), quiet, jobs=2)


# --- lock parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", COMMITTED_LOCKS, ids=lambda p: p.name)
def test_committed_lock_parses_and_names_every_required_tool(path: Path) -> None:
    lock = load_lock(path)
    assert path.name == f"{lock.dist_name}.json"
    assert set(lock.tools) >= REQUIRED_TOOLS
    files = {art.file for art in lock.artifacts}
    assert f"kafka_{lock.scala_version}-{lock.kafka_version}.jar" in files
    assert f"kafka-tools-{lock.kafka_version}.jar" in files
    if lock.logging == "log4j2":
        assert {"log4j-api", "log4j-core", "log4j-slf4j-impl"} <= {art.artifact for art in lock.artifacts}
    else:
        assert {"zookeeper-server-start", "zookeeper-shell"} <= set(lock.tools)
        assert {"slf4j-reload4j", "reload4j", "zookeeper", "zookeeper-jute"} <= {a.artifact for a in lock.artifacts}


def test_committed_locks_exist_for_kafka_4_and_3_9() -> None:
    names = {p.name for p in COMMITTED_LOCKS}
    assert any(n.startswith("kafka_2.13-4.") for n in names)
    assert any(n.startswith("kafka_2.13-3.9.") for n in names)


def test_parse_lock_reads_coordinates_and_classifier(tmp_path: Path) -> None:
    lock = parse_lock(lock_document(tmp_path))
    zstd = next(art for art in lock.artifacts if art.artifact == "zstd-jni")
    assert zstd.classifier == "linux_amd64"
    assert zstd.coordinate == "com.github.luben:zstd-jni:1.5.6:linux_amd64"
    assert zstd.repository_path == "com/github/luben/zstd-jni/1.5.6/zstd-jni-1.5.6-linux_amd64.jar"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schema=2), "unsupported lock schema"),
        (lambda d: d.update(logging="logback"), "logging must be one of"),
        (lambda d: d["tools"].pop("kafka-server-start"), "kafka-server-start"),
        (lambda d: d["tools"].update({"kafka-bad": "not a class"}), "bad Java class name"),
        (lambda d: d["artifacts"][0].update(sha512="abc"), "128 lowercase hex"),
        (lambda d: d["artifacts"][0].update(file="../evil.jar"), "file must be a plain .jar"),
        (lambda d: d["artifacts"][0].update(file="other-9.9.9.jar"), "does not match its coordinates"),
        (lambda d: d["artifacts"].append(dict(d["artifacts"][0])), "share the file name"),
        (lambda d: d.update(artifacts=[]), "artifacts is empty"),
    ],
    ids=[
        "schema",
        "logging",
        "no-server-tool",
        "bad-class",
        "short-sha",
        "path-in-file",
        "file-vs-coords",
        "dup",
        "empty",
    ],
)
def test_parse_lock_rejects_invalid_lock(tmp_path: Path, mutate: Any, message: str) -> None:
    doc = lock_document(tmp_path)
    mutate(doc)
    with pytest.raises(ArtifactError, match=message):
        parse_lock(doc)


def test_missing_lock_tells_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="relock"):
        load_lock(tmp_path / "kafka_2.13-0.0.1.json")


def test_artifact_from_layout_splits_group_version_and_classifier() -> None:
    art = artifact_from_layout(
        "io/netty/netty-transport-native-epoll/4.1.1/netty-transport-native-epoll-4.1.1-linux-x86_64.jar",
        "0" * 128,
        5,
    )
    assert (art.group, art.artifact, art.version, art.classifier) == (
        "io.netty",
        "netty-transport-native-epoll",
        "4.1.1",
        "linux-x86_64",
    )


# --- repository selection and small pure helpers ------------------------------------------------------


def test_repository_precedence_is_cli_then_env_then_central(tmp_path: Path) -> None:
    env = {REPOSITORY_ENV: "https://mirror.example/maven2/"}
    assert resolve_repository(None, {}) == DEFAULT_REPOSITORY
    assert resolve_repository(None, env) == "https://mirror.example/maven2"
    assert resolve_repository(str(tmp_path), env) == tmp_path.resolve().as_uri()
    with pytest.raises(ArtifactError, match="unsupported repository"):
        resolve_repository("ftp://example/", {})


def test_render_refuses_unknown_placeholder() -> None:
    assert render("a @@X@@ b", {"X": "1"}) == "a 1 b"
    with pytest.raises(ArtifactError, match="@@Y@@"):
        render("@@Y@@", {"X": "1"})


@pytest.mark.parametrize(("slf4j", "binding"), [("1.7.36", "log4j-slf4j-impl"), ("2.0.17", "log4j-slf4j2-impl")])
def test_relock_picks_the_log4j2_binding_matching_slf4j_major(slf4j: str, binding: str) -> None:
    roots = relock_roots("4.3.1", "2.13", slf4j, "2.25.4")
    assert ("org.apache.logging.log4j", binding, "2.25.4") in roots


def test_relock_uses_reload4j_for_kafka_3() -> None:
    artifacts = {a for _, a, _ in relock_roots("3.9.2", "2.13", "1.7.36", None)}
    assert {"slf4j-reload4j", "reload4j"} <= artifacts


def minimal_class(method_flags: int, method_name: str = "main") -> bytes:
    def utf8(text: str) -> bytes:
        return b"\x01" + struct.pack(">H", len(text)) + text.encode()

    pool = [utf8("Tool"), b"\x07\x00\x01", utf8("java/lang/Object"), b"\x07\x00\x03", utf8(method_name)]
    pool.append(utf8("([Ljava/lang/String;)V"))
    body = struct.pack(">HHHHH", 0x0021, 2, 4, 0, 0)  # flags, this, super, no interfaces, no fields
    body += struct.pack(">HHHHH", 1, method_flags, 5, 6, 0) + struct.pack(">H", 0)
    return b"\xca\xfe\xba\xbe" + struct.pack(">HHH", 0, 61, len(pool) + 1) + b"".join(pool) + body


@pytest.mark.parametrize(
    ("flags", "name", "expected"),
    [(0x0009, "main", True), (0x0001, "main", False), (0x0009, "run", False)],
    ids=["public-static-main", "instance-main", "other-method"],
)
def test_has_public_static_main_reads_class_file(flags: int, name: str, expected: bool) -> None:
    assert has_public_static_main(minimal_class(flags, name)) is expected


# --- assembly ---------------------------------------------------------------------------------------


def test_assemble_refuses_jar_whose_sha512_differs_from_lock(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, repo = fake_site
    tampered = repo / "org/apache/kafka/kafka-tools/9.9.9/kafka-tools-9.9.9.jar"
    expected = hashlib.sha512(tampered.read_bytes()).hexdigest()
    tampered.write_bytes(b"not the jar the lock pins")
    actual = hashlib.sha512(tampered.read_bytes()).hexdigest()
    out = tmp_path / "out"

    with pytest.raises(ChecksumMismatchError) as excinfo:
        assemble(lock_file, repository, out)

    message = str(excinfo.value)
    assert "kafka-tools-9.9.9.jar" in message
    assert expected in message and actual in message
    assert "What to do" in message
    assert not (out / "kafka_2.13-9.9.9.tgz").exists()
    assert not (out / "maven/org/apache/kafka/kafka-tools/9.9.9/kafka-tools-9.9.9.jar").exists()


def test_cli_exits_nonzero_on_checksum_mismatch(
    fake_site: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_file, repository, repo = fake_site
    (repo / "org/apache/kafka/kafka_2.13/9.9.9/kafka_2.13-9.9.9.jar").write_bytes(b"tampered")
    argv = ["assemble-kafka", "--version", "9.9.9", "--repository", repository]
    argv += ["--lock-dir", str(lock_file.parent), "--out", str(tmp_path / "out")]

    assert main(argv) == EXIT_INTEGRITY
    assert "checksum mismatch for kafka_2.13-9.9.9.jar" in capsys.readouterr().err


def test_two_builds_give_identical_tarballs(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, _ = fake_site
    first = assemble(lock_file, repository, tmp_path / "one")
    second = assemble(lock_file, repository, tmp_path / "two")

    assert first.sha512 == second.sha512
    assert first.tarball.read_bytes() == second.tarball.read_bytes()
    sha_line = (tmp_path / "one" / "kafka_2.13-9.9.9.tgz.sha512").read_text()
    assert sha_line == f"{first.sha512}  kafka_2.13-9.9.9.tgz\n"
    assert first.sha512 == hashlib.sha512(first.tarball.read_bytes()).hexdigest()


def test_tarball_metadata_is_fixed(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, _ = fake_site
    result = assemble(lock_file, repository, tmp_path / "out")
    raw = result.tarball.read_bytes()
    assert raw[4:8] == b"\0\0\0\0"  # gzip header mtime
    with tarfile.open(result.tarball) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(FIXED_MTIME, 0, 0, "root", "root")}


def test_tarball_mirrors_the_official_layout(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, _ = fake_site
    result = assemble(lock_file, repository, tmp_path / "out")
    with tarfile.open(result.tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
        topics = tar.extractfile("kafka_2.13-9.9.9/bin/kafka-topics.sh")
        assert topics is not None
        topics_script = topics.read().decode()
    top = "kafka_2.13-9.9.9"
    for script in ("kafka-run-class.sh", "kafka-server-start.sh", "kafka-topics.sh"):
        assert members[f"{top}/bin/{script}"].mode == 0o755
    assert f"{top}/config/log4j2.xml" in members
    assert f"{top}/config/tools-log4j2.xml" in members
    assert f"{top}/README.assembled" in members
    assert f"{top}/libs/zstd-jni-1.5.6-linux_amd64.jar" in members
    assert "org.apache.kafka.tools.TopicCommand" in topics_script
    assert "@@" not in topics_script


def test_rerun_with_matching_tarball_is_a_noop(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, repo = fake_site
    out = tmp_path / "out"
    first = assemble(lock_file, repository, out)
    mtime = first.tarball.stat().st_mtime_ns
    shutil.rmtree(repo)  # a no-op must not need the repository at all

    again = assemble(lock_file, repository, out)

    assert again.reused
    assert again.sha512 == first.sha512
    assert again.tarball.stat().st_mtime_ns == mtime


def test_rebuild_uses_verified_cache_instead_of_downloading(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, repo = fake_site
    out = tmp_path / "out"
    first = assemble(lock_file, repository, out)
    first.tarball.unlink()
    shutil.rmtree(repo)

    again = assemble(lock_file, repository, out)

    assert (again.reused, again.downloaded, again.cached) == (False, 0, len(FAKE_COORDINATES))
    assert again.sha512 == first.sha512


def test_corrupted_tarball_is_rebuilt_not_reused(fake_site: tuple[Path, str, Path], tmp_path: Path) -> None:
    lock_file, repository, _ = fake_site
    out = tmp_path / "out"
    first = assemble(lock_file, repository, out)
    first.tarball.write_bytes(gzip.compress(b"garbage", mtime=0))

    again = assemble(lock_file, repository, out)

    assert not again.reused
    assert again.sha512 == first.sha512
