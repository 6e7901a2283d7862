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

`topic-configs` runs a release's own LogConfig, KafkaConfig and FeatureCommand (with the controller's java)
and writes, beside the archive, the topic configs it documents (<stem>.topic-configs.json, for the
kafka_topics preflight), every broker config with its update mode (<stem>.broker-configs.json: read-only,
per-broker or cluster-wide, i.e. whether a change needs a restart) and the feature levels it finalizes by
default (<stem>.features.json, from version-mapping; none for 3.9.x, which has no version-mapping). Each
file is written only when missing.

    python -m kafkalab.artifacts topic-configs --archive .cache/artifacts/kafka_2.13-4.3.1.tgz
    python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/spark-kafka-4.0.4.json [--out DIR]
    python -m kafkalab.artifacts lock-jars --name spark-kafka-4.0.4 GROUP:ARTIFACT:VERSION ...
    python -m kafkalab.artifacts build-wheels --requirements artifacts/locks/pyspark-4.0.4.txt \
        --project spark --out .cache/artifacts/spark-wheels

Exit codes: 0 success, 1 usage or environment error, 3 integrity error (a jar's sha512 differs
from the lock), 4 no java on the controller (topic-configs).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kafkalab.artifacts.distribution import assemble
from kafkalab.artifacts.errors import EXIT_OK, ArtifactError
from kafkalab.artifacts.lock import lock_path
from kafkalab.artifacts.maven import (
    DEFAULT_REPOSITORY,
    DOWNLOAD_JOBS,
    REPOSITORY_ENV,
    build_opener,
    resolve_repository,
    ssl_context,
)
from kafkalab.artifacts.relock import relock
from kafkalab.artifacts.spark import build_wheels, fetch_jars, lock_jars
from kafkalab.artifacts.topic_configs import NoJavaError, write_broker_configs, write_features, write_topic_configs

# src/kafkalab/artifacts/cli.py: the repository root is three levels up.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_LOCK_DIR = PROJECT_ROOT / "artifacts" / "locks"
DEFAULT_OUT_DIR = PROJECT_ROOT / ".cache" / "artifacts"


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
    pin.add_argument("coordinates", nargs="+", help="group:artifact:version[:classifier][@tar.gz or @zip]")
    pin.add_argument("--repository", help=repo_help)
    pin.add_argument("--lock-dir", type=Path, default=DEFAULT_LOCK_DIR, help="default artifacts/locks")
    wheels = sub.add_parser("build-wheels", help="build hash-pinned requirements and local projects into wheels")
    wheels.add_argument("--requirements", type=Path, required=True, help="e.g. artifacts/locks/pyspark-4.0.4.txt")
    wheels.add_argument("--project", type=Path, action="append", default=[], help="a local project, e.g. spark")
    wheels.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR / "spark-wheels", help="wheel directory")
    configs = sub.add_parser(
        "topic-configs",
        help="write a release's topic configs, broker configs' update modes and default features beside its archive",
    )
    configs.add_argument("--archive", type=Path, required=True, help="e.g. .cache/artifacts/kafka_2.13-4.3.1.tgz")
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
    if args.command == "topic-configs":
        try:
            _log(f"wrote {write_topic_configs(args.archive)}")
            _log(f"wrote {write_broker_configs(args.archive)}")
            features = write_features(args.archive)
            if features is None:  # 3.9.x: ZooKeeper mode here, no features to finalize
                _log(f"note: {args.archive.name}: FeatureCommand has no version-mapping (before 4.0), no features file")
            else:
                _log(f"wrote {features}")
        except NoJavaError as exc:
            # Not fatal for a run: without the list, the broker checks the config names in the topics play.
            print(f"note: {exc} Until then the topics play leaves config names to the broker.", file=sys.stderr)
            return exc.exit_code
        except ArtifactError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        return EXIT_OK
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
