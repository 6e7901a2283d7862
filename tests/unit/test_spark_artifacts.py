"""Spark's controller-side artifacts: the connector jar lock, fetch-jars, and build-wheels (no network)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafkalab.artifacts.cli import main
from kafkalab.artifacts.errors import EXIT_INTEGRITY, ArtifactError, ChecksumMismatchError
from kafkalab.artifacts.lock import jar_file_name, load_jar_lock, parse_jar_lock
from kafkalab.artifacts.maven import build_opener, ssl_context
from kafkalab.artifacts.spark import build_wheels, fetch_jars, lock_jars, read_requirements

ROOT = Path(__file__).resolve().parents[2]
JAR_LOCKS = sorted((ROOT / "artifacts" / "locks").glob("spark-kafka-*.json"))
REQUIREMENT_LOCKS = sorted((ROOT / "artifacts" / "locks").glob("pyspark-*.txt"))


def quiet(_: str) -> None:
    """Progress sink for tests."""


def jar_site(tmp_path: Path) -> tuple[Path, str]:
    """(jar lock, file:// repository) with two fake jars."""
    repo = tmp_path / "repo"
    entries = []
    for group, artifact, version in (("org.example", "alpha", "1.0"), ("org.example", "beta_2.13", "2.0")):
        file = jar_file_name(artifact, version, None)
        data = f"jar {artifact}".encode()
        path = repo / "org" / "example" / artifact / version / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        entries.append(
            {"group": group, "artifact": artifact, "version": version, "file": file,
             "sha512": hashlib.sha512(data).hexdigest(), "size": len(data)}
        )  # fmt: skip
    lock = tmp_path / "spark-kafka-9.9.9.json"
    lock.write_text(json.dumps({"schema": 1, "kind": "jars", "name": "spark-kafka-9.9.9", "artifacts": entries}))
    return lock, repo.as_uri()


@pytest.mark.parametrize("path", JAR_LOCKS, ids=lambda p: p.name)
def test_committed_jar_lock_pins_the_spark_kafka_connector(path: Path) -> None:
    lock = load_jar_lock(path)
    version = path.stem.removeprefix("spark-kafka-")
    names = {(a.artifact, a.version) for a in lock.artifacts}
    assert ("spark-sql-kafka-0-10_2.13", version) in names
    assert ("spark-token-provider-kafka-0-10_2.13", version) in names
    assert {a.artifact for a in lock.artifacts} >= {"kafka-clients", "commons-pool2"}


@pytest.mark.parametrize(
    "path", sorted((ROOT / "artifacts" / "locks").glob("jmx-exporter-*.json")), ids=lambda p: p.name
)
def test_committed_jmx_exporter_lock_pins_the_one_agent_jar_by_sha512(path: Path) -> None:
    lock = load_jar_lock(path)
    version = path.stem.removeprefix("jmx-exporter-")
    assert [(a.group, a.artifact, a.version) for a in lock.artifacts] == [
        ("io.prometheus.jmx", "jmx_prometheus_javaagent", version)
    ]
    assert len(lock.artifacts[0].sha512) == 128


def test_committed_lag_exporter_lock_pins_the_controllers_kafka_python_by_hash() -> None:
    pins = dict(read_requirements(ROOT / "artifacts" / "locks" / "lag-exporter.txt"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert list(pins) == ["kafka-python"]
    assert f'"kafka-python=={pins["kafka-python"]}"' in pyproject


@pytest.mark.parametrize("path", REQUIREMENT_LOCKS, ids=lambda p: p.name)
def test_committed_pyspark_lock_pins_pyspark_and_py4j_by_hash(path: Path) -> None:
    pins = dict(read_requirements(path))
    assert pins["pyspark"] == path.stem.removeprefix("pyspark-")
    assert "py4j" in pins
    assert JAR_LOCKS and any(p.stem == f"spark-kafka-{pins['pyspark']}" for p in JAR_LOCKS), "no connector lock"


def test_a_kafka_distribution_lock_is_not_a_jar_lock() -> None:
    with pytest.raises(ArtifactError, match="'kind' must be 'jars'"):
        parse_jar_lock({"schema": 1, "name": "x", "artifacts": []})


def test_fetch_jars_lays_out_exactly_the_locked_jars(tmp_path: Path) -> None:
    lock, repo = jar_site(tmp_path)
    out = tmp_path / "out"
    (out / "spark-kafka-9.9.9").mkdir(parents=True)
    (out / "spark-kafka-9.9.9" / "stale.jar").write_bytes(b"old")
    result = fetch_jars(lock, repo, out, build_opener(ssl_context({})), quiet, jobs=2)
    files = sorted(p.name for p in result.directory.iterdir())
    assert files == ["SHA512SUMS", "alpha-1.0.jar", "beta_2.13-2.0.jar"]
    assert (result.downloaded, result.cached) == (2, 0)
    again = fetch_jars(lock, repo, out, build_opener(ssl_context({})), quiet, jobs=2)
    assert (again.downloaded, again.cached) == (0, 2)


def test_fetch_jars_refuses_a_jar_whose_sha512_differs(tmp_path: Path) -> None:
    lock, repo = jar_site(tmp_path)
    (tmp_path / "repo/org/example/alpha/1.0/alpha-1.0.jar").write_bytes(b"tampered")
    with pytest.raises(ChecksumMismatchError, match=r"alpha-1\.0\.jar"):
        fetch_jars(lock, repo, tmp_path / "out", build_opener(ssl_context({})), quiet, jobs=1)
    assert not (tmp_path / "out/spark-kafka-9.9.9/alpha-1.0.jar").exists()


def test_requirements_without_hashes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "req.txt"
    path.write_text("pyspark==4.0.0\n")
    with pytest.raises(ArtifactError, match=r"--hash=sha256"):
        read_requirements(path)


def fake_pip(calls: list[list[str]]) -> Callable[[Sequence[str], Callable[[str], None]], None]:
    """Writes the wheels `pip wheel` would, so build_wheels' bookkeeping is tested without pip."""

    def run(args: Sequence[str], log: Callable[[str], None]) -> None:
        calls.append(list(args))
        out = Path(args[args.index("-w") + 1])
        if "--require-hashes" in args:
            (out / "pyspark-4.0.0-py2.py3-none-any.whl").write_bytes(b"pyspark")
            (out / "py4j-0.10.9.9-py2.py3-none-any.whl").write_bytes(b"py4j")
        else:
            (out / "kafkalab_spark-0.1.0-py3-none-any.whl").write_bytes(b"job")

    return run


def test_build_wheels_builds_pins_once_and_projects_every_time(tmp_path: Path) -> None:
    req = tmp_path / "pyspark.txt"
    req.write_text(f"pyspark==4.0.0 --hash=sha256:{'a' * 64}\npy4j==0.10.9.9 --hash=sha256:{'b' * 64}\n")
    project = tmp_path / "spark"
    project.mkdir()
    calls: list[list[str]] = []
    out = tmp_path / "wheels"
    first = build_wheels(req, [project], out, quiet, runner=fake_pip(calls))
    assert first.wheels == (
        "kafkalab_spark-0.1.0-py3-none-any.whl",
        "py4j-0.10.9.9-py2.py3-none-any.whl",
        "pyspark-4.0.0-py2.py3-none-any.whl",
    )
    manifest = (out / "SHA512SUMS").read_text().splitlines()
    assert [line.split()[1] for line in manifest] == list(first.wheels)
    second = build_wheels(req, [project], out, quiet, runner=fake_pip(calls))
    assert (second.built, second.reused) == (0, 3)
    assert sum("--require-hashes" in c for c in calls) == 1


def test_cli_fetch_jars_reports_integrity_errors_with_exit_3(tmp_path: Path, capsys: Any) -> None:
    lock, repo = jar_site(tmp_path)
    (tmp_path / "repo/org/example/alpha/1.0/alpha-1.0.jar").write_bytes(b"tampered")
    code = main(["fetch-jars", "--lock", str(lock), "--repository", repo, "--out", str(tmp_path / "out")])
    assert code == EXIT_INTEGRITY
    assert "checksum mismatch" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ["sha512", "sha1"])
def test_lock_jars_pins_each_jar_checked_against_the_published_checksum(tmp_path: Path, algorithm: str) -> None:
    _, repo = jar_site(tmp_path)
    for jar in (tmp_path / "repo").rglob("*.jar"):
        digest = hashlib.new(algorithm, jar.read_bytes()).hexdigest()
        jar.with_name(f"{jar.name}.{algorithm}").write_text(f"{digest}  {jar.name}\n")
    coordinates = ["org.example:beta_2.13:2.0", "org.example:alpha:1.0"]
    path = lock_jars("spark-kafka-9.9.9", coordinates, repo, tmp_path / "locks", build_opener(ssl_context({})), quiet)
    lock = load_jar_lock(path)
    assert [a.file for a in lock.artifacts] == ["alpha-1.0.jar", "beta_2.13-2.0.jar"]
    assert lock.artifacts[0].sha512 == hashlib.sha512(b"jar alpha").hexdigest()
    assert lock.artifacts[0].size == len(b"jar alpha")


def test_lock_jars_refuses_a_jar_that_differs_from_the_published_checksum(tmp_path: Path) -> None:
    _, repo = jar_site(tmp_path)
    jar = tmp_path / "repo/org/example/alpha/1.0/alpha-1.0.jar"
    jar.with_name("alpha-1.0.jar.sha1").write_text(hashlib.sha1(b"what was published").hexdigest() + "\n")
    with pytest.raises(ChecksumMismatchError, match=r"alpha-1\.0\.jar: sha1 .* differs from the repository's"):
        lock_jars("x", ["org.example:alpha:1.0"], repo, tmp_path / "locks", build_opener(ssl_context({})), quiet)
    assert not (tmp_path / "locks" / "x.json").exists()


@pytest.mark.parametrize(
    "path", sorted((ROOT / "artifacts" / "locks").glob("apicurio-registry-*.json")), ids=lambda p: p.name
)
def test_committed_registry_lock_pins_apicurios_runnable_distribution_by_sha512(path: Path) -> None:
    lock = load_jar_lock(path)
    version = path.stem.removeprefix("apicurio-registry-")
    (art,) = lock.artifacts
    assert (art.group, art.artifact, art.version, art.classifier, art.extension) == (
        "io.apicurio", "apicurio-registry-app", version, "all", "tar.gz"
    )  # fmt: skip
    assert art.file == f"apicurio-registry-app-{version}-all.tar.gz"
    assert art.coordinate == f"io.apicurio:apicurio-registry-app:{version}:all@tar.gz"


def test_lock_jars_pins_a_packaged_archive_and_fetch_jars_lays_it_out(tmp_path: Path) -> None:
    data = b"a distribution"
    archive = tmp_path / "repo/org/example/app/1.0/app-1.0-all.tar.gz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(data)
    archive.with_name(archive.name + ".sha512").write_text(hashlib.sha512(data).hexdigest())
    repo = (tmp_path / "repo").as_uri()
    opener = build_opener(ssl_context({}))
    path = lock_jars("app-1.0", ["org.example:app:1.0:all@tar.gz"], repo, tmp_path / "locks", opener, quiet)
    (art,) = load_jar_lock(path).artifacts
    assert (art.file, art.extension, art.classifier) == ("app-1.0-all.tar.gz", "tar.gz", "all")
    result = fetch_jars(path, repo, tmp_path / "out", opener, quiet)
    assert (result.directory / "app-1.0-all.tar.gz").read_bytes() == data


def test_an_unknown_packaging_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="not a Maven coordinate"):
        lock_jars("x", ["org.example:app:1.0@rpm"], "file:///nowhere", tmp_path, build_opener(ssl_context({})), quiet)
