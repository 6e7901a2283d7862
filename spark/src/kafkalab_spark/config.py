"""The job's settings, read from the TOML file the spark_consumer role renders (never from code).

Everything a deployment changes lives in that file; this module only parses and validates it, naming the
key at fault, so a wrong inventory value stops the job at start with a readable message.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTING_OFFSETS = ("earliest", "latest")
# Spark's interval syntax as the job uses it: "<n> <unit>" (e.g. "5 seconds", "1 minute").
_INTERVAL_RE = re.compile(r"^\d+ (millisecond|second|minute|hour)s?$")


class ConfigError(ValueError):
    """A setting is missing or invalid; the message names the key."""


@dataclass(frozen=True)
class AvroConfig:
    """The Avro archive ([avro]; kafkalab_spark.avro): topics whose values are in the registry's wire format,
    archived as typed columns, each record decoded with the schema its id names in the registry."""

    topics: tuple[str, ...]
    # The registry's Confluent-compatible API, one URL per instance (tried in order).
    registry_urls: tuple[str, ...]
    # PEM certificates that verify the registry's HTTPS ("": the system's).
    registry_ca: str
    output_path: str
    quarantine_path: str
    trigger_interval: str


@dataclass(frozen=True)
class JobConfig:
    app_name: str
    bootstrap_servers: str
    topics: tuple[str, ...]
    starting_offsets: str
    max_offsets_per_trigger: int  # 0: no limit
    fail_on_data_loss: bool
    trigger_interval: str
    window_duration: str
    watermark_delay: str
    output_path: str
    quarantine_path: str
    metrics_path: str
    checkpoint_path: str
    status_path: str
    kafka_options: Mapping[str, str] = field(default_factory=dict)
    # Spark tasks to split the input partitions into when there are fewer of them than the archive's cores
    # (the Kafka source's minPartitions); 0: one task per Kafka partition.
    min_partitions: int = 0
    # Tasks (and so Parquet files) per batch of the archive and the quarantine when there are more input
    # partitions than the archive's cores (coalesced); 0: one per Kafka partition.
    write_partitions: int = 0
    # The quarantine's and the windowed counts' own triggers (empty: trigger_interval). Malformed records are
    # rare and the counts wait for the watermark anyway: fewer batches of theirs leave the cores to the archive.
    quarantine_trigger_interval: str = ""
    metrics_trigger_interval: str = ""
    # Where the driver serves the job's progress as Prometheus metrics ([metrics]; port 0: not served).
    metrics_bind: str = ""
    metrics_port: int = 0
    # The Avro archive (None: no [avro] table, or no topics in it).
    avro: AvroConfig | None = None

    def trigger_for(self, query: str) -> str:
        """The trigger interval of one of the job's queries."""
        own = {"quarantine": self.quarantine_trigger_interval, "metrics": self.metrics_trigger_interval}
        if self.avro is not None:
            own["avro"] = self.avro.trigger_interval
        return own.get(query) or self.trigger_interval

    def checkpoint_for(self, query: str) -> str:
        """Each streaming query keeps its own checkpoint under the job's checkpoint path."""
        return f"{self.checkpoint_path.rstrip('/')}/{query}"


def _get(data: Mapping[str, Any], dotted: str, kind: type) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ConfigError(f"missing setting {dotted}")
        node = node[part]
    if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
        raise ConfigError(f"{dotted} must be a {kind.__name__}, got {node!r}")
    return node


def _interval(data: Mapping[str, Any], dotted: str) -> str:
    value = str(_get(data, dotted, str))
    if not _INTERVAL_RE.match(value):
        raise ConfigError(f"{dotted} must look like '5 seconds' or '1 minute', got {value!r}")
    return value


def _port(data: Mapping[str, Any], dotted: str) -> int:
    """An optional TCP port setting: absent or 0 means off."""
    section, _, key = dotted.rpartition(".")
    value = (data.get(section) or {}).get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError(f"{dotted} must be a TCP port number (0: off), got {value!r}")
    return value


def parse(data: Mapping[str, Any]) -> JobConfig:
    """Validate a decoded config document."""
    topics = _get(data, "kafka.topics", list)
    if not topics or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"kafka.topics must be a non-empty list of topic names, got {topics!r}")
    starting = str(_get(data, "kafka.starting_offsets", str))
    if starting not in STARTING_OFFSETS:
        raise ConfigError(f"kafka.starting_offsets must be one of {STARTING_OFFSETS}, got {starting!r}")
    max_offsets = int(_get(data, "kafka.max_offsets_per_trigger", int))
    if max_offsets < 0:
        raise ConfigError(f"kafka.max_offsets_per_trigger must be >= 0 (0: no limit), got {max_offsets}")
    counts = {}
    for section, key in (("kafka", "min_partitions"), ("stream", "write_partitions")):
        value = data.get(section, {}).get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{section}.{key} must be an integer >= 0 (0: one task per partition), got {value!r}")
        counts[key] = value
    own_triggers = {
        key: _interval(data, f"stream.{key}") if key in data.get("stream", {}) else ""
        for key in ("quarantine_trigger_interval", "metrics_trigger_interval")
    }
    options = data.get("kafka", {}).get("options", {})
    if not isinstance(options, Mapping):
        raise ConfigError("kafka.options must be a table of consumer properties")
    bootstrap = str(_get(data, "kafka.bootstrap_servers", str))
    if not bootstrap:
        raise ConfigError("kafka.bootstrap_servers is empty")
    paths = {key: str(_get(data, f"paths.{key}", str)) for key in ("output", "quarantine", "metrics", "checkpoint")}
    metrics = data.get("metrics", {})
    if not isinstance(metrics, Mapping) or not isinstance(metrics.get("bind", ""), str):
        raise ConfigError(f"metrics must be a table with bind (an address) and port, got {metrics!r}")
    return JobConfig(
        app_name=str(_get(data, "app_name", str)),
        bootstrap_servers=bootstrap,
        topics=tuple(topics),
        starting_offsets=starting,
        max_offsets_per_trigger=max_offsets,
        fail_on_data_loss=bool(_get(data, "kafka.fail_on_data_loss", bool)),
        trigger_interval=_interval(data, "stream.trigger_interval"),
        window_duration=_interval(data, "stream.window_duration"),
        watermark_delay=_interval(data, "stream.watermark_delay"),
        output_path=paths["output"],
        quarantine_path=paths["quarantine"],
        metrics_path=paths["metrics"],
        checkpoint_path=paths["checkpoint"],
        status_path=str(_get(data, "paths.status", str)),
        kafka_options={str(k): str(v) for k, v in options.items()},
        min_partitions=counts["min_partitions"],
        write_partitions=counts["write_partitions"],
        metrics_bind=str(metrics.get("bind", "")),
        metrics_port=_port(data, "metrics.port"),
        avro=parse_avro(data),
        **own_triggers,
    )


