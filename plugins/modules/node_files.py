#!/usr/bin/python
"""Ansible module: several files of a node looked at in one round trip (read only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: node_files
short_description: Whether some files exist on a node, and the text of some of them, in one call
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Read only, in check mode too. Made for the host preflights, which look at several small files on every
    node in every run before anything changes; one call instead of a slurp or stat per file saves a round
    trip to the host for each (about a second per file and run over the lab's hosts).
  - A file that cannot be read (absent, a directory, no permission) is reported as absent or unread, never
    as an error; the checks that use the result decide what that means.
options:
  exists:
    description: Paths whose existence is reported.
    type: list
    elements: path
    default: []
  read:
    description: Small text files (UTF-8, at most max_bytes) whose content is returned.
    type: list
    elements: path
    default: []
  links:
    description: Paths whose target is reported when they are symbolic links (where a release's C(current) points).
    type: list
    elements: path
    default: []
  max_bytes:
    description: A file to read that is larger than this is reported as unread.
    type: int
    default: 1048576
"""

EXAMPLES = r"""
- name: Look at a node's files in one round trip
  kafkalab.kafka.node_files:
    exists: [/var/lib/kafka/meta.properties]
    read: [/etc/kafka/server.properties]
    links: [/opt/kafka/current]
  register: found
"""

RETURN = r"""
exists:
  description: Path -> whether it exists (any kind of file).
  returned: always
  type: dict
content:
  description: Path -> its text, or null when it is absent, unreadable, not UTF-8 or too large.
  returned: always
  type: dict
links:
  description: Path -> the absolute path it resolves to (every link on the way followed), or null when it is no link.
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule


def _text(path: str, max_bytes: int) -> str | None:
    try:
        if os.path.getsize(path) > max_bytes:
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "exists": {"type": "list", "elements": "path", "default": []},
            "read": {"type": "list", "elements": "path", "default": []},
            "links": {"type": "list", "elements": "path", "default": []},
            "max_bytes": {"type": "int", "default": 1048576},
        },
        supports_check_mode=True,
    )
    exists = {path: os.path.lexists(path) for path in module.params["exists"]}
    content = {path: _text(path, module.params["max_bytes"]) for path in module.params["read"]}
    # (What the stat module reports as lnk_source.)
    links = {path: os.path.realpath(path) if os.path.islink(path) else None for path in module.params["links"]}
    module.exit_json(changed=False, exists=exists, content=content, links=links)


if __name__ == "__main__":
    main()
