"""Whether a node still trusts the project CA the controller machine holds (roles/pki makes both ends)."""

from __future__ import annotations

import hashlib


def fingerprint(pem: str) -> str:
    """A short, printable name for a certificate: the start of its PEM text's sha256."""
    return hashlib.sha256(pem.strip().encode()).hexdigest()[:16]


def trust_problem(host: str, trusted: str, project_ca: str, ca_dir: str, variable: str) -> str:
    """'' when the node trusts nothing yet or the project CA; otherwise why the run must stop, and the fix.

    trusted: the CA certificate on the node now ('' if none); project_ca: ca.pem in `ca_dir` on the controller
    machine ('' if none); variable: the inventory setting that names ca_dir.
    """
    if not trusted.strip() or trusted.strip() == project_ca.strip():
        return ""
    where = (
        f"another CA (sha256 {fingerprint(project_ca)}...) is in {variable} {ca_dir}"
        if project_ca.strip()
        else f"{variable} {ca_dir} holds no CA"
    )
    return (
        f"{host}: trusts the CA whose certificate hashes to sha256 {fingerprint(trusted)}..., but {where}: the "
        "project CA was lost or moved. A new CA would make the nodes distrust each other in the middle of a roll. "
        f"Restore ca.pem and ca.key into {variable} (or point {variable} at them)."
    )
