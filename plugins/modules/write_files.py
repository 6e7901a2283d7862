#!/usr/bin/python
"""Ansible module: several small text files of a node written in one round trip, each only when it would change."""

from __future__ import annotations

DOCUMENTATION = r"""
module: write_files
short_description: A node's directories, small text files and links in one call, each only when it would change
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Made for a role's directories and configuration files, rendered on the controller (the C(template) lookup) and
    written by one module call instead of a file, template or copy task each, which costs a round trip to the host
    for each (about a second per file and run over the lab's hosts, measured in docs/measurements.md).
  - Directories come first (O(directories), in the order given, with missing parents made root-owned 0755), then
    the files, then the links.
  - Each file is replaced atomically (a temporary file in the same directory, renamed over it) and only when its
    content, owner, group or mode would change, so a run that changes nothing writes nothing and a reader never
    sees half a file. The directories must exist.
  - Check mode reports what would change without writing. Diff mode shows each changed file of O(files) before and
    after; a file of O(hidden_files) is never shown, and its content is hidden from the task's output and logs.
options:
  directories:
    description: Directories to create, or whose owner, group or mode to put right.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory.
        type: path
        required: true
      owner:
        description: Its owner (V('') the user the module runs as).
        type: str
        default: root
      group:
        description: Its group (V('') that user's group).
        type: str
        default: root
      mode:
        description: Its permission bits, in octal (V(0750)).
        type: str
        required: true
  links:
    description: Symbolic links to create or point elsewhere (replaced atomically).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The link.
        type: path
        required: true
      target:
        description: What it points at.
        type: path
        required: true
  files:
    description: The files whose content may be shown (diff mode, the task's output).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the file goes.
        type: path
        required: true
      content:
        description: Its whole text.
        type: str
        required: true
      owner:
        description: Its owner (V('') the user the module runs as).
        type: str
        default: root
      group:
        description: Its group (V('') that user's group).
        type: str
        default: root
      mode:
        description: Its permission bits, in octal (V(0640)).
        type: str
        required: true
      validate:
        description:
          - A command that checks the new content before it replaces the file, C(%s) standing for a temporary copy
            in the file's directory (as the template module's O(ansible.builtin.template#module:validate)). When it
            fails the file stays as it was and the task fails with its output; the files after it are not written.
          - Not run in check mode, which writes nothing.
        type: str
        default: ""
  hidden_files:
    description: Files holding secrets (passwords, keys); their content is never shown.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the file goes.
        type: path
        required: true
      content:
        description: Its whole text (hidden from the output).
        type: str
        required: true
      owner:
        description: Its owner (V('') the user the module runs as).
        type: str
        default: root
      group:
        description: Its group (V('') that user's group).
        type: str
        default: root
      mode:
        description: Its permission bits, in octal (V(0600)).
        type: str
        required: true
"""

EXAMPLES = r"""
- name: Write the node's configuration files
  kafkalab.kafka.write_files:
    files:
      - path: /etc/kafka/server.properties
        content: "{{ lookup('ansible.builtin.template', 'server.properties.j2') }}"
        group: kafka
        mode: "0640"
      - path: /etc/prometheus/prometheus.yml
        content: "{{ lookup('ansible.builtin.template', 'prometheus.yml.j2') }}"
        group: prometheus
        mode: "0640"
        validate: promtool check config --syntax-only %s
    hidden_files:
      - path: /etc/kafka/secrets.properties
        content: "password={{ broker_password }}"
        group: kafka
        mode: "0640"
"""

RETURN = r"""
written:
  description: The paths created, written or put right (or, in check mode, that would be), in the order given.
  returned: always
  type: list
  elements: str
"""

import grp
import os
import pwd
import shlex
from collections.abc import Callable

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.atomic_file import (
    owned_as,
    read_text,
    write_atomically,
)

_FILE = {
    "path": {"type": "path", "required": True},
    "content": {"type": "str", "required": True},
    "owner": {"type": "str", "default": "root"},
    "group": {"type": "str", "default": "root"},
    "mode": {"type": "str", "required": True},
}


