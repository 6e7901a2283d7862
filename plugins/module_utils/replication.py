"""The replication rules a cluster default and a declared topic share.

A replication factor is a positive integer no larger than the number of brokers; min.insync.replicas
is a positive integer no larger than the replication factor (else acks=all producers could never
write). The kafka role checks its cluster defaults with them, the kafka_topics role each topic.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import as_int


def replication_problems(
    rf_raw: Any,
    min_isr_raw: Any,
    broker_count: int | None,
    *,
    rf_name: str,
    min_isr_name: str,
    where: str = "",
    min_isr_required: bool = True,
) -> list[str]:
    """Every problem with one replication factor and its min.insync.replicas, each naming the variable.

    broker_count None (or 0: no brokers declared, reported elsewhere) skips the broker-count rule.
    min_isr_raw None is a problem only when min_isr_required.
    """
    prefix = f"{where}: " if where else ""
    problems: list[str] = []
    rf, min_isr = as_int(rf_raw), as_int(min_isr_raw)
    if rf is None or rf < 1:
        problems.append(f"{prefix}{rf_name} '{rf_raw}' must be a positive integer.")
        rf = None
    elif broker_count and rf > broker_count:
        problems.append(
            f"{prefix}{rf_name} {rf} is larger than the number of brokers ({broker_count}): "
            f"lower it to at most {broker_count} or add brokers."
        )
    if min_isr_raw is None and not min_isr_required:
        return problems
    if min_isr is None or min_isr < 1:
        problems.append(f"{prefix}{min_isr_name} '{min_isr_raw}' must be a positive integer.")
    elif rf is not None and min_isr > rf:
        problems.append(
            f"{prefix}{min_isr_name} {min_isr} is larger than {rf_name} {rf}: "
            "producers with acks=all could never write. Lower it."
        )
    return problems
