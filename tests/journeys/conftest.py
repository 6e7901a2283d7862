"""The day-2 journeys: ordered tests that change a disposable cluster (molecule's scenarios, or the lab) the way an
operator does, and check what must and must not happen. Each module is one journey; its tests run in file order
and each leaves the cluster as the next one expects. They reach hosts and the inventory as the cluster suite
does (tests/inventory_hosts.py): MOLECULE_INVENTORY_FILE under molecule, KAFKALAB_INVENTORY for the lab.
"""

from __future__ import annotations

import pytest
from inventory_hosts import CHANGES_CLUSTER, skip_unless_disposable


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", CHANGES_CLUSTER)


def pytest_runtest_setup(item: pytest.Item) -> None:
    skip_unless_disposable(item)
