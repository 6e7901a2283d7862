"""How big the consumer job's two applications are, worked out from the workers the inventory declares.

The spark role's cluster model says what each worker offers (`spark_cluster.workers`: cores and MiB); this
pure function turns that, the input partitions and the low-latency path's mode into each application's
spark-submit sizing, so a bigger cluster gets a bigger job without anyone editing five numbers. A value the
inventory sets (non-zero, non-empty) wins over the derived one.

The rules, in order:
- The low-latency path in Real-time Mode holds one task slot per input partition for as long as it runs;
  in micro-batch mode it needs one core per worker (at most one per partition).
- The archive gets at least one core on every worker (its executors spread over all of them) and the rest
  of the budget, in equal executors, one per worker.
- With two or more workers, the budget leaves out the biggest worker: the applications then fit on the
  workers left after losing any one, and the master relaunches a lost worker's executors on them. When they
  do not fit that way but fit on all workers, they are sized to all of them and `survives_worker_loss` is
  false; when they do not fit at all, that is a problem, and preflight stops the run.
- Memory is the smallest worker's, split between the executors a worker may have to hold after a loss
  (two of each application with two workers), an archive core counting twice a low-latency core (the archive
  keeps windowed state and buffers Parquet; the low-latency tasks only forward records). Each executor gets at
  least 512 MiB, Spark's floor being 450.
- The windowed counts' shuffle partitions equal the archive's cores. The Kafka source is asked to split its
  partitions (minPartitions) when there are fewer input partitions than archive cores, and each batch is
  coalesced to as many tasks (and Parquet files) as the archive has cores when there are more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MIN_EXECUTOR_MB = 512
_ARCHIVE_WEIGHT = 2  # memory per archive core, in low-latency cores' worth
_ROUND_MB = 64


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_down(mb: float) -> int:
    return int(mb // _ROUND_MB * _ROUND_MB)


def _explicit(value: Any) -> bool:
    return value not in (None, "", 0, "0")


def _with_explicit(derived: dict[str, Any], explicit: Mapping[str, Any]) -> dict[str, Any]:
    return {key: (explicit[key] if _explicit(explicit.get(key)) else value) for key, value in derived.items()}


def realtime_cores(settings: Mapping[str, Any], workers: int) -> int:
    """Cores the low-latency application holds: one per input partition in Real-time Mode, one per worker
    (at most one per partition) in micro-batch mode, none when it does not run."""
    partitions = max(1, int(settings["input_partitions"]))
    if not settings.get("realtime"):
        return 0
    if settings.get("realtime_mode") == "realtime":
        return partitions
    return max(1, min(partitions, workers))


def _memory_split(smallest_mb: int, per_worker: int, archive_cores: int, realtime_cores: int) -> tuple[int, int] | None:
    """(archive MiB, low-latency MiB) of one executor each when a worker holds per_worker executors of each
    application, or None when one of them would get less than the floor."""
    units = per_worker * (_ARCHIVE_WEIGHT * archive_cores + realtime_cores)
    unit = smallest_mb / units
    archive = _round_down(unit * _ARCHIVE_WEIGHT * archive_cores)
    realtime = _round_down(unit * realtime_cores) if realtime_cores else 0
    if archive < MIN_EXECUTOR_MB or (realtime_cores and realtime < MIN_EXECUTOR_MB):
        return None
    return archive, realtime


def spark_consumer_sizing(workers: Mapping[str, Mapping[str, int]], settings: Mapping[str, Any]) -> dict[str, Any]:
    """workers: {host: {"cores": int, "memory_mb": int}} (the spark role's model). settings: input_partitions,
    realtime (bool: the low-latency application runs), realtime_mode, explicit and fallback ({"archive":
    {executor_cores, cores_max, executor_memory, shuffle_partitions}, "realtime": {executor_cores, cores_max,
    executor_memory}}; 0 or "" in explicit means derive; fallback is used when no worker is known, a cluster
    the inventory does not describe).

    Returns {"archive": {executor_cores, cores_max, executor_memory, shuffle_partitions, min_partitions,
    write_partitions},
    "realtime": {executor_cores, cores_max, executor_memory}, "survives_worker_loss": bool, "summary": str,
    "problems": [str]}.
    """
    explicit = settings.get("explicit") or {}
    partitions = max(1, int(settings["input_partitions"]))
    if not workers:
        fallback = settings.get("fallback") or {}
        archive = _with_explicit(dict(fallback.get("archive") or {}), explicit.get("archive") or {})
        archive.setdefault("min_partitions", 0)
        archive.setdefault("write_partitions", 0)
        realtime = _with_explicit(dict(fallback.get("realtime") or {}), explicit.get("realtime") or {})
        return {
            "archive": archive,
            "realtime": realtime,
            "survives_worker_loss": False,
            "summary": "sized from the variables: the inventory declares no Spark worker",
            "problems": [],
        }
    hosts = sorted(workers)
    count = len(hosts)
    cores = {h: int(workers[h]["cores"]) for h in hosts}
    total = sum(cores.values())
    rt_need = realtime_cores(settings, count)
    need = rt_need + count
    after_loss = total - max(cores.values()) if count > 1 else total
    offered = ", ".join(f"{h}: {cores[h]}" for h in hosts)
    problems: list[str] = []
    if need <= after_loss:
        budget, redundant = after_loss, count > 1
    else:
        budget, redundant = total, False
    if need > total:
        per_worker = _ceil_div(need, count)
        why = (
            f"{rt_need} for the low-latency path in Real-time Mode (one per input partition) and "
            if settings.get("realtime") and settings.get("realtime_mode") == "realtime"
            else (f"{rt_need} for the low-latency path and " if rt_need else "")
        )
        problems.append(
            f"the Spark workers offer {total} cores in all (spark_worker_cores: {offered}) but the consumer job needs "
            f"at least {need}: {why}one per worker for the archive ({count}). Raise spark_worker_cores to {per_worker} "
            "on every worker, lower spark_consumer_topic_partitions, or set spark_consumer_realtime_mode: microbatch."
        )
    rt_executor = _ceil_div(rt_need, count) if rt_need else 0
    # One archive executor per worker, beside that worker's low-latency executor: the smallest worker bounds it.
    archive_executor = max(1, min((budget - rt_need) // count, min(cores.values()) - rt_executor))
    smallest = min(int(workers[h]["memory_mb"]) for h in hosts)
    per_worker = _ceil_div(count, count - 1) if redundant else 1
    split = _memory_split(smallest, per_worker, archive_executor, rt_executor)
    if split is None and redundant:
        redundant, split = False, _memory_split(smallest, 1, archive_executor, rt_executor)
    if split is None:
        problems.append(
            f"the smallest Spark worker offers {smallest} MiB (spark_worker_memory) but the consumer job's executors "
            f"need at least {MIN_EXECUTOR_MB} MiB each on it ({archive_executor} archive and {rt_executor} low-latency "
            f"cores per worker). Raise spark_worker_memory to at least "
            f"{_least_worker_memory(archive_executor, rt_executor)} on every worker."
        )
        split = (MIN_EXECUTOR_MB, MIN_EXECUTOR_MB if rt_executor else 0)
    archive_max = archive_executor * count
    archive = _with_explicit(
        {
            "executor_cores": archive_executor,
            "cores_max": archive_max,
            "executor_memory": f"{split[0]}m",
            "shuffle_partitions": archive_max,
        },
        explicit.get("archive") or {},
    )
    archive["min_partitions"] = int(archive["cores_max"]) if partitions < int(archive["cores_max"]) else 0
    archive["write_partitions"] = int(archive["cores_max"]) if partitions > int(archive["cores_max"]) else 0
    realtime = _with_explicit(
        {"executor_cores": max(1, rt_executor), "cores_max": max(1, rt_need), "executor_memory": f"{split[1] or 512}m"},
        explicit.get("realtime") or {},
    )
    summary = (
        f"{_count(count, 'worker')} ({offered} cores; smallest {smallest} MiB): archive "
        f"{_count(archive['cores_max'], 'core')} in executors of {_count(archive['executor_cores'], 'core')} and "
        f"{archive['executor_memory']}"
        + (
            f", low-latency path {_count(realtime['cores_max'], 'core')} in executors of "
            f"{_count(realtime['executor_cores'], 'core')} and {realtime['executor_memory']}"
            if rt_need
            else ""
        )
        + ("; fits on the workers left after losing any one" if redundant else "; does not fit after losing a worker")
    )
    return {
        "archive": archive,
        "realtime": realtime,
        "survives_worker_loss": redundant,
        "summary": summary,
        "problems": problems,
    }


def _count(number: Any, noun: str) -> str:
    return f"{number} {noun}" + ("" if str(number) == "1" else "s")


def _least_worker_memory(archive_cores: int, realtime_cores: int) -> str:
    """The smallest worker memory (in GiB, rounded up) that gives each executor of one worker the floor."""
    shares = [_ARCHIVE_WEIGHT * archive_cores] + ([realtime_cores] if realtime_cores else [])
    mb = MIN_EXECUTOR_MB * sum(shares) / min(shares) + _ROUND_MB * len(shares)
    return f"{_ceil_div(int(mb), 1024)}g"


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"spark_consumer_sizing": spark_consumer_sizing}
