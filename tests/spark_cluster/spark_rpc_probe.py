"""Connects to a Spark standalone master the way a worker or a driver does, with Spark's own RpcEnv and
SecurityManager (through PySpark's py4j gateway, on a Spark host, with the cluster's Python), and says whether
the master answered: once without spark.authenticate, once with a wrong secret, once with the secret in the
given spark-defaults.conf. Prints one JSON line {case: {"answered": bool, "error": str}}.

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


def read_secret(path: str) -> str:
    with open(path, encoding="utf-8") as defaults:
        lines = defaults.read().splitlines()
    for line in lines:
        name, _, value = line.strip().partition(" ")
        if name == "spark.authenticate.secret":
            return value.strip()
    raise SystemExit(f"{path} holds no spark.authenticate.secret")


def probe(jvm: Any, host: str, port: int, secret: str | None) -> dict[str, Any]:
    conf = jvm.org.apache.spark.SparkConf(False)
    conf.set("spark.authenticate", "true" if secret else "false")
    if secret:
        conf.set("spark.authenticate.secret", secret)
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
        cases = {"no_secret": None, "wrong_secret": WRONG_SECRET, "cluster_secret": read_secret(defaults)}
        print(json.dumps({name: probe(gateway.jvm, host, port, secret) for name, secret in cases.items()}))
    finally:
        gateway.shutdown()


if __name__ == "__main__":
    main()