def _ids(module: AnsibleModule, wanted: dict[str, str]) -> tuple[int, int, int]:
    # '' is whoever runs the module: a file on the controller machine, written as its operator (become: false).
    try:
        uid = pwd.getpwnam(wanted["owner"]).pw_uid if wanted["owner"] else os.geteuid()
    except KeyError:
        module.fail_json(msg=f"write_files: {wanted['path']}: user {wanted['owner']!r} does not exist on this host")
    try:
        gid = grp.getgrnam(wanted["group"]).gr_gid if wanted["group"] else os.getegid()
    except KeyError:
        module.fail_json(msg=f"write_files: {wanted['path']}: group {wanted['group']!r} does not exist on this host")
    try:
        mode = int(wanted["mode"], 8)
    except ValueError:
        module.fail_json(msg=f"write_files: {wanted['path']}: mode {wanted['mode']!r} is not octal (e.g. 0640)")
    return uid, gid, mode


def _directory(module: AnsibleModule, wanted: dict[str, str]) -> dict[str, str] | None:
    """Create the directory or put its owner, group and mode right; the diff, or None when it was as wanted."""
    path = wanted["path"]
    uid, gid, mode = _ids(module, wanted)
    shown = f"directory {wanted['owner']}:{wanted['group']} {wanted['mode']}\n"
    if os.path.lexists(path):
        if not os.path.isdir(path) or os.path.islink(path):
            module.fail_json(msg=f"write_files: {path} exists and is not a directory; move it away and run again")
        if owned_as(path, uid, gid, mode, directory=True):
            return None
        status = os.stat(path)
        before = f"directory {status.st_uid}:{status.st_gid} {oct(status.st_mode & 0o7777)}\n"
    else:
        before = ""
    if not module.check_mode:
        os.makedirs(path, mode=0o755, exist_ok=True)
        os.chown(path, uid, gid)
        os.chmod(path, mode)
    return {"before_header": path, "after_header": path, "before": before, "after": shown}


def _link(module: AnsibleModule, wanted: dict[str, str]) -> dict[str, str] | None:
    """Point the link at its target (a new link renamed over the old one); the diff, or None when it did already."""
    path, target = wanted["path"], wanted["target"]
    before = os.readlink(path) if os.path.islink(path) else None
    if before == target:
        return None
    if before is None and os.path.isdir(path):
        module.fail_json(msg=f"write_files: {path} is a directory, not a link; move it away and run again")
    if not module.check_mode:
        temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.link")
        os.symlink(target, temporary)
        os.replace(temporary, path)
    return {
        "before_header": path,
        "after_header": path,
        "before": f"-> {before}\n" if before else "",
        "after": f"-> {target}\n",
    }


def _validator(module: AnsibleModule, path: str, command: str) -> Callable[[str], None] | None:
    """The file's validate command as write_atomically's check: it fails the task, naming the file and the output."""
    if not command:
        return None
    if "%s" not in command:
        module.fail_json(msg=f"write_files: {path}: validate {command!r} has no %s for the file to check")

    def check(temporary: str) -> None:
        rc, out, err = module.run_command([part.replace("%s", temporary) for part in shlex.split(command)])
        if rc != 0:
            said = (out + err).replace(temporary, path).strip()
            # (the message names the file, not the temporary copy)
            module.fail_json(
                msg=f"write_files: {path}: the new content fails {command!r} (rc {rc}); not written. {said}"
            )

    return check


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "directories": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {key: spec for key, spec in _FILE.items() if key != "content"},
            },
            "links": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {"path": {"type": "path", "required": True}, "target": {"type": "path", "required": True}},
            },
            "files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {**_FILE, "validate": {"type": "str", "default": ""}},
            },
            "hidden_files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {**_FILE, "content": {"type": "str", "required": True, "no_log": True}},
            },
        },
        supports_check_mode=True,
    )
    written, diffs = [], []
    for wanted in module.params["directories"]:
        diff = _directory(module, wanted)
        if diff:
            written.append(wanted["path"])
            diffs.append(diff)
    shown = [(item, False) for item in module.params["files"]]
    hidden = [(item, True) for item in module.params["hidden_files"]]
    for wanted, secret in shown + hidden:
        path, content = wanted["path"], wanted["content"]
        uid, gid, mode = _ids(module, wanted)
        before = read_text(path)
        if before == content and owned_as(path, uid, gid, mode):
            continue
        written.append(path)
        if secret:
            diffs.append({"before_header": path, "after_header": f"{path} (content not shown)"})
        else:
            diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": content})
        if not module.check_mode:
            write_atomically(path, content, uid, gid, mode, _validator(module, path, wanted.get("validate") or ""))
    for wanted in module.params["links"]:
        diff = _link(module, wanted)
        if diff:
            written.append(wanted["path"])
            diffs.append(diff)
    module.exit_json(changed=bool(written), written=written, diff=diffs)


if __name__ == "__main__":
    main()
