"""The Spark standalone cluster model: which host runs the master, every Spark host's address, the master
URL the workers and jobs use, and who must reach which Spark port (the firewall role's input).

Built once per run on the controller by tasks/preflight.yml as the public fact `spark_cluster`; the
spark role's hosts and the spark_consumer role read it there. Pure functions over plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.inventory import SPARK_ADDRESS, host_address


def spark_cluster_model(
    hostvars: Mapping[str, Any], masters: Iterable[str], workers: Iterable[str], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """settings: master_port, master_webui_port, worker_webui_port, driver_ui_port, shared_path.

    Returns {"master": host or "", "master_address": str, "master_url": str, "addresses": {host: str},
    "shared_path": str, "firewall_services": [service], "problems": [str]}; the master is the first host of the
    master group. shared_path is spark_shared_storage_path: a directory every Spark host sees at the same path.
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
    return {
        "problems": problems,
        "shared_path": shared_path,
        "master": master,
        "master_address": master_address,
        "master_url": f"spark://{master_address}:{settings.get('master_port')}" if master else "",
        "addresses": addresses,
        "firewall_services": spark_firewall_services(masters[:1], workers, settings),
    }


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
        # The consumer job's driver runs on the master host.
        ("spark job ui", masters[:1], settings.get("driver_ui_port")),
    ]
    for name, hosts, port in ui:
        if hosts and port:
            services.append({"name": name, "hosts": hosts, "port": port, "from_networks": ["monitoring"]})
    return services


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"spark_cluster_model": spark_cluster_model}
