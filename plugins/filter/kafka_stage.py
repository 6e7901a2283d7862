"""What a Kafka node's files say it is.

- kafka_stage: what its server.properties makes it run (zookeeper, migration, kraft, none). Playbooks and tests ask
  the same function the migration module asks (module_utils/properties.py).
- kafka_meta_identities: which node and cluster its log dirs were formatted for (each one's meta.properties).
- account_ready: whether /etc/passwd and /etc/group already hold the service's user as the role makes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.properties import kafka_stage, parse_properties


def kafka_meta_identities(content: Mapping[str, str | None], paths: Iterable[str]) -> list[dict[str, str]]:
    """The identity of each of the log dirs' meta.properties `paths` that `content` (path -> its text, None: absent;
    kafkalab.kafka.node_files' content, which may hold other files too) has: its path, cluster.id ('' in a
    ZooKeeper-mode broker's, where ZooKeeper keeps it) and node.id (broker.id in ZooKeeper mode; '' if neither), in
    path order."""
    identities = []
    for path in sorted(set(paths)):
        text = content.get(path)
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


def account_ready(passwd: str | None, group_file: str | None, user: str, group: str, home: str, shell: str) -> bool:
    """Whether the group exists and the user has it as primary group, with this home and shell (what the group and
    user modules would put right); False when either file is unread (None)."""
    groups = [line.split(":") for line in (group_file or "").splitlines()]
    gid = next((fields[2] for fields in groups if len(fields) >= 3 and fields[0] == group), None)
    users = [line.split(":") for line in (passwd or "").splitlines()]
    entry = next((fields for fields in users if len(fields) == 7 and fields[0] == user), None)
    return gid is not None and entry is not None and (entry[3], entry[5], entry[6]) == (gid, home, shell)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "kafka_stage": kafka_stage,
            "kafka_meta_identities": kafka_meta_identities,
            "account_ready": account_ready,
        }
