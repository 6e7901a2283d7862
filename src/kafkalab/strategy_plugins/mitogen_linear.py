"""Ansible strategy `mitogen_linear` (ansible.cfg): Ansible's linear strategy, its tasks run over Mitogen's
connections where the host is reached by SSH or locally.

Mitogen (pinned in pyproject.toml, so in the project's venv) keeps one Python interpreter per host for the whole run
and sends each task's module to it, where plain Ansible starts Python on the host and unpacks the module for every
task. The plays, their order, the tasks' results, no_log and check mode are Ansible's own; only how a module reaches
the host changes. docs/measurements.md ("Ansible's cost per task") has the paired figures.

This file only finds Mitogen's own strategy where the venv installed it, so that ansible.cfg does not name a path
inside the venv, and adds:
- Hosts reached through `community.docker.docker` (molecule's docker driver) keep that connection: Mitogen does not
  take it over by that name, and handed to Mitogen's docker connection a no-op site.yml on the default scenario
  took longer (median 66.0 s against 59.2 s, docs/measurements.md), where over SSH it took a quarter less.
- A local connection's user is the user running Ansible, as Ansible's own local connection says: so `become` to
  that same user (root running the plays on the controller) needs no sudo, as under plain Ansible
  (become_allow_same_user), where Mitogen would start sudo, which a controller may not have.
- Without Mitogen (an ansible-playbook from outside the venv), this is plain `linear`, and says so once.
"""

from __future__ import annotations

import getpass
from typing import Any

from ansible.utils.display import Display

try:
    import ansible_mitogen.strategy as _mitogen
    import ansible_mitogen.transport_config as _transport
except ImportError:  # not the project's venv
    _mitogen = None

from ansible.plugins.strategy.linear import StrategyModule as _Linear

if _mitogen is None:

    class StrategyModule(_Linear):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            Display().warning(
                "strategy mitogen_linear: the mitogen package is not installed in this Python (make venv installs "
                "it), so this run uses Ansible's plain linear strategy: the same tasks, only slower."
            )
            super().__init__(*args, **kwargs)

else:
    _remote_user = _transport.PlayContextSpec.remote_user

    def _local_user(self: Any) -> Any:
        user = _remote_user(self)
        return user if user or self.transport() != "local" else getpass.getuser()

    _transport.PlayContextSpec.remote_user = _local_user

    class StrategyModule(_mitogen.StrategyMixin, _Linear):  # type: ignore[misc,no-redef]
        """Mitogen's mitogen_linear, as its own plugin file defines it."""
