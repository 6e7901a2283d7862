"""The Spark standalone cluster model: which host runs the master, every Spark host's address, the master
URL the workers and jobs use, and who must reach which Spark port (the firewall role's input).

Built once per run on the controller by tasks/preflight.yml as the public fact `spark_cluster`; the
spark role's hosts and the spark_consumer role read it there. Pure functions over plain data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import SPARK_ADDRESS, host_address

# Spark's RPC security when the cluster authenticates: the shared secret's handshake (spark.authenticate), and
# every RPC connection encrypted with AES-GCM keyed from that handshake (spark.network.crypto: GCM also refuses
# altered bytes, where the older AES-CTR default does not), with no fallback to the unencrypted SASL handshake.
# The consumer job's Kafka login crosses from its driver to its executors over this RPC. The master, the workers
# (spark-defaults.conf) and the jobs (their spark-submit properties) hold the same settings; the secret goes
# beside them, never in the model.
RPC_SECURITY = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.cipher": "AES/GCM/NoPadding",
    "spark.network.crypto.saslFallback": "false",
}


def spark_cluster_model(
    hostvars: Mapping[str, Any], masters: Iterable[str], workers: Iterable[str], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """settings: master_port, master_webui_port, worker_webui_port, driver_ui_ports, shared_path, secret_file,
    worker_resources ({host: {"cores": spark_worker_cores, "memory": spark_worker_memory}} of each worker) and
    authenticate ({host: spark_authenticate} of each Spark host).

    Returns {"master": host or "", "master_address": str, "master_url": str, "addresses": {host: str},
    "workers": {host: {"cores": int, "memory_mb": int}}, "shared_path": str, "driver_ui_ports": [int],
    "webui_ports": {"master": int, "worker": int}, "authenticate": bool, "secret_file": str,
    "firewall_services": [service],
    "problems": [str]}; the master is the first host of the master group. shared_path is
    spark_shared_storage_path: a directory every Spark host sees at the same path. workers is what each worker
    offers to executors, for the jobs to size themselves from (spark_consumer).
    """
    masters, workers = list(masters), list(workers)
    members = list(dict.fromkeys([*masters, *workers]))
    # A Spark host always has an address: the inventory name itself is the last resort, as Ansible connects.
    addresses = {h: str(host_address(hostvars, h, SPARK_ADDRESS, bare_names=True)) for h in members}
    master = masters[0] if masters else ""
    master_address = addresses.get(master, "")
    problems = []
    if len(masters) > 1:
        problems.append(
            f"group spark_master has {len(masters)} hosts ({', '.join(masters)}): a standalone Spark cluster has one "
            "master. Keep one host in spark_master (spark_master_group)."
        )
    if masters and not workers:
        problems.append(
            f"group spark_master has {master} but group spark_worker is empty: no executor could run the job. Put "
            "at least one host in spark_worker (spark_worker_group); the master's host may be one."
        )
    if workers and not masters:
        problems.append(
            f"group spark_worker has hosts ({', '.join(workers)}) but group spark_master is empty: the workers would "
            "have no master. Put one host in spark_master (spark_master_group)."
        )
    shared_path = str(settings.get("shared_path") or "").rstrip("/")
    if len(members) > 1 and not shared_path:
        problems.append(
            f"the Spark cluster has {len(members)} hosts ({', '.join(members)}) but spark_shared_storage_path is "
            "empty: executors on every host write the job's output and checkpoints, so those must be on storage "
            "every Spark host mounts at the same path. Set spark_shared_storage_path to that mount point (and "
            "spark_shared_storage_mount to have the role mount it, e.g. NFS), or keep one host in the spark groups."
        )
    elif shared_path and not shared_path.startswith("/"):
        problems.append(
            f"spark_shared_storage_path {shared_path!r} is not an absolute path: give the mount point every Spark "
            "host shares, e.g. /srv/spark-shared."
        )
    resources, resource_problems = worker_resources(workers, settings.get("worker_resources") or {})
    problems.extend(resource_problems)
    authenticate = {h: bool(v) for h, v in (settings.get("authenticate") or {}).items() if h in members}
    authenticated = all(authenticate.values()) if authenticate else True
    if len(set(authenticate.values())) > 1:
        off = sorted(h for h, on in authenticate.items() if not on)
        problems.append(
            f"spark_authenticate is false on {', '.join(off)} but true on the other Spark hosts: a worker or job "
            "without the shared secret cannot talk to a master that asks for it, and the other way round. Set "
            "spark_authenticate once for the whole Spark cluster (group_vars/all or group_vars/spark)."
        )
    return {
        "problems": problems,
        "workers": resources,
        "driver_ui_ports": [int(port) for port in settings.get("driver_ui_ports") or []],
        # Where the master's and the workers' web UIs (and their /metrics/.../prometheus) listen.
        "webui_ports": {
            "master": int(settings.get("master_webui_port") or 0),
            "worker": int(settings.get("worker_webui_port") or 0),
        },
        "shared_path": shared_path,
        # spark.authenticate on the master, the workers and the jobs; the controller file holding the generated
        # secret when the inventory gives none (spark_authenticate_secret). Never the secret itself.
        "authenticate": authenticated,
        # The RPC properties that go with it (RPC_SECURITY), for spark-defaults.conf and the jobs' properties.
        "rpc_security": dict(RPC_SECURITY) if authenticated else {"spark.authenticate": "false"},
        "secret_file": str(settings.get("secret_file") or ""),
        "master": master,
        "master_address": master_address,
        "master_url": f"spark://{master_address}:{settings.get('master_port')}" if master else "",
        "addresses": addresses,
        "firewall_services": spark_firewall_services(masters[:1], workers, settings),
    }


# Spark's memory strings (--memory, spark.executor.memory): a number and a unit; no unit means MiB.
_MEMORY_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}


def memory_mb(text: Any) -> int | None:
    """MiB of a Spark memory string ("2g", "768m", "1024"), or None when it is not one."""
    match = _MEMORY_RE.match(str(text))
    if match is None:
        return None
    return int(int(match.group(1)) * _MIB_PER_UNIT[match.group(2).lower()])


def worker_resources(
    workers: Iterable[str], declared: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """What each worker offers to executors, as numbers, and a problem for each value that cannot be one.
    A worker the settings say nothing of is left out (the role always declares every worker)."""
    resources: dict[str, dict[str, int]] = {}
    problems = []
    for host in workers:
        if host not in declared:
            continue
        values = declared[host] or {}
        cores, memory = values.get("cores"), memory_mb(values.get("memory"))
        if isinstance(cores, bool) or not str(cores).isdigit() or int(str(cores)) < 1:
            problems.append(
                f"{host}: spark_worker_cores is {cores!r}: give the number of cores the worker offers to executors, "
                "a whole number of at least 1 (e.g. spark_worker_cores: 8)."
            )
            continue
        if memory is None or memory < 512:
            problems.append(
                f"{host}: spark_worker_memory is {values.get('memory')!r}: give the memory the worker offers to "
                "executors as a Spark size of at least 512m (e.g. spark_worker_memory: 24g)."
            )
            continue
        resources[host] = {"cores": int(str(cores)), "memory_mb": memory}
    return resources, problems


def spark_firewall_services(
    masters: Iterable[str], workers: Iterable[str], settings: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Spark hosts talk to each other on ports Spark picks at run time (driver, block managers, shuffle),
    so each Spark host accepts any TCP port from the other Spark hosts, and nothing from elsewhere but the
    web UIs, which are open to the monitoring networks."""
    masters, workers = list(masters), list(workers)
    members = list(dict.fromkeys([*masters, *workers]))
    if not members:
        return []
    services: list[dict[str, Any]] = [{"name": "spark peers", "hosts": members, "port": "", "from_hosts": members}]
    ui = [
        ("spark master ui", masters, settings.get("master_webui_port")),
        ("spark worker ui", workers, settings.get("worker_webui_port")),
    ]
    # The consumer job's drivers (the archive and the low-latency path) run on the master host, each with
    # its own UI port.
    ui += [("spark job ui", masters[:1], port) for port in settings.get("driver_ui_ports") or []]
    for name, hosts, port in ui:
        if hosts and port:
            services.append({"name": name, "hosts": hosts, "port": port, "from_networks": ["monitoring"]})
    return services


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"spark_cluster_model": spark_cluster_model}
