"""machine_firsts: the first inventory host on each machine, for the work a machine does once (packages, ufw)
when several inventory hosts reach it (one Kafka instance each, kafka_instance)."""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.inventory import machine_firsts


def _machine_firsts(hosts: Any, hostvars: Any) -> list[str]:
    return machine_firsts(hostvars, list(hosts))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"machine_firsts": _machine_firsts}
