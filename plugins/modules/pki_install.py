#!/usr/bin/python
"""Ansible module: a node's certificate, the CAs it trusts and its PEM key store, written in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: pki_install
short_description: Install a node's certificate and CAs, and join its key and certificate into the key store
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Writes the node's certificate (O(certificate_name)) and the CA certificates it trusts (C(ca.pem)), both
    C(root:<group>) 0644, then joins the node's key (C(key.pem), made on the node and never sent anywhere) and the
    certificate into the PEM key store a service reads (O(bundle_name)), C(root:<group>) 0640.
  - Each file is replaced atomically (a temporary file in the same directory, renamed over it) and only when its
    content, owner, group or mode would change, so a run that changes nothing writes nothing and a reader never
    sees half a file.
  - An empty O(certificate) or O(ca) leaves that file (and, for the certificate, the key store) as it is (check
    mode on a first run has no certificate yet). The key store is left alone while the node has no C(key.pem).
  - Check mode reports what would change without writing; diff mode shows the certificate's and the CAs' text
    (public), never the key store's (it holds the key).
options:
  dir:
    description: The node's TLS directory (it exists; the caller made it root:<group> 0750).
    type: path
    required: true
  group:
    description: The group that reads the files (the service's).
    type: str
    required: true
  certificate:
    description: The certificate's PEM text (the chain after it, if any).
    type: str
    default: ""
  ca:
    description: The PEM text of every CA certificate the node trusts.
    type: str
    default: ""
  certificate_name:
    description: The certificate's file name in O(dir).
    type: str
    default: cert.pem
  bundle_name:
    description: The key store's file name in O(dir).
    type: str
    default: node.pem
"""

EXAMPLES = r"""
- name: Install the node's certificate and CAs, and its key store
  kafkalab.kafka.pki_install:
    dir: /etc/kafka/tls
    group: kafka
    certificate: "{{ signed.certificate }}"
    ca: "{{ lookup('kafkalab.kafka.pki_trust', '/srv/ca') }}"
"""

RETURN = r"""
written:
  description: The names of the files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
"""

import grp
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.atomic_file import (
    owned_as,
    read_text,
    write_atomically,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dir": {"type": "path", "required": True},
            "group": {"type": "str", "required": True},
            "certificate": {"type": "str", "default": ""},
            "ca": {"type": "str", "default": ""},
            "certificate_name": {"type": "str", "default": "cert.pem"},
            "bundle_name": {"type": "str", "default": "node.pem"},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        gid = grp.getgrnam(params["group"]).gr_gid
    except KeyError:
        module.fail_json(msg=f"pki_install: group {params['group']!r} does not exist on this host")
    wanted: list[tuple[str, str, int]] = []
    if params["certificate"].strip():
        wanted.append((params["certificate_name"], params["certificate"], 0o644))
    if params["ca"].strip():
        wanted.append(("ca.pem", params["ca"], 0o644))
    key = read_text(os.path.join(params["dir"], "key.pem"))
    if params["certificate"].strip() and key is not None:
        wanted.append((params["bundle_name"], key + params["certificate"], 0o640))
    written, diffs = [], []
    for name, content, mode in wanted:
        path = os.path.join(params["dir"], name)
        before = read_text(path)
        if before == content and owned_as(path, 0, gid, mode):
            continue
        written.append(name)
        if name != params["bundle_name"]:
            diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": content})
        if not module.check_mode:
            write_atomically(path, content, 0, gid, mode)
    module.exit_json(changed=bool(written), written=written, diff=diffs)


if __name__ == "__main__":
    main()
