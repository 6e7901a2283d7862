"""The delivery accounting every end-to-end and failover test relies on."""

from __future__ import annotations

from kafkalab.e2e import Record, compare, decode, encode


def stream(n: int, partitions: int = 3) -> list[Record]:
    offsets = [0] * partitions
    out = []
    for seq in range(n):
        p = seq % partitions
        out.append(Record(p, offsets[p], f"key-{seq}", seq))
        offsets[p] += 1
    return out


def test_identical_streams_are_clean() -> None:
    acked = stream(30)
    # Reading partitions in any interleaving is fine; only order within a partition counts.
    report = compare(acked, sorted(acked, key=lambda r: (-r.partition, r.offset)))
    assert report.ok, report.summary()
    assert (report.acked, report.consumed) == (30, 30)


def test_missing_record_counts_as_lost() -> None:
    acked = stream(10)
    report = compare(acked, [r for r in acked if r.seq != 4])
    assert report.lost == [4]
    assert not report.ok


def test_record_read_twice_counts_as_duplicated() -> None:
    acked = stream(10)
    report = compare(acked, [*acked, acked[2]])
    assert report.duplicated == [2]
    assert not report.ok


def test_reordered_partition_is_flagged() -> None:
    acked = stream(9)
    p0 = [r for r in acked if r.partition == 0]
    rest = [r for r in acked if r.partition != 0]
    report = compare(acked, [p0[1], p0[0], *p0[2:], *rest])
    assert report.out_of_order_partitions == [0]


def test_record_at_another_offset_is_flagged_as_moved() -> None:
    acked = stream(3)
    bad = Record(acked[0].partition, acked[0].offset + 100, acked[0].key, acked[0].seq)
    assert compare(acked, [bad, *acked[1:]]).moved == [0]


def test_unacknowledged_extra_is_reported_but_not_a_failure() -> None:
    acked = stream(3)
    report = compare(acked, [*acked, Record(0, 99, "k", 1000)])
    assert report.unacked_extra == [1000]
    assert report.ok


def test_payload_round_trips_and_garbage_decodes_to_none() -> None:
    data = decode(encode("run1", 7))
    assert data is not None and data["run"] == "run1" and data["seq"] == 7
    assert decode(b"\xff\x00") is None
    assert decode(None) is None
