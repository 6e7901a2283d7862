"""Consumer-group lag for Prometheus: the cluster report's collector (kafkalab.report) served at /metrics.

Kafka has no broker-side lag metric: lag is a group's committed offset against the partition's log end, which
only a client can put side by side. This small exporter runs on the monitoring host (roles/prometheus, service
kafka-lag-exporter) and asks the cluster on every scrape, with the same code as `make report`
(report.collect_topics and report.collect_groups), so the alert and the report cannot disagree.

Why an exporter and not node-exporter's textfile collector: a textfile is written on a timer, so a scrape shows
the lag of the last timer run and an exporter that died leaves a stale file that still looks fresh; here each
scrape is one fresh reading, and `up{job="kafka_lag"}` says when there was none.

    python -m kafkalab.lag_exporter --bootstrap kafka1:9092,kafka2:9092 --port 9308

Series (gauges): kafka_consumergroup_lag{group,topic,partition}, kafka_consumergroup_committed_offset{...},
kafka_topic_partition_log_end_offset{topic,partition}, kafka_consumergroup_total_lag{group},
kafka_lag_exporter_scrape_seconds, kafka_lag_exporter_collect_ok (0 when the cluster did not answer),
kafka_lag_exporter_left_out (groups, or brokers' group lists, this scrape could not read; named in the journal).
Groups that keep no offsets in Kafka (the Spark job keeps its own in its checkpoint) are not here.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kafka.admin import KafkaAdminClient

from kafkalab import kafka_client, report

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}" if labels else ""


def exposition(groups: Iterable[dict[str, Any]], seconds: float, ok: bool, left_out: int = 0) -> str:
    """The Prometheus text format of report.collect_groups' output (partitions without a known offset are left
    out: a series of no value is no series)."""
    series: dict[str, tuple[str, list[str]]] = {
        "kafka_consumergroup_lag": ("Records the group is behind the partition's log end.", []),
        "kafka_consumergroup_committed_offset": ("The group's committed offset.", []),
        "kafka_topic_partition_log_end_offset": ("The partition's log end offset (next offset to be written).", []),
        "kafka_consumergroup_total_lag": ("Records the group is behind, all its partitions together.", []),
    }
    ends: dict[tuple[str, int], int] = {}
    for group in groups:
        name = group["group"]
        for row in group["partitions"]:
            where = {"group": name, "topic": row["topic"], "partition": row["partition"]}
            if row["lag"] is not None:
                series["kafka_consumergroup_lag"][1].append(f"kafka_consumergroup_lag{_labels(**where)} {row['lag']}")
            if row["committed"] is not None:
                series["kafka_consumergroup_committed_offset"][1].append(
                    f"kafka_consumergroup_committed_offset{_labels(**where)} {row['committed']}"
                )
            if row["log_end"] is not None:
                ends[(row["topic"], row["partition"])] = row["log_end"]
        series["kafka_consumergroup_total_lag"][1].append(
            f"kafka_consumergroup_total_lag{_labels(group=name)} {group['total_lag']}"
        )
    series["kafka_topic_partition_log_end_offset"][1].extend(
        f"kafka_topic_partition_log_end_offset{_labels(topic=t, partition=p)} {end}"
        for (t, p), end in sorted(ends.items())
    )
    lines = []
    for name, (help_text, samples) in series.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
    lines += [
        "# HELP kafka_lag_exporter_scrape_seconds Time to read the groups and offsets from the cluster.",
        "# TYPE kafka_lag_exporter_scrape_seconds gauge",
        f"kafka_lag_exporter_scrape_seconds {seconds:.3f}",
        "# HELP kafka_lag_exporter_collect_ok 1 when the cluster answered this scrape, else 0.",
        "# TYPE kafka_lag_exporter_collect_ok gauge",
        f"kafka_lag_exporter_collect_ok {1 if ok else 0}",
        "# HELP kafka_lag_exporter_left_out Groups, or brokers' group lists, this scrape could not read.",
        "# TYPE kafka_lag_exporter_left_out gauge",
        f"kafka_lag_exporter_left_out {left_out}",
    ]
    return "\n".join(lines) + "\n"


class _Reading(threading.Thread):
    """One reading of the groups, with a client of its own, on a thread of its own so that the scrape can stop
    waiting for it.

    A new client each time: a kept one's cached metadata and group coordinators go stale when a broker is away
    and comes back (its groups were left out, or their offsets refused, for minutes). And kafka-python's blocking
    calls wait for their answer with no bound of their own (closing the client is what releases them), so the
    scrape waits for the reading only as long as its deadline, then abandons it: the client is closed, which
    fails the call the reading waits in."""

    def __init__(self, new_admin: Callable[[], KafkaAdminClient], timeout_ms: int):
        super().__init__(name="lag-reading", daemon=True)
        self._new_admin, self._timeout_ms = new_admin, timeout_ms
        self.groups: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.error: BaseException | None = None
        self._admin: KafkaAdminClient | None = None
        self._abandoned = False
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            admin = self._new_admin()
            with self._lock:
                self._admin = admin
                if self._abandoned:  # the scrape stopped waiting while the client was being made
                    return
            self.groups = report.collect_groups(admin, report.collect_topics(admin), self._timeout_ms, self.errors)
        except BaseException as exc:  # the scrape reports it
            self.error = exc
        finally:
            self._close()

    def _close(self) -> None:
        with self._lock:
            admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
        self._close()


class Collector:
    """Readings one at a time, each with a new client and bounded by the timeout as a whole (not only each
    request)."""

    def __init__(
        self, bootstrap: str, timeout_ms: int, new_admin: Callable[[], KafkaAdminClient] | None = None
    ) -> None:
        self._timeout_ms = timeout_ms
        self._new_admin = new_admin or (
            lambda: KafkaAdminClient(
                **kafka_client.settings(),
                bootstrap_servers=bootstrap,
                client_id="kafkalab-lag-exporter",
                request_timeout_ms=timeout_ms,
                bootstrap_timeout_ms=timeout_ms,
            )
        )
        self._lock = threading.Lock()

    def _collect(self) -> tuple[list[dict[str, Any]], list[str]]:
        reading = _Reading(self._new_admin, self._timeout_ms)
        reading.start()
        reading.join(self._timeout_ms / 1000)
        if reading.is_alive():
            reading.abandon()
            raise TimeoutError(f"no reading within {self._timeout_ms} ms; its client is closed")
        if reading.error is not None:
            raise reading.error
        return reading.groups, reading.errors

    def scrape(self) -> str:
        """One reading. A failure, a reading that outlasts the timeout, or a group that could not be read (its
        coordinator moving, the group being deleted), is tried once more before the scrape reports it."""
        with self._lock:
            began = time.monotonic()
            groups: list[dict[str, Any]] = []
            ok, left_out = False, 0
            for attempt in (1, 2):
                try:
                    groups, errors = self._collect()
                except Exception as exc:  # the cluster may be away; the scrape says so and the next one tries again
                    print(f"lag exporter: could not read the groups: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                ok, left_out = True, len(errors)
                if not errors:
                    break
                print(f"lag exporter: groups left out ({attempt}): {'; '.join(errors)}", file=sys.stderr)
            return exposition(groups, time.monotonic() - began, ok, left_out)


def serve(collector: Collector, listen: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics here")
                return
            body = collector.scrape().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per scrape would fill the journal

    return ThreadingHTTPServer((listen, port), Handler)


def main(argv: list[str] | None = None) -> int:
    summary = __doc__.split("\n\n", maxsplit=1)[0]
    parser = argparse.ArgumentParser(prog="python -m kafkalab.lag_exporter", description=summary)
    parser.add_argument("--bootstrap", required=True, help="the brokers, host:port,...")
    parser.add_argument("--listen", default="0.0.0.0", help="address to serve /metrics on")
    parser.add_argument("--port", type=int, default=9308)
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=2_000,
        help="how long one reading of the cluster may take, all its requests together; a reading and its retry "
        "must fit in the scrape timeout",
    )
    parser.add_argument(
        "--client-config", help="Kafka client properties (TLS, CA) for the brokers; default $KAFKALAB_CLIENT_CONFIG"
    )
    args = parser.parse_args(argv)
    try:
        kafka_client.use(args.client_config)
    except kafka_client.ClientConfigError as exc:
        print(f"lag exporter: error: {exc}", file=sys.stderr)
        return 1
    server = serve(Collector(args.bootstrap, args.timeout_ms), args.listen, args.port)
    print(f"lag exporter: /metrics on {args.listen}:{args.port}, cluster {args.bootstrap}", file=sys.stderr)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
