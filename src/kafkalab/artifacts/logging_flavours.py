"""Kafka release lines and how each logs: log4j2 for 4.x, slf4j 1 with reload4j (log4j 1 API) for 3.x.

The lock records a flavour by name; the distribution ships that flavour's config files and JVM option.
"""

from __future__ import annotations

import dataclasses

from kafkalab.artifacts.errors import ArtifactError


def major_version(version: str) -> int:
    head = version.split(".", 1)[0]
    if not head.isdigit():
        raise ArtifactError(f"not a Kafka version: {version!r} (expected something like 4.3.1)")
    return int(head)


def logging_for(kafka_version: str) -> str:
    """Kafka 4 logs through log4j2; 3.x through slf4j 1 and reload4j (log4j 1 API)."""
    return "log4j2" if major_version(kafka_version) >= 4 else "log4j1"


@dataclasses.dataclass(frozen=True)
class LoggingFlavour:
    """How a Kafka release line logs: which config files the distribution ships and how the JVM finds them."""

    name: str
    template_dir: str
    server_config: str
    tools_config: str
    system_property: str  # -D<property>=<value prefix><path>
    value_prefix: str

    def jvm_option(self, config_file: str) -> str:
        return f"-D{self.system_property}={self.value_prefix}${{base_dir}}/config/{config_file}"


LOGGING_FLAVOURS = {
    "log4j2": LoggingFlavour(
        "log4j2", "config/log4j2", "log4j2.xml", "tools-log4j2.xml", "log4j2.configurationFile", ""
    ),
    "log4j1": LoggingFlavour(
        "log4j1",
        "config/log4j1",
        "log4j.properties",
        "tools-log4j.properties",
        "log4j.configuration",
        "file:",
    ),
}
