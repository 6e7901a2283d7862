"""What a Kafka node's files say it is.

- kafka_stage: what its server.properties makes it run (zookeeper, migration, kraft, none). Playbooks and tests ask
  the same function the migration module asks (module_utils/properties.py).
- kafka_meta_identities: which node and cluster its log dirs were formatted for (each one's meta.properties).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage, parse_properties


def kafka_meta_identities(content: Mapping[str, str | None]) -> list[dict[str, str]]:
    """meta.properties path -> its text (None: absent; kafkalab.kafka.node_files' content) to the identity of each
    present one: its path, cluster.id ('' in a ZooKeeper-mode broker's, where ZooKeeper keeps it) and node.id
    (broker.id in ZooKeeper mode; '' if neither), in path order."""
    identities = []
    for path, text in sorted(content.items()):
        if text is None:
            continue
        props = parse_properties(text)
        identities.append(
            {
                "path": path,
                "cluster_id": props.get("cluster.id", ""),
                "node_id": props.get("node.id", props.get("broker.id", "")),
            }
        )
    return identities


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"kafka_stage": kafka_stage, "kafka_meta_identities": kafka_meta_identities}
