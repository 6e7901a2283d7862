"""kafka_stage: what a Kafka node's server.properties makes it run (zookeeper, migration, kraft, none).

Playbooks and tests ask the same function the migration module asks (module_utils/properties.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"kafka_stage": kafka_stage}
