"""Produce a few numbered demo events for the Spark consumer (the end of `make lab`).

    python -m kafkalab.spark_demo --bootstrap 10.231.0.11:9092 --topic events --count 5

Prints one JSON line: the run id and, per event, where Kafka acknowledged it. playbooks/spark_demo.yml
then waits for the job to commit the same events and shows the rows they became.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from kafkalab import kafka_client
from kafkalab.e2e import produce_numbered


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.spark_demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument(
        "--client-config", help="Kafka client properties (TLS, CA) for the brokers; default $KAFKALAB_CLIENT_CONFIG"
    )
    args = parser.parse_args(argv)
    try:
        kafka_client.use(args.client_config)
    except kafka_client.ClientConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    run_id, acked, failed = produce_numbered(args.bootstrap, args.topic, args.count, client_id="kafkalab-spark-demo")
    if failed:
        print(f"error: {len(failed)} of {args.count} demo events were not acknowledged", file=sys.stderr)
        return 1
    events = [{"partition": r.partition, "offset": r.offset, "key": r.key, "seq": r.seq} for r in acked]
    print(json.dumps({"run": run_id, "topic": args.topic, "events": events}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
