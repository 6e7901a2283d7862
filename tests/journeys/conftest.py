"""The day-2 journeys: ordered tests that change a disposable cluster (molecule's scenarios, or the lab) the way an
operator does, and check what must and must not happen. Each module is one journey; its tests run in file order
and each leaves the cluster as the next one expects. They reach hosts and the inventory as the cluster suite
does (tests/inventory_hosts.py): MOLECULE_INVENTORY_FILE under molecule, KAFKALAB_INVENTORY for the lab.

Run with a cluster suite (molecule's verify step), the journeys go first, so the suite checks the cluster they
leave; a journey marked after_the_suite goes last, because it leaves the cluster where the suite does not look
(the ZooKeeper journey's migration to KRaft, which the suite would compare with the inventory's kafka_mode).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inventory_hosts import CHANGES_CLUSTER, skip_unless_disposable

HERE = Path(__file__).resolve().parent
AFTER_THE_SUITE = (
    "after_the_suite: a journey that runs after the cluster suite (it leaves the cluster where the suite does not look)"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", CHANGES_CLUSTER)
    config.addinivalue_line("markers", AFTER_THE_SUITE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Journeys first, in the order given; those marked after_the_suite last; the rest keeps its order between."""

    def place(item: pytest.Item) -> int:
        if HERE not in Path(item.path).resolve().parents:
            return 1
        return 2 if item.get_closest_marker("after_the_suite") else 0

    items.sort(key=place)


def pytest_runtest_setup(item: pytest.Item) -> None:
    skip_unless_disposable(item)
