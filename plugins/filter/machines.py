"""machine_firsts: the first inventory host on each machine, for the work a machine does once (packages, ufw)
when several inventory hosts reach it (one Kafka instance each, kafka_instance). inventory_folder: the folder
of the first inventory source, where the controller keeps what belongs to this cluster and never to git (the
project CA in .pki, generated secrets in .secrets)."""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import machine_firsts


def _machine_firsts(hosts: Any, hostvars: Any) -> list[str]:
    return machine_firsts(hostvars, list(hosts))


def inventory_folder(sources: Any) -> str:
    """ansible_inventory_sources' first source itself when it is a folder, else the folder it is in."""
    first = str(next(iter(sources))).rstrip("/") or "/"
    return first if os.path.isdir(first) else os.path.dirname(first)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"machine_firsts": _machine_firsts, "inventory_folder": inventory_folder}
