"""san_entry: a name or address as a certificate's subjectAltName entry (IP:... or DNS:...).
pki_trust_problems: the nodes that trust another CA than the project's (module_utils/pki.py), each a message."""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import is_ip
from ansible_collections.kafkalab.kafka.plugins.module_utils.pki import trust_problem


def san_entry(name: Any) -> str:
    """An IP address becomes an IP entry (clients dialling the address check it), anything else a DNS entry."""
    text = str(name)
    return f"IP:{text}" if is_ip(text) else f"DNS:{text}"


def pki_trust_problems(trusted: Any, project_ca: Any, ca_dir: Any, variable: Any) -> list[str]:
    """trusted: host -> the CA certificate it holds now ('' if none). One message per host that trusts another."""
    found = (trust_problem(str(h), str(pem or ""), str(project_ca or ""), str(ca_dir), str(variable))
             for h, pem in sorted(dict(trusted or {}).items()))  # fmt: skip
    return [p for p in found if p]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"san_entry": san_entry, "pki_trust_problems": pki_trust_problems}
