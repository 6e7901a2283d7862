"""kafka_scram_login: a kafka_users user's SCRAM-SHA-512 login as Kafka client properties (module_utils/scram.py).

`kafka_users | kafkalab.kafka.kafka_scram_login('monitor')` -> {security.protocol: SASL_SSL, sasl.mechanism,
sasl.jaas.config}. It holds the password: only in no_log tasks, into files of mode 0600 or 0640.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.scram import scram_login


def kafka_scram_login(users: Any, name: Any) -> dict[str, str]:
    return scram_login(users, name)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"kafka_scram_login": kafka_scram_login}
