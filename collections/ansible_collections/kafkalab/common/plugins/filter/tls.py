"""san_entry: a name or address as a certificate's subjectAltName entry (IP:... or DNS:...)."""

from __future__ import annotations

from typing import Any

from ansible_collections.kafkalab.common.plugins.module_utils.inventory import is_ip


def san_entry(name: Any) -> str:
    """An IP address becomes an IP entry (clients dialling the address check it), anything else a DNS entry."""
    text = str(name)
    return f"IP:{text}" if is_ip(text) else f"DNS:{text}"


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"san_entry": san_entry}
