"""Controller-side artifacts: everything hosts get from the controller, verified against artifacts/locks.

Run it as `python -m kafkalab.artifacts <command>` (cli.py lists the commands and exit codes). Modules,
each with one job; import a name from the module that owns it:

- errors: ArtifactError, ChecksumMismatchError and the CLI's exit codes.
- logging_flavours: how a Kafka release line logs (log4j2 for 4.x, reload4j for 3.x).
- lock: the lock model (Artifact, Lock, JarLock): parse, validate, load and serialise lock files.
- checksums: sha512 of a file and the `<hex>  <name>` manifest line.
- maven: repository selection, TLS trust, downloads with retries, lock and published checksum checks.
- tarball: the deterministic .tgz writer.
- classfile: Java class-file parsing, to find each CLI tool's runnable main class.
- distribution: assembling a Kafka distribution (file plan, templates, bin/ wrappers, no-op reuse).
- relock: developers only, (re)writing a Kafka distribution lock with mvn.
- spark: the Spark hosts' connector jars (jar locks) and PySpark/project wheels.
- cli: the command line (assemble-kafka, relock, fetch-jars, lock-jars, build-wheels).
"""
