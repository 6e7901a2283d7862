"""Statistics of the figures: Kafka's percentiles, and a figure as a fraction of a measured physical limit."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """Kafka's own definition (ProducerPerformance): the sorted values' element at index int(n * p)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def latency_summary(values_ms: Sequence[float]) -> dict[str, float]:
    return {
        "avg": sum(values_ms) / len(values_ms),
        "max": max(values_ms),
        "p50": percentile(values_ms, 0.50),
        "p95": percentile(values_ms, 0.95),
        "p99": percentile(values_ms, 0.99),
        "p99.9": percentile(values_ms, 0.999),
    }


def copies_per_limit(replication: int, brokers: int, shared_machine: bool) -> float:
    """How many times each produced byte loads one measured limit.

    Every produced byte is written to `replication` log dirs and crosses the network `replication` times
    (client to leader, leader to each follower). When all brokers share the machine the limits were
    measured on (the lab), all of that lands on one disk and one kernel; on separate machines it spreads
    over the brokers, so one machine sees replication / brokers of it.
    """
    return float(replication) if shared_machine else replication / max(brokers, 1)


def fraction_of_limit(mib_per_s: float, limit_mib_per_s: float | None, copies: float = 1.0) -> float | None:
    """The share of a measured limit a Kafka figure uses (None when the limit could not be measured)."""
    if not limit_mib_per_s or limit_mib_per_s <= 0:
        return None
    return mib_per_s * copies / limit_mib_per_s
