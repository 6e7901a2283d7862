#!/usr/bin/python
"""Ansible module: a step of the project CA's rotation on the controller machine (module_utils/pki.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: pki_ca_rotation
short_description: Promote the next CA of a CA directory, or retire the previous one, once every node is ready
author:
  - kafkalab maintainers (@kafkalab)
description:
  - Runs on the controller machine (delegate_to localhost), where the CA directory is. A rotation goes none ->
    trust (ca-next.pem made by roles/pki tasks/ca.yml, trusted by every node) -> sign (promote) -> none (retire).
  - C(promote) first checks that every node named in I(nodes) trusts ca-next (its ca.pem holds the certificate);
    C(retire) first checks that every node's certificate is signed by ca.pem. A node that is not ready fails the
    step by name and changes nothing.
  - Each step is renames a later run finishes when a run is killed in the middle; a step already done is
    reported unchanged. Check mode reports what would change.
options:
  ca_dir:
    description: The CA directory (kafka_tls_ca_dir).
    type: path
    required: true
  step:
    description: C(state) only reports; C(promote) makes ca-next the signing CA; C(retire) ends the rotation.
    type: str
    choices: [state, promote, retire]
    default: state
  nodes:
    description: >-
      Host -> the PEM text that step checks: for promote, the CA certificates the node trusts (its ca.pem); for
      retire, the node's certificate.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Read (and move on) the project CA's rotation state
  kafkalab.kafka.pki_ca_rotation:
    ca_dir: /home/ops/inventory/.pki
  delegate_to: localhost
"""

RETURN = r"""
state:
  description: The rotation's state after the step (none, trust, sign).
  returned: always
  type: str
retired:
  description: Where retire moved the previous CA's certificate ('' when it moved nothing).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafkalab.kafka.plugins.module_utils import pki


def _not_ready(step: str, ca_dir: str, nodes: dict[str, str]) -> list[str]:
    """The nodes the step must wait for, each with why."""
    if step == "promote":
        nxt = pki.certificates(pki.read_text(f"{ca_dir}/{pki.NEXT}.pem"))
        return [f"{host}: does not trust the next CA yet (its ca.pem lacks ca-next.pem)"
                for host, pem in sorted(nodes.items()) if not set(nxt) <= set(pki.certificates(pem or ""))]  # fmt: skip
    ca = pki.read_text(f"{ca_dir}/{pki.SIGNING}.pem")
    return [f"{host}: its certificate is not signed by the new CA ({ca_dir}/ca.pem) yet"
            for host, pem in sorted(nodes.items()) if not pki.signed_by(pem or "", ca)]  # fmt: skip


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "ca_dir": {"type": "path", "required": True},
            "step": {"type": "str", "choices": ["state", "promote", "retire"], "default": "state"},
            "nodes": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    ca_dir, step, nodes = module.params["ca_dir"], module.params["step"], module.params["nodes"]
    state = pki.rotation_state(ca_dir)
    due = {"promote": "trust", "retire": "sign"}.get(step)
    if due is None or state != due:
        module.exit_json(changed=False, state=state, retired="")
    waiting = _not_ready(step, ca_dir, nodes)
    if waiting:
        module.fail_json(
            msg=f"The CA rotation's {step} step must wait; nothing was changed. "
            + " ".join(waiting)
            + ". Run playbooks/rotate_certificates.yml -e kafka_tls_rotate_ca=true again without --limit: it gives"
            " every node the trust and certificates first.",
            state=state,
        )
    if module.check_mode:
        module.exit_json(changed=True, state={"promote": "sign", "retire": "none"}[step], retired="")
    retired = ""
    if step == "promote":
        pki.promote(ca_dir)
    else:
        retired = pki.retire(ca_dir)
    module.exit_json(changed=True, state=pki.rotation_state(ca_dir), retired=retired)


if __name__ == "__main__":
    main()
