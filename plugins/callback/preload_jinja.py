"""Load every Jinja filter and test once, in the ansible-playbook process, before it forks a task's workers.

Ansible runs each task on each host in a worker process forked from ansible-playbook. The filters and tests
that do not come from a collection (ansible.builtin's, and every role's filter_plugins) are loaded on first
use into a cache of the process that uses them; ansible-playbook itself seldom templates anything, so that
cache stays empty there and every worker imports all of those plugin files again, for every task on every
host. Filling the cache in ansible-playbook at each task start makes the workers inherit it with the fork.
A role whose filter_plugins directory joins the search path later (include_role) empties the cache; the next
task start fills it again, so a worker never sees less than it would have loaded itself.

A collection's filters and tests (this collection's: kafkalab.kafka.*) are found by their fully qualified names,
each worker importing the collection's plugin files as it resolves one. Resolving a name the collection lacks
makes ansible-playbook import all of them once; the workers find them in the sys.modules they inherit.

On a no-op run of the default scenario's site.yml this took a third off the controller's CPU time and a tenth
off the run (docs/measurements.md, "Ansible's own cost per task").
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload_jinja
type: aggregate
short_description: Load the Jinja filters and tests in ansible-playbook before a task's workers fork
description:
  - At each task start, fills the filter and test loaders' cache in the ansible-playbook process (a no-op
    when it is already full), so the forked workers inherit it instead of each importing every plugin file.
  - Changes no result and prints nothing.
  - The filters and tests of the collections named in O(collections) are imported once, at the first task.
requirements:
  - enable in ansible.cfg (callbacks_enabled)
options:
  collections:
    description: Collections whose filter and test plugin files ansible-playbook imports before the workers fork.
    type: list
    elements: str
    default: [kafkalab.kafka]
    env:
      - name: KAFKALAB_PRELOAD_COLLECTIONS
    ini:
      - section: callback_preload_jinja
        key: collections
"""

import contextlib
from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader


class CallbackModule(CallbackBase):  # type: ignore[misc]  # ansible-core ships no type information
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kafkalab.kafka.preload_jinja"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._collections_loaded = False

    def _preload(self) -> None:
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass
        if not self._collections_loaded:
            self._collections_loaded = True
            for collection in self.get_option("collections"):
                for loader in (filter_loader, test_loader):
                    # No plugin has this name: the loader goes through, and imports, every file of the collection's
                    # plugin folder (ansible-core 2.19 plugins/loader.py, Jinja2Loader.get_with_context). A collection
                    # without such a folder raises, and there is nothing to load.
                    with contextlib.suppress(KeyError, AnsibleError):
                        loader.get(f"{collection}.__kafkalab_preload__")

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._preload()

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._preload()
