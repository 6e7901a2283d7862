"""The cluster report: brokers and the active controller, every partition's leader/replicas/ISR/offline
replicas, every consumer group's committed offsets, log-end offsets and lag, and over TLS when each broker's
certificate expires (read in a handshake, as clients see it).

`python -m kafkalab.report --bootstrap HOST:PORT[,...] [--json FILE] [--text FILE]` prints a table
anyone can read at a glance (under-replicated and offline partitions flagged) and writes the same
data as JSON for machines. Collection talks to the Admin API; formatting is pure functions of the
collected dict, unit tested without a cluster.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import time
from pathlib import Path
from typing import Any

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec

from kafkalab import kafka_client

UNDER_REPLICATED = "UNDER-REPLICATED"
OFFLINE = "OFFLINE"


def partition_status(leader: int, replicas: list[int], isr: list[int], offline: list[int]) -> list[str]:
    """Flags for one partition: OFFLINE when it has no leader, UNDER-REPLICATED when ISR < replicas."""
    flags = []
    if leader < 0:
        flags.append(OFFLINE)
    if len(isr) < len(replicas) or offline:
        flags.append(UNDER_REPLICATED)
    return flags


def quorum_leader(admin: KafkaAdminClient) -> tuple[int, int]:
    """The KRaft metadata quorum's leader and its epoch, from DescribeQuorum; raises where there is no quorum
    to describe (ZooKeeper mode) or while it has no leader."""
    partition = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    return int(partition["leader_id"]), int(partition["leader_epoch"])


def _active_controller(admin: KafkaAdminClient, fallback: int | None) -> tuple[int | None, str]:
    """The KRaft quorum leader when there is a quorum, else the controller id the brokers report (ZooKeeper)."""
    try:
        return quorum_leader(admin)[0], "kraft"
    except Exception:
        return fallback, "zookeeper"


def certificate_expiry(host: str, port: int, settings: dict[str, Any], timeout_s: float = 10.0) -> str:
    """When the certificate a broker serves at host:port expires (UTC, ISO 8601), read in a TLS handshake made as
    the clients make theirs (the CA, the key store and the name check of `settings`, kafka_client's); the error
    instead when the handshake fails."""
    context = ssl.create_default_context(cafile=settings.get("ssl_cafile"))
    context.check_hostname = bool(settings.get("ssl_check_hostname", True))
    if settings.get("ssl_certfile"):
        context.load_cert_chain(settings["ssl_certfile"], settings.get("ssl_keyfile"))
    try:
        with (
            socket.create_connection((host, port), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            not_after = (tls.getpeercert() or {}).get("notAfter")
    except OSError as exc:
        return f"unknown ({exc})"
    if not isinstance(not_after, str):
        return "unknown (no certificate)"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ssl.cert_time_to_seconds(not_after)))


def collect(bootstrap: str, include_internal: bool = False, timeout_ms: int = 15_000) -> dict[str, Any]:
    """Everything the report shows, as plain data."""
    admin = KafkaAdminClient(
        **kafka_client.settings(),
        bootstrap_servers=bootstrap,
        client_id="kafkalab-report",
        request_timeout_ms=timeout_ms,
    )
    try:
        cluster = admin.describe_cluster()
        controller, mode = _active_controller(admin, cluster.get("controller_id"))
        topics = collect_topics(admin, include_internal)
        groups = collect_groups(admin, topics, timeout_ms)
    finally:
        admin.close()
    brokers = sorted(
        (
            {"id": b["broker_id"], "host": b["host"], "port": b["port"], "rack": b.get("rack")}
            for b in cluster["brokers"]
        ),
        key=lambda b: b["id"],
    )
    settings = kafka_client.settings()
    if settings.get("security_protocol") in ("SSL", "SASL_SSL"):
        for b in brokers:
            b["certificate_expires"] = certificate_expiry(b["host"], b["port"], settings)
    return {
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cluster_id": cluster.get("cluster_id"),
        "mode": mode,
        "active_controller": controller,
        "brokers": brokers,
        "topics": topics,
        "groups": groups,
        "summary": summarise(topics),
    }


def collect_topics(admin: KafkaAdminClient, include_internal: bool = False) -> list[dict[str, Any]]:
    """Every topic's partitions: leader, replicas, ISR, offline replicas and the report's flags."""
    topics = []
    for topic in sorted(admin.describe_topics(), key=lambda t: t["name"]):
        if topic.get("is_internal") and not include_internal:
            continue
        partitions = []
        for p in sorted(topic["partitions"], key=lambda p: p["partition_index"]):
            leader = int(p["leader_id"])
            replicas, isr = list(p["replica_nodes"]), list(p["isr_nodes"])
            offline = list(p.get("offline_replicas") or [])
            partitions.append(
                {
                    "partition": p["partition_index"],
                    "leader": leader if leader >= 0 else None,
                    "replicas": replicas,
                    "isr": isr,
                    "offline_replicas": offline,
                    "flags": partition_status(leader, replicas, isr, offline),
                }
            )
        topics.append({"name": topic["name"], "partitions": partitions})
    return topics


def list_group_ids(admin: KafkaAdminClient, errors: list[str] | None = None) -> list[str]:
    """Every consumer group (not a share group) the cluster coordinates now. ListGroups answers with the asking
    broker's own groups only, and kafka-python asks the brokers of its cached metadata, which can miss a broker for
    minutes after that broker was away (until the metadata's next refresh): a group coordinated there would be left
    out with no error. So the brokers asked are the ones the cluster describes now, unfenced.

    errors: when given, a broker that does not answer (stopped, and not yet fenced) is named there and its groups
    are left out; otherwise its failure is raised."""
    brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced"))
    names: set[str] = set()
    for broker in brokers:
        try:
            listed = admin.list_groups(broker_ids=[broker])
        except Exception as exc:
            if errors is None:
                raise
            errors.append(f"the groups of broker {broker}: {type(exc).__name__}: {exc}")
            continue
        names |= {g["group_id"] if isinstance(g, dict) else g[0] for g in listed if not share_group(g)}
    return sorted(names)


def share_group(listed: Any) -> bool:
    """A share group (KIP-932) in ListGroups' answer: it commits no consumer offsets (its progress is the share
    coordinator's, shown by kafka-share-groups, which playbooks/report.yml adds to the report)."""
    return isinstance(listed, dict) and "share" in (listed.get("group_type"), listed.get("protocol_type"))


def collect_groups(
    admin: KafkaAdminClient, topics: list[dict[str, Any]], timeout_ms: int, errors: list[str] | None = None
) -> list[dict[str, Any]]:
    """Each consumer group's committed offset, log end and lag per partition (the lag exporter serves these too).

    errors: when given, a group whose offsets cannot be read (its coordinator moving, the group being deleted), or
    the groups of a broker that does not answer, are left out and named there, instead of failing the whole
    collection."""
    group_ids = list_group_ids(admin, errors)
    if not group_ids:
        return []
    if errors is None:
        committed = admin.list_group_offsets(dict.fromkeys(group_ids))
    else:
        committed = {}
        for group_id in group_ids:
            try:
                committed.update(admin.list_group_offsets({group_id: None}))
            except Exception as exc:  # one group's trouble is not the others'
                errors.append(f"{group_id}: {type(exc).__name__}: {exc}")
        group_ids = [g for g in group_ids if g in committed]
    online = {
        TopicPartition(t["name"], p["partition"]) for t in topics for p in t["partitions"] if p["leader"] is not None
    }
    wanted = {tp for offsets in committed.values() for tp in offsets if tp in online}
    ends = (
        admin.list_partition_offsets(dict.fromkeys(wanted, OffsetSpec.LATEST), timeout_ms=timeout_ms) if wanted else {}
    )
    out = []
    for group_id in group_ids:
        rows = []
        for tp, meta in sorted(committed.get(group_id, {}).items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            end = ends[tp].offset if tp in ends else None
            offset = meta.offset if meta.offset >= 0 else None
            rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": offset,
                    "log_end": end,
                    "lag": (end - offset) if end is not None and offset is not None else None,
                }
            )
        out.append({"group": group_id, "partitions": rows, "total_lag": sum(r["lag"] or 0 for r in rows)})
    return out


def summarise(topics: list[dict[str, Any]]) -> dict[str, int]:
    parts = [p for t in topics for p in t["partitions"]]
    return {
        "topics": len(topics),
        "partitions": len(parts),
        "under_replicated": sum(UNDER_REPLICATED in p["flags"] for p in parts),
        "offline": sum(OFFLINE in p["flags"] for p in parts),
    }


def _ids(values: list[int]) -> str:
    return ",".join(str(v) for v in values) or "-"


def render_text(report: dict[str, Any], color: bool = False) -> str:
    """The report as a fixed-width table; flagged partitions stand out (in red when color is on)."""

    def flag(text: str) -> str:
        return f"\033[1;31m{text}\033[0m" if color and text else text

    s = report["summary"]
    tls = any("certificate_expires" in b for b in report["brokers"])
    lines = [
        f"cluster {report['cluster_id']} ({report['mode']})  collected {report['collected_at']}",
        f"brokers: {len(report['brokers'])}   active controller: {report['active_controller']}   "
        f"topics: {s['topics']}   partitions: {s['partitions']}   "
        + flag(f"under-replicated: {s['under_replicated']}")
        + "   "
        + flag(f"offline: {s['offline']}"),
        "",
        f"{'broker':>6}  " + (f"{'address':<24}  certificate expires" if tls else "address"),
    ]
    for b in report["brokers"]:
        marker = "  (active controller)" if b["id"] == report["active_controller"] else ""
        address = f"{b['host']}:{b['port']}"
        if tls:
            address = f"{address:<24}  {b.get('certificate_expires', '')}"
        lines.append(f"{b['id']:>6}  {address}{marker}")
    lines += ["", f"{'topic':<28} {'part':>4} {'leader':>6}  {'replicas':<12} {'isr':<12} {'offline':<10} status"]
    for t in report["topics"]:
        for p in t["partitions"]:
            status = " ".join(p["flags"]) or "ok"
            leader = "none" if p["leader"] is None else str(p["leader"])
            lines.append(
                f"{t['name']:<28} {p['partition']:>4} {leader:>6}  {_ids(p['replicas']):<12} {_ids(p['isr']):<12} "
                f"{_ids(p['offline_replicas']):<10} " + (flag(status) if p["flags"] else status)
            )
    if report["groups"]:
        lines += ["", f"{'group':<28} {'topic':<24} {'part':>4} {'committed':>10} {'log-end':>10} {'lag':>8}"]
        for g in report["groups"]:
            for r in g["partitions"]:
                lines.append(
                    f"{g['group']:<28} {r['topic']:<24} {r['partition']:>4} {_num(r['committed']):>10} "
                    f"{_num(r['log_end']):>10} {_num(r['lag']):>8}"
                )
            lines.append(f"{g['group']:<28} {'total lag':<24} {'':>4} {'':>10} {'':>10} {g['total_lag']:>8}")
    else:
        lines += ["", "no consumer groups"]
    return "\n".join(lines) + "\n"


def _num(value: int | None) -> str:
    return "?" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.report", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...] of the brokers")
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this file")
    parser.add_argument("--text", type=Path, help="also write the text table to this file")
    parser.add_argument("--include-internal", action="store_true", help="show __consumer_offsets and friends")
    parser.add_argument(
        "--client-config", help="Kafka client properties (TLS, CA) for the brokers; default $KAFKALAB_CLIENT_CONFIG"
    )
    args = parser.parse_args(argv)
    try:
        kafka_client.use(args.client_config)
    except kafka_client.ClientConfigError as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 1
    report = collect(args.bootstrap, include_internal=args.include_internal)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.text:
        args.text.write_text(render_text(report))
    sys.stdout.write(render_text(report, color=sys.stdout.isatty()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
