"""The lag exporter's output (src/kafkalab/lag_exporter.py) for the report collector's groups: the series and values
it serves, checked by Prometheus's own linter (`promtool check metrics`), and a scrape that ends in time when the
cluster does not answer. Its live reading of a real cluster is
tests/cluster/test_monitoring.py's."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from typing import ClassVar

import pytest
from test_alert_rules import promtool

from kafkalab import report
from kafkalab.lag_exporter import Collector, exposition

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
    text = exposition(GROUPS, 0.25, ok=True, left_out=1)
    lines = set(text.splitlines())
    assert 'kafka_consumergroup_lag{group="load \\"a\\"",topic="t",partition="0"} 10' in lines
    assert 'kafka_consumergroup_lag{group="b",topic="t",partition="0"} 0' in lines
    assert 'kafka_consumergroup_committed_offset{group="load \\"a\\"",topic="t",partition="0"} 90' in lines
    # A partition the group never committed has no lag and no committed offset, but its log end is known.
    assert not any('partition="1"' in line for line in lines if line.startswith("kafka_consumergroup_"))
    assert 'kafka_topic_partition_log_end_offset{topic="t",partition="1"} 7' in lines
    assert 'kafka_consumergroup_total_lag{group="load \\"a\\""} 10' in lines
    assert "kafka_lag_exporter_collect_ok 1" in lines
    # One group or broker could not be read this time: the reading is partial and says so.
    assert "kafka_lag_exporter_left_out 1" in lines
    check = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_cluster_that_did_not_answer_serves_no_lag_and_says_so() -> None:
    text = exposition([], 10.0, ok=False)
    assert "kafka_lag_exporter_collect_ok 0" in text.splitlines()
    assert not [line for line in text.splitlines() if line.startswith("kafka_consumergroup_lag{")]


class _UnansweredAdmin:
    """An admin client whose calls wait for an answer that never comes, until the client is closed: what a request
    kafka-python never hears back about does to a reading (its blocking calls have no bound of their own)."""

    made: ClassVar[list[_UnansweredAdmin]] = []

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.released = threading.Event()
        _UnansweredAdmin.made.append(self)

    def describe_topics(self) -> list[dict[str, object]]:
        self.closed.wait()
        self.released.set()
        raise ConnectionError("closed while waiting")

    def close(self) -> None:
        self.closed.set()


def test_a_reading_that_never_hears_back_is_abandoned_its_client_closed_and_the_scrape_answers() -> None:
    _UnansweredAdmin.made.clear()
    collector = Collector("unused:9092", 300, new_admin=_UnansweredAdmin)
    began = time.monotonic()
    text = collector.scrape()
    took = time.monotonic() - began
    assert "kafka_lag_exporter_collect_ok 0" in text.splitlines()
    # Two attempts of 0.3 s each, a new client for the second: the scrape did not wait for either reading.
    assert len(_UnansweredAdmin.made) == 2, _UnansweredAdmin.made
    assert took < 5, f"the scrape waited {took:.1f} s"
    for admin in _UnansweredAdmin.made:
        assert admin.released.wait(5), "the abandoned reading still waits: its client was not closed"
    # The next scrape does not queue behind the abandoned readings: each reading makes a client of its own.
    collector.scrape()
    assert len(_UnansweredAdmin.made) == 4


def test_a_client_made_after_its_reading_was_abandoned_is_closed() -> None:
    made: ClassVar[list[_UnansweredAdmin]] = []

    def slow_admin() -> _UnansweredAdmin:
        time.sleep(0.5)  # longer than the reading may take
        made.append(_UnansweredAdmin())
        return made[-1]

    text = Collector("unused:9092", 200, new_admin=slow_admin).scrape()
    assert "kafka_lag_exporter_collect_ok 0" in text.splitlines()
    deadline = time.monotonic() + 5
    while len(made) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(made) == 2, made
    assert all(a.closed.wait(5) for a in made), "a client nobody reads with was left open"


def test_a_broker_that_accepts_and_never_answers_fails_the_scrape_in_time() -> None:
    """The real kafka-python client against a socket that takes the connection and says nothing."""
    silent = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
    try:
        collector = Collector(f"127.0.0.1:{silent.getsockname()[1]}", 500)
        began = time.monotonic()
        text = collector.scrape()
        took = time.monotonic() - began
    finally:
        silent.close()
        for conn in accepted:
            conn.close()
    assert "kafka_lag_exporter_collect_ok 0" in text.splitlines()
    assert took < 5, f"the scrape waited {took:.1f} s"


class _DescribedCluster:
    """An admin client's answers about brokers: what describe_cluster says now, and per broker its groups (an
    exception for a broker that does not answer). Which brokers the collector asks is what is checked."""

    def __init__(self, brokers: dict[int, object], fenced: frozenset[int] = frozenset()) -> None:
        self.brokers, self.fenced, self.asked = brokers, fenced, []

    def describe_cluster(self) -> dict[str, object]:
        return {"brokers": [{"broker_id": b, "is_fenced": b in self.fenced} for b in self.brokers]}

    def list_groups(self, broker_ids: list[int]) -> list[dict[str, str]]:
        self.asked += broker_ids
        (broker,) = broker_ids
        answer = self.brokers[broker]
        if isinstance(answer, Exception):
            raise answer
        return [{"group_id": g} for g in answer]  # type: ignore[attr-defined]


def test_groups_are_listed_on_every_unfenced_broker_the_cluster_describes_now() -> None:
    admin = _DescribedCluster({1: ["a"], 2: ["b", "c"], 3: ["d"]}, fenced=frozenset({3}))
    assert report.list_group_ids(admin) == ["a", "b", "c"]  # type: ignore[arg-type]
    assert sorted(admin.asked) == [1, 2]


def test_a_broker_that_does_not_answer_is_named_and_its_groups_left_out_or_the_listing_fails() -> None:
    admin = _DescribedCluster({1: ["a"], 2: ConnectionRefusedError("111 ECONNREFUSED")})
    errors: list[str] = []
    assert report.list_group_ids(admin, errors) == ["a"]  # type: ignore[arg-type]
    assert errors == ["the groups of broker 2: ConnectionRefusedError: 111 ECONNREFUSED"]
    with pytest.raises(ConnectionRefusedError):
        report.list_group_ids(admin)  # type: ignore[arg-type]
