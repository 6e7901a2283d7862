"""pki_trust: what the nodes and clients of a project CA directory trust now (module_utils/pki.py trust_bundle)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: pki_trust
short_description: The CA certificates a CA directory's nodes and clients trust (ca.pem, ca-next.pem, ca-previous.pem)
description:
  - Read on the controller machine. Outside a CA rotation that is ca.pem alone; in one, both CAs, the signing
    one first. '' for a directory that holds no CA yet.
options:
  _terms:
    description: CA directories on the controller.
    required: true
"""

RETURN = r"""
_raw:
  description: One PEM text per directory, in order.
  type: list
  elements: str
"""

from typing import Any

from ansible.plugins.lookup import LookupBase
from ansible_collections.kafkalab.kafka.plugins.module_utils.pki import trust_bundle


class LookupModule(LookupBase):  # type: ignore[misc]  # ansible-core ships no type information
    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[str]:
        return [trust_bundle(str(term)) for term in terms]
