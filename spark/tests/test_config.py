"""The job's settings come from the rendered TOML file; bad values stop it with the key named."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from kafkalab_spark import config

GOOD: dict[str, Any] = {
    "app_name": "kafkalab-consumer",
    "kafka": {
        "bootstrap_servers": "10.0.0.1:9092,10.0.0.2:9092",
        "topics": ["events", "clicks"],
        "starting_offsets": "earliest",
        "max_offsets_per_trigger": 50000,
        "fail_on_data_loss": True,
        "options": {"security.protocol": "PLAINTEXT"},
    },
    "stream": {"trigger_interval": "5 seconds", "window_duration": "1 minute", "watermark_delay": "2 minutes"},
    "paths": {
        "output": "/data/out",
        "quarantine": "/data/quarantine",
        "metrics": "/data/metrics",
        "checkpoint": "/data/checkpoint/",
        "status": "/run/status.json",
    },
}

TOML = """
app_name = "kafkalab-consumer"
[kafka]
bootstrap_servers = "10.0.0.1:9092"
topics = ["events"]
starting_offsets = "latest"
max_offsets_per_trigger = 0
fail_on_data_loss = false
[stream]
trigger_interval = "10 seconds"
window_duration = "1 minute"
watermark_delay = "1 minute"
[paths]
output = "/o"
quarantine = "/q"
metrics = "/m"
checkpoint = "/c"
status = "/s.json"
"""


def test_a_complete_document_parses_into_settings() -> None:
    cfg = config.parse(GOOD)
    assert cfg.topics == ("events", "clicks")
    assert cfg.max_offsets_per_trigger == 50000
    assert cfg.kafka_options == {"security.protocol": "PLAINTEXT"}
    assert cfg.checkpoint_for("records") == "/data/checkpoint/records"


def test_the_rendered_toml_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text(TOML)
    cfg = config.load(path)
    assert (cfg.starting_offsets, cfg.max_offsets_per_trigger, cfg.fail_on_data_loss) == ("latest", 0, False)
    assert cfg.kafka_options == {}
    assert cfg.min_partitions == 0  # not in the file: one Spark task per Kafka partition


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("kafka", "topics", [], "kafka.topics must be a non-empty list"),
        ("kafka", "starting_offsets", "beginning", "kafka.starting_offsets must be one of"),
        ("kafka", "max_offsets_per_trigger", -1, "kafka.max_offsets_per_trigger must be >= 0"),
        ("kafka", "max_offsets_per_trigger", True, "kafka.max_offsets_per_trigger must be a int"),
        ("kafka", "bootstrap_servers", "", "kafka.bootstrap_servers is empty"),
        ("stream", "trigger_interval", "5s", "stream.trigger_interval must look like"),
        ("paths", "output", None, "missing setting paths.output"),
        ("kafka", "min_partitions", -2, "kafka.min_partitions must be an integer >= 0"),
        ("stream", "write_partitions", "two", "stream.write_partitions must be an integer >= 0"),
        ("stream", "metrics_trigger_interval", "30s", "stream.metrics_trigger_interval must look like"),
    ],
    ids=lambda v: str(v),
)
def test_bad_settings_are_refused_naming_the_key(section: str, key: str, value: Any, message: str) -> None:
    doc = copy.deepcopy(GOOD)
    if value is None:
        del doc[section][key]
    else:
        doc[section][key] = value
    with pytest.raises(config.ConfigError, match=message):
        config.parse(doc)


def test_a_file_that_is_not_toml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text("app_name = \n")
    with pytest.raises(config.ConfigError, match="not valid TOML"):
        config.load(path)


REALTIME = {
    "mode": "realtime",
    "batch_duration": "30 seconds",
    "output_topic": "events-realtime",
    "dead_letter_topic": "events-dead-letter",
    "checkpoint": "/data/checkpoint/realtime",
    "status": "/data/realtime-status.json",
}


def test_the_realtime_table_parses_into_settings() -> None:
    rt = config.parse_realtime({**GOOD, "realtime": REALTIME})
    assert (rt.mode, rt.batch_duration, rt.output_topic) == ("realtime", "30 seconds", "events-realtime")
    assert rt.dead_letter_topic == "events-dead-letter"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "continuous"}, "realtime.mode must be one of"),
        ({"batch_duration": "2 seconds"}, "at least 5 seconds in Real-time Mode"),
        ({"batch_duration": "soon"}, "realtime.batch_duration must look like"),
        ({"output_topic": "events"}, "is one of kafka.topics: the job would read its own output"),
        ({"dead_letter_topic": "events-realtime"}, "must differ"),
        ({"output_topic": ""}, "realtime.output_topic is empty"),
    ],
    ids=["mode", "too-short", "not-an-interval", "reads-own-output", "same-topics", "empty-topic"],
)
def test_a_bad_realtime_setting_names_its_key(change: dict[str, Any], message: str) -> None:
    with pytest.raises(config.ConfigError, match=message):
        config.parse_realtime({**GOOD, "realtime": {**REALTIME, **change}})


def test_microbatch_mode_may_use_short_batches() -> None:
    assert config.parse_realtime({**GOOD, "realtime": {**REALTIME, "mode": "microbatch", "batch_duration": "1 second"}})


def test_the_quarantine_and_the_counts_may_have_their_own_triggers() -> None:
    doc = copy.deepcopy(GOOD)
    assert config.parse(doc).trigger_for("metrics") == "5 seconds"  # none of their own: the archive's
    doc["stream"] |= {"quarantine_trigger_interval": "10 seconds", "metrics_trigger_interval": "30 seconds"}
    doc["stream"]["write_partitions"] = 2
    cfg = config.parse(doc)
    assert [cfg.trigger_for(q) for q in ("records", "quarantine", "metrics")] == [
        "5 seconds",
        "10 seconds",
        "30 seconds",
    ]
    assert cfg.write_partitions == 2


AVRO = {
    "topics": ["orders"],
    "registry_urls": ["https://10.0.0.5:8081/apis/ccompat/v7", "https://10.0.0.6:8081/apis/ccompat/v7"],
    "registry_ca": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    "output": "/data/avro",
    "quarantine": "/data/avro-quarantine",
}


def test_the_avro_archive_is_read_from_its_table() -> None:
    cfg = config.parse({**GOOD, "avro": AVRO})
    assert cfg.avro is not None
    assert (cfg.avro.topics, cfg.avro.output_path, cfg.avro.quarantine_path) == (
        ("orders",),
        "/data/avro",
        "/data/avro-quarantine",
    )
    # Without a trigger of its own, the archive's.
    assert cfg.trigger_for("avro") == "5 seconds"
    assert config.parse({**GOOD, "avro": {**AVRO, "trigger_interval": "2 seconds"}}).trigger_for("avro") == "2 seconds"
    assert config.parse(GOOD).avro is None
    assert config.parse({**GOOD, "avro": {**AVRO, "topics": []}}).avro is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"topics": ["events"]}, "avro.topics ['events'] are in kafka.topics too"),
        ({"registry_urls": []}, "avro.registry_urls must be a non-empty list"),
        ({"registry_urls": ["10.0.0.5:8081"]}, "avro.registry_urls must be a non-empty list"),
        ({"registry_ca": "not a certificate"}, "avro.registry_ca must hold PEM certificates"),
        ({"output": 3}, "avro.output must be a str"),
        ({"trigger_interval": "soon"}, "avro.trigger_interval must look like"),
    ],
)
def test_bad_avro_settings_name_the_key(change: dict[str, Any], message: str) -> None:
    with pytest.raises(config.ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        config.parse({**GOOD, "avro": {**AVRO, **change}})
