"""The one SCRAM-SHA-512 client login this project writes: a user of kafka_users and its password as the
properties a Kafka client reads (security.protocol, sasl.mechanism, sasl.jaas.config).

The brokers' server properties (roles/kafka filter_plugins/kafka_sasl.py), the admin tools' and the controller
machine's client settings (the admin's login), the lag exporter's (roles/prometheus) and the Spark job's
(roles/spark_consumer) all come from here; src/kafkalab/kafka_client.py reads such a login back. Whatever holds
the result holds a password: write it 0600 or 0640 to the client's group, in a no_log task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MECHANISM = "SCRAM-SHA-512"
LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def jaas(user: str, password: str) -> str:
    """A JAAS login entry (sasl.jaas.config's value). The preflight allows no '"' or '\\' in names or
    passwords (kafka_sasl.PASSWORD, USER_NAME), so nothing here needs quoting."""
    return f'{LOGIN_MODULE} required username="{user}" password="{password}";'


def password_of(users: Any, name: str) -> str:
    """The password kafka_users gives user `name` ('' when it declares none)."""
    for item in users or []:
        if isinstance(item, Mapping) and str(item.get("name")) == name:
            return str(item.get("password") or "")
    return ""


def scram_login(users: Any, name: Any) -> dict[str, str]:
    """The client properties of user `name` of kafka_users logging in over SASL_SSL (TLS settings go beside)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": MECHANISM,
        "sasl.jaas.config": jaas(str(name), password_of(users, str(name))),
    }
