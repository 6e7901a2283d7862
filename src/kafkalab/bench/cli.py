"""`make bench`: measured numbers for provisioning, the Kafka cluster and the Spark job, with plots.

    python -m kafkalab.bench --inventory inventories/lab --cold        # the lab: hosts destroyed and recreated
    python -m kafkalab.bench --inventory inventories/prod --no-cold    # any inventory: no cold converge

Writes .cache/bench/bench.json and PNG plots beside it, and prints a short table. Sections:

  provisioning  wall time of a cold converge of playbooks/site.yml (--cold: the lab's hosts are destroyed and
                recreated first, which only a lab inventory can do), of a no-op re-run and its changed tasks,
                and the ten slowest tasks (from Ansible's JSON callback)
  physical      sequential write throughput of a broker's log dir (dd, fdatasync) and loopback TCP (iperf3
                on the controller): the limits every Kafka figure is shown as a fraction of
  kafka         Kafka's own producer and consumer perf tools (the installed distribution, on a broker host)
                and kafka-python (on the controller): 100 B and 1 KiB records, acks=1 and acks=all, RF 3; over
                the inter-broker listener, then the same over each other listener the brokers advertise on the
                cluster network (the lab's SECURE: TLS and SCRAM-SHA-512), in that listener's client settings
  spark         the deployed Spark job's code and settings run on a bench topic (the services are paused
                meanwhile): processed rows/s draining a backlog, produce-to-Parquet and produce-to-output
                (low-latency path) latency at a steady rate, the archive's latency again at other trigger
                intervals (--spark-triggers), next to a plain kafka-python consumer reading the same topic

Every figure records its settings; the document records the machine (cores, memory from /proc) and the
load average at start and end. Nothing is asserted: the run fails only when a measurement could not be
taken. Bench topics (kafkalab-bench-*) are created and deleted here; declared topics are never touched.
Parsing, statistics, fractions, the table and the plots are pure functions of the collected data.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from kafkalab.bench.cluster import delete_bench_topics, discover, loadavg, machine
from kafkalab.bench.kafka_perf import kafka_section
from kafkalab.bench.measure import MeasurementError, measured, say
from kafkalab.bench.physical import physical
from kafkalab.bench.plots import write_plots
from kafkalab.bench.provisioning import provisioning
from kafkalab.bench.report import errors_in, render_table
from kafkalab.bench.runner import Ansible
from kafkalab.bench.settings import SECTIONS
from kafkalab.bench.spark_job import spark_section
from kafkalab.lab import LabError, read_inventory


def bench(args: argparse.Namespace) -> dict[str, Any]:
    root = Path.cwd()
    started = time.monotonic()
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    run = uuid.uuid4().hex[:6]
    doc: dict[str, Any] = {
        "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inventory": args.inventory,
        "run": run,
        "sections": list(args.only),
        "load_average": {"start": loadavg()},
    }
    ansible = Ansible(args.inventory)
    if "provisioning" in args.only:
        doc["provisioning"] = provisioning(ansible, args.cold, out_dir, root)
    groups = ansible.groups()
    brokers = groups.get("kafka_broker") or []
    masters = groups.get("spark_master") or []
    if not brokers:
        raise MeasurementError(f"inventory {args.inventory} has no hosts in group kafka_broker")
    doc["machine"] = machine(ansible, sorted({*brokers, *masters}))
    cluster = discover(ansible, brokers, args.bootstrap, args.tls_dir or default_tls_dir(args.inventory))
    doc["cluster"] = {
        "bootstrap": cluster.bootstrap,
        "brokers": brokers,
        "tool_host": cluster.tool_host,
        "listeners": {li.name: {"protocol": li.protocol, "bootstrap": li.bootstrap} for li in cluster.listeners},
    }
    leftovers = delete_bench_topics(cluster.bootstrap)
    if leftovers:
        say(f"removed {len(leftovers)} bench topic(s) left by an interrupted run: {', '.join(leftovers)}")
        doc["cluster"]["removed_leftover_topics"] = leftovers
    if "physical" in args.only:
        doc["physical"] = physical(ansible, cluster)
    if "kafka" in args.only:
        doc["kafka"] = kafka_section(ansible, cluster, doc, run, args.scale)
        # The same runs over each other listener on the cluster network (the lab's SECURE: TLS and SCRAM), so a
        # listener's security costs show against the first's on the same brokers, minutes apart.
        for listener in cluster.listeners[1:]:
            doc.setdefault("kafka_over", {})[listener.name] = measured(
                f"kafka over {listener.name} ({listener.protocol})",
                partial(kafka_section, ansible, cluster, doc, run, args.scale, listener, False),
            )
    if "spark" in args.only:
        if not masters:
            doc["spark"] = {"error": f"inventory {args.inventory} has no hosts in group spark_master"}
        else:
            doc["spark"] = measured(
                "spark: the job on a bench topic",
                lambda: spark_section(
                    ansible,
                    cluster,
                    masters[0],
                    run,
                    max(1000, int(args.spark_backlog * args.scale)),
                    args.spark_rate,
                    args.spark_seconds,
                    [t.strip() for t in args.spark_triggers.split(",") if t.strip()],
                ),
            )
    doc["load_average"]["end"] = loadavg()
    doc["duration_s"] = round(time.monotonic() - started, 1)
    return doc


def default_tls_dir(inventory: str) -> str:
    """roles/kafka's default kafka_tls_ca_dir: .pki in the inventory's folder (where the listeners' settings are)."""
    path = Path(inventory)
    return str((path if path.is_dir() else path.parent) / ".pki")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inventory", "-i", default="inventories/lab", help="inventory (default: the lab)")
    cold = parser.add_mutually_exclusive_group(required=True)
    cold.add_argument(
        "--cold",
        dest="cold",
        action="store_true",
        help="destroy and recreate the lab's hosts, then time a cold converge (a lab inventory only)",
    )
    cold.add_argument(
        "--no-cold",
        dest="cold",
        action="store_false",
        help="do not recreate hosts: only the no-op re-run is timed (any inventory)",
    )
    parser.add_argument("--out", type=Path, default=Path(".cache/bench"), help="where bench.json and the plots go")
    parser.add_argument(
        "--bootstrap", help="bootstrap servers (default: each broker's advertised inter-broker listener)"
    )
    parser.add_argument(
        "--tls-dir",
        default="",
        help="where the kafka role wrote the listeners' client settings (kafka_tls_ca_dir; default: .pki beside "
        "the inventory): the kafka section runs over every listener on the cluster network, not only the first",
    )
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {','.join(SECTIONS)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the record counts (e.g. 0.1 for a try)")
    parser.add_argument("--spark-backlog", type=int, default=150_000, help="events drained by the job at once")
    parser.add_argument("--spark-rate", type=float, default=500, help="steady events/s for the latency figure")
    parser.add_argument("--spark-seconds", type=float, default=40, help="how long the steady stream runs")
    parser.add_argument(
        "--spark-triggers",
        default="1 second,10 seconds",
        help="archive trigger intervals to run the steady stream again with, besides the deployed one ('' for none)",
    )
    args = parser.parse_args(argv)
    args.only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(args.only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {','.join(SECTIONS)}")
    if args.cold and "provisioning" in args.only:
        try:
            read_inventory(args.inventory)
        except LabError as exc:
            parser.error(
                f"--cold destroys and recreates the hosts, which only a lab inventory can do ({exc}); "
                "use --no-cold (make bench BENCH_COLD=0) to time only the no-op re-run"
            )
    try:
        doc = bench(args)
    except MeasurementError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    table = render_table(doc)
    (args.out / "bench.txt").write_text(table)
    plots = write_plots(doc, args.out)
    sys.stdout.write(table)
    print(f"(JSON: {args.out / 'bench.json'}; plots: {', '.join(str(p) for p in plots) or 'none'})")
    return 1 if errors_in(doc) else 0
