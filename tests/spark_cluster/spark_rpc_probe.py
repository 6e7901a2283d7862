"""Connects to a Spark standalone master the way a worker or a driver does, with Spark's own RpcEnv and
SecurityManager (through PySpark's py4j gateway, on a Spark host, with the cluster's Python), and says whether
the master answered: once without spark.authenticate, once with a wrong secret, once with the RPC settings and
the secret of the given spark-defaults.conf, and, when those encrypt (spark.network.crypto.enabled), once with
the right secret but unencrypted (Spark's SASL handshake, which a master with no SASL fallback must refuse).
Prints one JSON line {case: {"answered": bool, "error": str}}.

Copied to a Spark host and run there by tests/spark_cluster/test_spark_security.py:
    python spark_rpc_probe.py <master address> <master port> <spark-defaults.conf>
"""

from __future__ import annotations

import json
import sys
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.java_gateway import launch_gateway

WRONG_SECRET = "not-the-cluster-secret-" + "x" * 41


def read_rpc_settings(path: str) -> dict[str, str]:
    """The spark.authenticate* and spark.network.crypto.* lines of a spark-defaults.conf."""
    with open(path, encoding="utf-8") as defaults:
        lines = defaults.read().splitlines()
    found = {}
    for line in lines:
        name, _, value = line.strip().partition(" ")
        if name.startswith(("spark.authenticate", "spark.network.crypto.")):
            found[name] = value.strip()
    if "spark.authenticate.secret" not in found:
        raise SystemExit(f"{path} holds no spark.authenticate.secret")
    return found


def probe(jvm: Any, host: str, port: int, settings: dict[str, str]) -> dict[str, Any]:
    conf = jvm.org.apache.spark.SparkConf(False)
    for name, value in settings.items():
        conf.set(name, value)
    # A refused connection fails at once; these bound a server that never answers.
    conf.set("spark.rpc.lookupTimeout", "15s")
    conf.set("spark.rpc.askTimeout", "15s")
    config = getattr(getattr(jvm.org.apache.spark.internal.config, "package$"), "MODULE$")
    none = getattr(getattr(jvm.scala, "None$"), "MODULE$")
    security = jvm.org.apache.spark.SecurityManager(conf, none, config.AUTH_SECRET_FILE())
    env = jvm.org.apache.spark.rpc.RpcEnv.create("kafkalab-probe", host, 0, conf, security, True)
    try:
        env.setupEndpointRef(jvm.org.apache.spark.rpc.RpcAddress(host, port), "Master")
        return {"answered": True, "error": ""}
    except Py4JJavaError as error:
        # Spark's exception wraps the transport's: the innermost cause says why.
        cause = error.java_exception
        while cause.getCause() is not None:
            cause = cause.getCause()
        return {"answered": False, "error": str(cause.toString()).splitlines()[0][:300]}
    finally:
        env.shutdown()


def main() -> None:
    host, port, defaults = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    gateway = launch_gateway()
    try:
        rpc = read_rpc_settings(defaults)
        cases = {
            "no_secret": {"spark.authenticate": "false"},
            "wrong_secret": {**rpc, "spark.authenticate.secret": WRONG_SECRET},
            "cluster_secret": rpc,
        }
        if rpc.get("spark.network.crypto.enabled") == "true":
            cases["unencrypted"] = {**rpc, "spark.network.crypto.enabled": "false"}
        print(json.dumps({name: probe(gateway.jvm, host, port, settings) for name, settings in cases.items()}))
    finally:
        gateway.shutdown()


if __name__ == "__main__":
    main()
