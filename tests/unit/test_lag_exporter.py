"""The lag exporter's output (src/kafkalab/lag_exporter.py) for the report collector's groups: the series and values
it serves, checked by Prometheus's own linter (`promtool check metrics`). Its live reading of a real cluster is
tests/cluster/test_monitoring.py's."""

from __future__ import annotations

import subprocess

from test_alert_rules import promtool

from kafkalab.lag_exporter import exposition

GROUPS = [
    {
        "group": 'load "a"',
        "partitions": [
            {"topic": "t", "partition": 0, "committed": 90, "log_end": 100, "lag": 10},
            {"topic": "t", "partition": 1, "committed": None, "log_end": 7, "lag": None},
        ],
        "total_lag": 10,
    },
    {"group": "b", "partitions": [{"topic": "t", "partition": 0, "committed": 100, "log_end": 100, "lag": 0}],
     "total_lag": 0},
]  # fmt: skip


def test_each_groups_lag_offset_and_log_end_is_a_series_and_promtool_accepts_the_page() -> None:
    text = exposition(GROUPS, 0.25, ok=True)
    lines = set(text.splitlines())
    assert 'kafka_consumergroup_lag{group="load \\"a\\"",topic="t",partition="0"} 10' in lines
    assert 'kafka_consumergroup_lag{group="b",topic="t",partition="0"} 0' in lines
    assert 'kafka_consumergroup_committed_offset{group="load \\"a\\"",topic="t",partition="0"} 90' in lines
    # A partition the group never committed has no lag and no committed offset, but its log end is known.
    assert not any('partition="1"' in line for line in lines if line.startswith("kafka_consumergroup_"))
    assert 'kafka_topic_partition_log_end_offset{topic="t",partition="1"} 7' in lines
    assert 'kafka_consumergroup_total_lag{group="load \\"a\\""} 10' in lines
    assert "kafka_lag_exporter_collect_ok 1" in lines
    check = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_cluster_that_did_not_answer_serves_no_lag_and_says_so() -> None:
    text = exposition([], 10.0, ok=False)
    assert "kafka_lag_exporter_collect_ok 0" in text.splitlines()
    assert not [line for line in text.splitlines() if line.startswith("kafka_consumergroup_lag{")]