def parse_avro(data: Mapping[str, Any]) -> AvroConfig | None:
    """Validate the [avro] table of a decoded config document (None when it is absent or lists no topics)."""
    table = data.get("avro")
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise ConfigError("avro must be a table")
    topics = _get(data, "avro.topics", list)
    if not topics:
        return None
    if not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"avro.topics must be a list of topic names, got {topics!r}")
    both = sorted(set(topics) & set(_get(data, "kafka.topics", list)))
    if both:
        raise ConfigError(f"avro.topics {both} are in kafka.topics too: a topic is archived as JSON/text or as Avro")
    urls = _get(data, "avro.registry_urls", list)
    if not urls or not all(isinstance(u, str) and u.startswith(("https://", "http://")) for u in urls):
        raise ConfigError(f"avro.registry_urls must be a non-empty list of http(s) URLs, got {urls!r}")
    ca = str(table.get("registry_ca", ""))
    if ca and "-----BEGIN CERTIFICATE-----" not in ca:
        raise ConfigError("avro.registry_ca must hold PEM certificates (or be empty: the system's)")
    return AvroConfig(
        topics=tuple(topics),
        registry_urls=tuple(urls),
        registry_ca=ca,
        output_path=str(_get(data, "avro.output", str)),
        quarantine_path=str(_get(data, "avro.quarantine", str)),
        trigger_interval=(
            _interval(data, "avro.trigger_interval")
            if "trigger_interval" in table
            else _interval(data, "stream.trigger_interval")
        ),
    )


REALTIME_MODES = ("realtime", "microbatch")
# Spark refuses a Real-time trigger shorter than spark.sql.streaming.realTimeMode.minBatchDuration (5 s).
_REALTIME_MIN_SECONDS = 5
_SECONDS = {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600}


@dataclass(frozen=True)
class RealtimeConfig:
    """The low-latency path ([realtime]): each record of the job's topics forwarded at once, enriched, to
    output_topic, or with its reason to dead_letter_topic. mode realtime runs Spark's Real-time Mode with
    batch_duration as its checkpoint interval; microbatch runs 1-second micro-batches (the fallback)."""

    mode: str
    batch_duration: str
    output_topic: str
    dead_letter_topic: str
    checkpoint_path: str
    status_path: str
    # Where the driver serves its progress as Prometheus metrics (the bind address is [metrics] bind; 0: off).
    metrics_port: int = 0


def seconds(interval: str) -> float:
    """A Spark interval ('5 seconds', '1 minute') in seconds."""
    number, unit = interval.split(" ")
    return int(number) * _SECONDS[unit.rstrip("s")]


def parse_realtime(data: Mapping[str, Any]) -> RealtimeConfig:
    """Validate the [realtime] table of a decoded config document."""
    mode = str(_get(data, "realtime.mode", str))
    if mode not in REALTIME_MODES:
        raise ConfigError(f"realtime.mode must be one of {REALTIME_MODES}, got {mode!r}")
    duration = _interval(data, "realtime.batch_duration")
    if mode == "realtime" and seconds(duration) < _REALTIME_MIN_SECONDS:
        raise ConfigError(
            f"realtime.batch_duration must be at least {_REALTIME_MIN_SECONDS} seconds in Real-time Mode "
            f"(it is the checkpoint interval, not the latency), got {duration!r}"
        )
    topics = {key: str(_get(data, f"realtime.{key}", str)) for key in ("output_topic", "dead_letter_topic")}
    for key, topic in topics.items():
        if not topic:
            raise ConfigError(f"realtime.{key} is empty")
        if topic in _get(data, "kafka.topics", list):
            raise ConfigError(f"realtime.{key} {topic!r} is one of kafka.topics: the job would read its own output")
    if topics["output_topic"] == topics["dead_letter_topic"]:
        raise ConfigError("realtime.output_topic and realtime.dead_letter_topic must differ")
    return RealtimeConfig(
        mode=mode,
        batch_duration=duration,
        output_topic=topics["output_topic"],
        dead_letter_topic=topics["dead_letter_topic"],
        checkpoint_path=str(_get(data, "realtime.checkpoint", str)),
        status_path=str(_get(data, "realtime.status", str)),
        metrics_port=_port(data, "realtime.metrics_port"),
    )


def read_document(path: str | Path) -> dict[str, Any]:
    try:
        with Path(path).open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load(path: str | Path) -> JobConfig:
    return parse(read_document(path))
