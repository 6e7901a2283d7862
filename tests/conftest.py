"""Shared pytest setup: the repository root and importable role plugins and module_utils."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Role filter plugins are plain modules; tests import them directly to test the pure logic.
sys.path.insert(0, str(ROOT / "roles" / "kafka" / "filter_plugins"))
sys.path.insert(0, str(ROOT / "roles" / "zookeeper" / "filter_plugins"))
sys.path.insert(0, str(ROOT / "roles" / "firewall" / "filter_plugins"))
sys.path.insert(0, str(ROOT / "roles" / "spark" / "filter_plugins"))
sys.path.insert(0, str(ROOT / "roles" / "spark_consumer" / "filter_plugins"))
sys.path.insert(0, str(ROOT / "roles" / "prometheus" / "filter_plugins"))
# zk4lw is a script the zookeeper role installs on its hosts; the suites import its pure functions.
sys.path.insert(0, str(ROOT / "roles" / "zookeeper" / "files"))
sys.path.insert(0, str(ROOT / "roles" / "kafka_topics" / "module_utils"))
sys.path.insert(0, str(ROOT / "roles" / "kafka" / "module_utils"))
# The kafka role's modules (kafka_dynamic_configs' pure plan and parser).
sys.path.insert(0, str(ROOT / "roles" / "kafka" / "library"))
# inventory_hosts: the inventory helpers both cluster suites (tests/cluster, tests/spark_cluster) share.
sys.path.insert(0, str(ROOT / "tests"))
# The Spark job's package (its metrics exporter names what the dashboards may select).
sys.path.insert(0, str(ROOT / "spark" / "src"))
