"""A load harness around lifecycle operations: proves nothing acknowledged is lost in any phase.

A producer and a consumer group run in the background while the cluster is restarted, upgraded or
migrated; each phase ends with an accounting.

  start --bootstrap HOST:PORT[,...] --topic T --state DIR [--rate 200] [--partitions 3] [--replication 3]
        [--min-insync 2] [--group G] [--ansible-log FILE ...]
      create the topic if missing, start the background load, return once its first acks arrived
  checkpoint --state DIR --phase NAME [--report FILE.json] [--timeout 300] [--ansible-log FILE ...]
      while the load runs: account for every record acked so far, this phase's acks and longest ack gap,
      and the group's committed offsets; with --ansible-log, the restarts the phase's playbook runs made
      (each node's time to open its ports and to be back in the ISR)
  stop --state DIR --phase NAME [--report FILE.json] [--timeout 300] [--ansible-log FILE ...]
      stop the load (every send acked or failed, the group caught up and committed), account for the whole
      run: also no failed send, and the group consumed every acked record
  status --state DIR
      whether the load runs, and its counts so far
  run --state DIR
      (internal) the background process start spawns

checkpoint and stop print one line (`phase=... lost=0 ... group_offsets=kept ... ok`), append the same as
JSON to --report, and exit 1 when anything acked was lost, duplicated, moved or reordered, when the group's
committed offsets went back or vanished, or (stop) when a send failed or the group missed a record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kafkalab import kafka_client
from kafkalab.load import control, runner
from kafkalab.load.files import LoadError, StateDir


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kafkalab.load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    start = sub.add_parser("start", help="create the topic if missing and start the background load")
    start.add_argument("--bootstrap", required=True, help="host:port[,host:port...] of the brokers")
    start.add_argument("--topic", required=True, help="the topic to load (created if missing)")
    start.add_argument("--rate", type=float, default=200.0, help="messages per second (default 200)")
    start.add_argument("--partitions", type=int, default=3, help="partitions of a created topic (default 3)")
    start.add_argument("--replication", type=int, default=3, help="replication factor (default 3)")
    start.add_argument("--min-insync", type=int, default=2, help="min.insync.replicas of a created topic (default 2)")
    start.add_argument("--group", help="the consumer group (default: kafkalab-load-<run id>)")
    start.add_argument(
        "--ansible-log",
        type=Path,
        action="append",
        default=[],
        help="a playbook log the phases will read restarts from (what it holds now is not this run's)",
    )
    for name, text in (
        ("checkpoint", "account for everything acked so far; the load keeps running"),
        ("stop", "stop the load and account for the whole run"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--phase", required=True, help="name of the phase that ends here (e.g. upgrade)")
        cmd.add_argument("--report", type=Path, help="JSON file holding a list of phase reports (appended to)")
        cmd.add_argument("--timeout", type=float, default=300.0, help="seconds to read the topic back (default 300)")
        cmd.add_argument(
            "--ansible-log",
            type=Path,
            action="append",
            default=[],
            help="a playbook run's log (ANSIBLE_LOG_PATH) whose restarts this phase reports; repeatable",
        )
    sub.add_parser("status", help="whether the load runs, and its counts so far")
    sub.add_parser("run", help="(internal) the background process that start spawns")
    for cmd in sub.choices.values():
        cmd.add_argument("--state", required=True, type=Path, help="the run's state directory")
    start.add_argument(
        "--client-config",
        help="Kafka client properties (TLS, CA) for the brokers; default $KAFKALAB_CLIENT_CONFIG; kept for the run",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "start":
            kafka_client.use(args.client_config)
            opts = control.StartOptions(
                args.bootstrap,
                args.topic,
                args.state,
                args.rate,
                args.partitions,
                args.replication,
                args.min_insync,
                args.group,
                tuple(args.ansible_log),
            )
            return control.start(opts)
        if args.cmd == "checkpoint":
            return control.checkpoint(args.state, args.phase, args.report, args.timeout, args.ansible_log)
        if args.cmd == "stop":
            return control.stop(args.state, args.phase, args.report, args.timeout, args.ansible_log)
        if args.cmd == "status":
            return control.status(args.state)
        return runner.run(StateDir(args.state).require())
    except (LoadError, kafka_client.ClientConfigError) as exc:
        print(f"load {args.cmd}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"load {args.cmd}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
