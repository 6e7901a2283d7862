"""The cluster report's flags and text, from collected data (no cluster)."""

from __future__ import annotations

from typing import Any

from kafkalab.report import OFFLINE, UNDER_REPLICATED, partition_status, render_text, share_group, summarise


def test_healthy_partition_has_no_flags() -> None:
    assert partition_status(1, [1, 2, 3], [1, 2, 3], []) == []


def test_shrunk_isr_is_under_replicated() -> None:
    assert partition_status(1, [1, 2, 3], [1, 2], []) == [UNDER_REPLICATED]


def test_leaderless_partition_is_offline() -> None:
    assert partition_status(-1, [2], [2], [2]) == [OFFLINE, UNDER_REPLICATED]


def report() -> dict[str, Any]:
    topics = [
        {
            "name": "topic_1",
            "partitions": [
                {
                    "partition": 0,
                    "leader": None,
                    "replicas": [2],
                    "isr": [2],
                    "offline_replicas": [2],
                    "flags": [OFFLINE, UNDER_REPLICATED],
                },
                {"partition": 1, "leader": 1, "replicas": [1], "isr": [1], "offline_replicas": [], "flags": []},
            ],
        }
    ]
    return {
        "collected_at": "2026-01-01T00:00:00Z",
        "cluster_id": "abc",
        "mode": "kraft",
        "active_controller": 1,
        "brokers": [{"id": 1, "host": "h1", "port": 9092}, {"id": 3, "host": "h3", "port": 9092}],
        "topics": topics,
        "groups": [
            {
                "group": "g",
                "total_lag": 5,
                "partitions": [
                    {"topic": "topic_1", "partition": 1, "committed": 10, "log_end": 15, "lag": 5},
                    {"topic": "topic_1", "partition": 0, "committed": 3, "log_end": None, "lag": None},
                ],
            }
        ],
        "summary": summarise(topics),
    }


def test_summary_counts_flagged_partitions() -> None:
    assert report()["summary"] == {"topics": 1, "partitions": 2, "under_replicated": 1, "offline": 1}


def test_text_shows_offline_leader_lag_and_controller() -> None:
    text = render_text(report())
    assert "offline: 1" in text and "under-replicated: 1" in text
    assert "h1:9092  (active controller)" in text
    lines = text.splitlines()
    offline_row = next(line for line in lines if line.startswith("topic_1") and "OFFLINE" in line)
    assert " none " in offline_row
    assert any(line.startswith("g ") and line.rstrip().endswith(" 5") for line in lines)
    # Unknown log-end (offline partition) shows as '?', not as a made-up number.
    assert any("?" in line for line in lines if line.startswith("g "))


def test_color_marks_only_flagged_rows() -> None:
    text = render_text(report(), color=True)
    assert "\033[1;31mOFFLINE UNDER-REPLICATED\033[0m" in text
    assert "\033[1;31mok" not in text


def test_over_tls_each_broker_shows_when_its_certificate_expires() -> None:
    tls = report()
    tls["brokers"][0]["certificate_expires"] = "2028-03-01T10:00:00Z"
    tls["brokers"][1]["certificate_expires"] = "unknown (timed out)"
    lines = render_text(tls).splitlines()
    assert "certificate expires" in next(line for line in lines if line.split()[:2] == ["broker", "address"])
    assert any(line.split()[:3] == ["1", "h1:9092", "2028-03-01T10:00:00Z"] for line in lines)
    assert any(line.split()[:3] == ["3", "h3:9092", "unknown"] for line in lines)
    assert "certificate expires" not in render_text(report())


def test_share_groups_are_not_listed_as_consumer_groups() -> None:
    # ListGroups v5 answers, as kafka-python 3 gives them.
    assert share_group({"group_id": "q", "protocol_type": "share", "group_state": "Stable", "group_type": "share"})
    assert not share_group(
        {"group_id": "c", "protocol_type": "consumer", "group_state": "Stable", "group_type": "consumer"}
    )
    assert not share_group({"group_id": "c", "protocol_type": "consumer", "group_type": "classic"})
    assert not share_group(("c", "consumer"))  # older answers: (group_id, protocol_type)
