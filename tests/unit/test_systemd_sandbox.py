"""The sandbox every service unit of this project gets (kafkalab.kafka.systemd_sandbox)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.kafkalab.kafka.plugins.filter.systemd import systemd_sandbox


def test_the_sandbox_lists_each_written_path_once_and_skips_missing_ones() -> None:
    paths = ["/var/lib/kafka/data", "/var/log/kafka/", "/var/lib/kafka/data", "/var/lib/kafka/data/2", "/srv/meta"]
    lines = systemd_sandbox(paths).splitlines()
    assert lines[-1] == "ReadWritePaths=-/var/lib/kafka/data -/var/log/kafka -/srv/meta"
    assert {"ProtectSystem=strict", "NoNewPrivileges=true", "CapabilityBoundingSet=", "UMask=0027"} <= set(lines)


@pytest.mark.parametrize("paths", [["var/lib/kafka"], ["/var/lib/my data"], []], ids=["relative", "space", "none"])
def test_a_path_systemd_would_misread_is_refused(paths: list[str]) -> None:
    with pytest.raises(AnsibleFilterError):
        systemd_sandbox(paths)
