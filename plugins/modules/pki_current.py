#!/usr/bin/python
"""Ansible module: whether a node's key and certificate are already what roles/pki would make and sign (read only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: pki_current
short_description: Whether a node's TLS directory, key and certificate need no work, in one look
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Read only, in check mode too. The pki role's certificate tasks ask it first. When the node's TLS directory and
    key are there with their owner, group and mode, and its certificate is the one the role would sign now (the
    node key's, O(common_name) alone as subject, exactly O(subject_alt_names), the role's key usages, signed by the
    CA in O(ca), valid beyond O(renew_days)), the role skips making the key, the signing request and the signature
    (about four round trips to the node and the controller machine on every run of every playbook with TLS).
  - Anything else, or anything it cannot read, is reported as a reason, and the role goes the signing way, whose own
    checks decide; so this module can only save work, never skip a certificate that is due.
options:
  dir:
    description: The node's TLS directory (root:O(group) 0750), holding C(key.pem) (root:O(group) 0640).
    type: path
    required: true
  group:
    description: The group that reads the files (the service's).
    type: str
    required: true
  certificate_name:
    description: The certificate's file name in O(dir).
    type: str
    default: cert.pem
  common_name:
    description: The subject's common name.
    type: str
    required: true
  subject_alt_names:
    description: The subjectAltName entries, C(DNS:name) or C(IP:address).
    type: list
    elements: str
    default: []
  ca:
    description: The PEM certificate of the CA that signs the nodes' certificates now.
    type: str
    default: ""
  renew_days:
    description: A certificate expiring within this many days is due.
    type: int
    required: true
  force:
    description: Every certificate is due (a rotation signing all of them again).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: See whether the node's key and certificate need any work
  kafkalab.kafka.pki_current:
    dir: /etc/kafka/tls
    group: kafka
    common_name: kafka1
    subject_alt_names: [DNS:kafka1, IP:10.0.0.11]
    ca: "{{ lookup('ansible.builtin.file', '/home/ops/.pki/ca.pem') }}"
    renew_days: 30
  register: current
"""

RETURN = r"""
current:
  description: Whether nothing needs doing.
  returned: always
  type: bool
reason:
  description: Why something needs doing ('' when nothing does).
  returned: always
  type: str
certificate:
  description: The certificate's PEM text when it is current, else ''.
  returned: always
  type: str
"""

import grp
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils.atomic_file import owned_as, read_text
from ansible_collections.kafkalab.kafka.plugins.module_utils.pki import certificate_outdated


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dir": {"type": "path", "required": True},
            "group": {"type": "str", "required": True},
            "certificate_name": {"type": "str", "default": "cert.pem"},
            "common_name": {"type": "str", "required": True},
            "subject_alt_names": {"type": "list", "elements": "str", "default": []},
            "ca": {"type": "str", "default": ""},
            "renew_days": {"type": "int", "required": True},
            "force": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    key_path = os.path.join(p["dir"], "key.pem")
    cert = read_text(os.path.join(p["dir"], p["certificate_name"])) or ""
    try:
        gid = grp.getgrnam(p["group"]).gr_gid
    except KeyError:
        gid = -1
    if p["force"]:
        reason = "every certificate is to be signed again"
    elif not owned_as(p["dir"], 0, gid, 0o750, directory=True):
        reason = f"{p['dir']} is not a directory root:{p['group']} 0750"
    elif not owned_as(key_path, 0, gid, 0o640):
        reason = f"{key_path} is not a file root:{p['group']} 0640"
    else:
        try:
            reason = certificate_outdated(
                read_text(key_path) or "",
                cert,
                p["ca"],
                p["common_name"],
                p["subject_alt_names"],
                p["renew_days"] * 86400,
            )
        except ImportError:
            reason = "the node has no Python cryptography library"
        except Exception as exc:  # anything unreadable goes the signing way, which decides
            reason = f"the key or the certificate could not be checked ({exc!r})"
    module.exit_json(changed=False, current=not reason, reason=reason, certificate="" if reason else cert)


if __name__ == "__main__":
    main()
