"""Avro topics -> Parquet with typed columns, schemas from the Schema Registry by the id in each record.

A producer that uses a registry (Confluent's serializers, or any client of the ccompat API) writes each value
in Confluent's wire format: a magic byte 0, the schema's id (4 bytes, big-endian), then the Avro binary encoding.
Spark's from_avro reads the Avro part only, with a schema given up front, so this module takes the frame apart,
asks the registry for the schema of each id it meets (cached: an id's schema never changes) and decodes each
record with its writer's schema into the latest version of the topic's subject (<topic>-value, as the
serializers' default TopicNameStrategy names it), Avro's schema resolution filling a field the writer did not
know with its default. A record written with a newer compatible version (a new optional field) brings a new id:
the latest version is looked up again and the new field becomes a column from that batch on, without a restart.

Output, per topic, one directory per micro-batch, read with Spark's mergeSchema (columns added later are null in
earlier batches):
    <output>/<topic>/batch=<id>/   topic, partition, offset, key, kafka_timestamp, schema_id, value (a struct of the
                                   record's typed fields), processed_at
    <quarantine>/batch=<id>/       the records that cannot be archived, with their raw bytes and the reason
Each directory is written under _staging/ (which Spark's readers skip) and renamed into place once complete: a
batch run again after a crash (same batch id, same offsets, Structured Streaming's promise) finds its directory
and writes nothing, or writes it again from scratch. So every record lands exactly once.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import shutil
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from kafkalab_spark.transforms import quarantine_rows

LOG = logging.getLogger("kafkalab_spark.avro")

MAGIC = b"\x00"
REASON_NULL_VALUE = "value is null (tombstone)"
REASON_NOT_FRAMED = "value is not in the registry's wire format (magic byte 0, then a 4-byte schema id)"


def reason_unknown_id(schema_id: int) -> str:
    return f"schema id {schema_id} is not in the registry"


def reason_not_avro(schema_id: int, schema_type: str) -> str:
    return f"schema id {schema_id} is a {schema_type} schema, not Avro"


class RegistryError(RuntimeError):
    """No registry instance answered: the batch fails, and the job (restarted by systemd) runs it again."""


class Registry:
    """A client of the registry's Confluent-compatible API (…/apis/ccompat/v7 on Apicurio), tried instance by
    instance. Schemas by id are cached for good; a subject's latest version is asked again when asked to."""

    def __init__(
        self,
        urls: Sequence[str],
        ca_pem: str = "",
        timeout_s: float = 10.0,
        not_found_retries: int = 3,
        retry_wait_s: float = 2.0,
    ) -> None:
        if not urls:
            raise ValueError("no registry URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
        self.timeout_s = timeout_s
        self.not_found_retries = not_found_retries
        self.retry_wait_s = retry_wait_s
        self.schemas: dict[int, tuple[str, str]] = {}  # id -> (schema type, schema text)
        self.lookups = 0

    def _get(self, path: str) -> Any:
        """The JSON of the first instance that answers; None when every one that answered said 404."""
        failures = []
        not_found = False
        for url in self.urls:
            self.lookups += 1
            try:
                with urllib.request.urlopen(url + path, timeout=self.timeout_s, context=self.context) as response:
                    return json.load(response)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    not_found = True
                    continue
                failures.append(f"{url}: HTTP {exc.code}")
            except (OSError, ValueError) as exc:
                failures.append(f"{url}: {exc}")
        if not_found:
            return None
        raise RegistryError(f"no registry instance answered GET {path}: {'; '.join(failures)}")

    def _get_found(self, path: str) -> Any:
        """As _get, but a 404 is asked again a few times: an instance that has just started may not have read
        the registry's journal up to a new schema yet, and a record quarantined for that would stay there."""
        for attempt in range(self.not_found_retries + 1):
            found = self._get(path)
            if found is not None or attempt == self.not_found_retries:
                return found
            time.sleep(self.retry_wait_s)
        return None

    def schema(self, schema_id: int) -> tuple[str, str] | None:
        """(type, schema text) of an id, or None when the registry does not know it."""
        if schema_id not in self.schemas:
            found = self._get_found(f"/schemas/ids/{schema_id}")
            if found is None:
                return None
            self.schemas[schema_id] = (str(found.get("schemaType") or "AVRO").upper(), str(found["schema"]))
        return self.schemas[schema_id]

    def latest(self, subject: str) -> tuple[int, str] | None:
        """(version, schema text) of a subject's latest version, or None when there is no such subject."""
        found = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest")
        if found is None:
            return None
        return int(found["version"]), str(found["schema"])


def framed(kafka_rows: DataFrame) -> DataFrame:
    """The Kafka source's rows with their frame taken apart: schema_id (null when the value is not framed) and the
    Avro payload after the 5-byte header; key as UTF-8 text (undecodable bytes replaced)."""
    value = F.col("value")
    is_framed = value.isNotNull() & (F.length(value) >= 5) & (F.substring(value, 1, 1) == F.lit(bytearray(MAGIC)))
    return kafka_rows.select(
        "topic",
        "partition",
        "offset",
        F.col("key").cast("string").alias("key"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("key_raw"),
        F.col("value").alias("value_raw"),
        F.when(is_framed, F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long").cast("int")).alias("schema_id"),
        F.when(is_framed, F.expr("substring(value, 6)")).alias("payload"),
    )


@dataclass
class Decoded:
    """What one batch decodes to: the typed rows of each topic, and the rows to quarantine with their reason."""

    records: dict[str, DataFrame] = field(default_factory=dict)
    quarantine: DataFrame | None = None


def decoded_ok(reader: str) -> Column:
    """Whether from_avro decoded the record. In PERMISSIVE mode a record that does not decode comes back as a
    struct whose every field is null (a null for a schema that is not a record): a record schema's value decoded
    when any field is not null. (A record whose every field is null holds no data: it is quarantined, bytes kept.)"""
    schema = json.loads(reader)
    value = F.col("value")
    if not isinstance(schema, dict) or schema.get("type") != "record" or not schema.get("fields"):
        return value.isNotNull()
    any_field = reduce(operator.or_, (value[str(item["name"])].isNotNull() for item in schema["fields"]))
    return value.isNotNull() & any_field


def decode(
    rows: DataFrame,
    present: Sequence[tuple[str, int]],
    writers: Mapping[int, tuple[str, str]],
    readers: Mapping[str, str],
) -> Decoded:
    """Decode framed() rows. present: the (topic, schema id) pairs in them; writers: the registry's (type, schema)
    of each id it knows; readers: the schema each topic is read into (absent: the writer's of its newest id)."""
    decoded = Decoded()
    problems: list[DataFrame] = [
        quarantine_rows(rows.where(F.col("value_raw").isNull()), F.lit(REASON_NULL_VALUE)),
        quarantine_rows(
            rows.where(F.col("value_raw").isNotNull() & F.col("schema_id").isNull()), F.lit(REASON_NOT_FRAMED)
        ),
    ]
    for topic in sorted({t for t, _ in present}):
        ids = sorted(i for t, i in present if t == topic)
        avro_ids = [i for i in ids if i in writers and writers[i][0] == "AVRO"]
        of_topic = rows.where(F.col("topic") == topic)
        for schema_id in ids:
            refused = (
                reason_unknown_id(schema_id)
                if schema_id not in writers
                else reason_not_avro(schema_id, writers[schema_id][0])
                if schema_id not in avro_ids
                else None
            )
            if refused:
                problems.append(quarantine_rows(of_topic.where(F.col("schema_id") == schema_id), F.lit(refused)))
        if not avro_ids:
            continue
        reader = readers.get(topic) or writers[avro_ids[-1]][1]
        parts = [
            of_topic.where(F.col("schema_id") == schema_id).withColumn(
                "value",
                from_avro(F.col("payload"), writers[schema_id][1], {"mode": "PERMISSIVE", "avroSchema": reader}),
            )
            for schema_id in avro_ids
        ]
        topic_rows = reduce(DataFrame.unionByName, parts)
        ok = decoded_ok(reader)
        decoded.records[topic] = topic_rows.where(ok).select(
            "topic",
            "partition",
            "offset",
            "key",
            "kafka_timestamp",
            "schema_id",
            "value",
            F.current_timestamp().alias("processed_at"),
        )
        problems.append(
            quarantine_rows(
                topic_rows.where(~ok),
                F.concat(
                    F.lit("value does not decode with its writer's schema (id "),
                    F.col("schema_id").cast("string"),
                    F.lit(f") into the {topic}-value schema the archive reads"),
                ),
            )
        )
    decoded.quarantine = reduce(DataFrame.unionByName, problems)
    return decoded


def write_once(frame: DataFrame, final: Path) -> bool:
    """Write a batch's rows to `final` unless an earlier run of the batch did: under <parent>/_staging first, then
    renamed into place (atomic on one filesystem). False when it was already there."""
    if final.exists():
        return False
    staging = final.parent / "_staging" / final.name
    if staging.exists():  # a run cut off before its rename: never committed, never read
        shutil.rmtree(staging)
    frame.write.mode("errorifexists").parquet(str(staging))
    final.parent.mkdir(parents=True, exist_ok=True)
    os.rename(staging, final)
    return True


class AvroArchive:
    """The avro query's foreachBatch function: decode, write each topic's rows and the quarantine, once."""

    def __init__(self, registry: Registry, output: str, quarantine: str, subject_suffix: str = "-value") -> None:
        self.registry = registry
        self.output = Path(output)
        self.quarantine = Path(quarantine)
        self.subject_suffix = subject_suffix
        self.readers: dict[str, tuple[int, str]] = {}  # topic -> (latest version, schema) at the last look

    def reader_schemas(self, topics: Sequence[str], new_ids: bool) -> dict[str, str]:
        """The schema each topic's records are read into: its subject's latest version, looked up again when the
        batch brings an id not seen before (a new version in use) or the topic is new to this process."""
        for topic in topics:
            if topic in self.readers and not new_ids:
                continue
            latest = self.registry.latest(topic + self.subject_suffix)
            if latest is None:
                self.readers.pop(topic, None)
                continue
            version, schema = latest
            if self.readers.get(topic, (None,))[0] != version:
                LOG.info("topic %s: reading into %s%s version %d", topic, topic, self.subject_suffix, version)
            self.readers[topic] = (version, schema)
        return {topic: schema for topic, (_, schema) in self.readers.items()}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = framed(batch).persist()
        try:
            present = [
                (str(r["topic"]), int(r["schema_id"]))
                for r in rows.where(F.col("schema_id").isNotNull()).select("topic", "schema_id").distinct().collect()
            ]
            new_ids = any(i not in self.registry.schemas for _, i in present)
            writers = {i: s for i in sorted({i for _, i in present}) if (s := self.registry.schema(i)) is not None}
            readers = self.reader_schemas(sorted({t for t, _ in present}), new_ids)
            decoded = decode(rows, present, writers, readers)
            for topic, frame in sorted(decoded.records.items()):
                write_once(frame, self.output / topic / f"batch={batch_id}")
            if decoded.quarantine is not None:
                problems = decoded.quarantine.persist()
                if problems.count():
                    write_once(problems, self.quarantine / f"batch={batch_id}")
                problems.unpersist()
        finally:
            rows.unpersist()


def read_batches(spark: Any, path: str) -> DataFrame | None:
    """The committed batch directories under path (a topic's archive, or the quarantine), every batch's columns
    merged (older batches read a column added later as null); None before the first batch."""
    if not Path(path).is_dir() or not any(p.name.startswith("batch=") for p in Path(path).iterdir()):
        return None
    return spark.read.option("mergeSchema", "true").parquet(path)  # type: ignore[no-any-return]
