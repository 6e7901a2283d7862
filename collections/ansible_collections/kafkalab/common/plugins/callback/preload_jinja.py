"""Load every Jinja filter and test once, in the ansible-playbook process, before it forks a task's workers.

Ansible runs each task on each host in a worker process forked from ansible-playbook. The filters and tests
that do not come from a collection (ansible.builtin's, and every role's filter_plugins) are loaded on first
use into a cache of the process that uses them; ansible-playbook itself seldom templates anything, so that
cache stays empty there and every worker imports all of those plugin files again, for every task on every
host. Filling the cache in ansible-playbook at each task start makes the workers inherit it with the fork.
A role whose filter_plugins directory joins the search path later (include_role) empties the cache; the next
task start fills it again, so a worker never sees less than it would have loaded itself.

On a no-op run of the default scenario's site.yml this took a third off the controller's CPU time and a tenth
off the run (docs/measurements.md, "Ansible's own cost per task").
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader

DOCUMENTATION = r"""
name: preload_jinja
type: aggregate
short_description: Load the Jinja filters and tests in ansible-playbook before a task's workers fork
description:
  - At each task start, fills the filter and test loaders' cache in the ansible-playbook process (a no-op
    when it is already full), so the forked workers inherit it instead of each importing every plugin file.
  - Changes no result and prints nothing.
requirements:
  - enable in ansible.cfg (callbacks_enabled)
"""


class CallbackModule(CallbackBase):  # type: ignore[misc]  # ansible-core ships no type information
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kafkalab.common.preload_jinja"
    CALLBACK_NEEDS_ENABLED = True

    @staticmethod
    def _preload() -> None:
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._preload()

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._preload()
