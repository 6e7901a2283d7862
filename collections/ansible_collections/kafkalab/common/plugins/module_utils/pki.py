"""The project CA on the controller machine, what the nodes trust, and the CA's rotation (roles/pki).

A CA directory (kafka_tls_ca_dir, zookeeper_tls_ca_dir) holds:
- ca.pem, ca.key: the CA that signs the nodes' certificates now;
- ca-next.pem, ca-next.key: a CA made by a rotation's first step, trusted everywhere but not signing yet;
- ca-previous.pem, ca-previous.key: the CA a rotation replaced, still trusted until every node's certificate
  is signed by the new one;
- trust.pem: every CA above that exists, the signing one first: what the nodes and every client trust;
- retired/: the CAs rotations ended, kept for the record (0700), trusted by nothing.

A rotation goes none -> trust (ca-next made, every node and client trusts both) -> sign (ca-next promoted to
ca, the old one kept as ca-previous, every certificate signed again) -> none (ca-previous retired). Each step
is made of renames that a later run repeats or finishes, so a run killed in the middle leaves a state the next
run recognises.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil

_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)

SIGNING, NEXT, PREVIOUS, TRUST = "ca", "ca-next", "ca-previous", "trust.pem"


def certificates(pem: str) -> list[str]:
    """The certificates in a PEM text, each normalised (no blank lines or spaces at the ends), in order."""
    return [block.strip() for block in _BLOCK.findall(pem or "")]


def fingerprint(pem: str) -> str:
    """A short, printable name for a certificate: the start of its PEM text's sha256."""
    return hashlib.sha256(pem.strip().encode()).hexdigest()[:16]


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return ""


def rotation_state(ca_dir: str) -> str:
    """'none', 'trust' (ca-next exists: trusted, not signing) or 'sign' (ca-previous exists: trusted, replaced).

    A directory with both (a promotion killed halfway) is 'trust' still: promote() finishes it.
    """
    if os.path.isfile(os.path.join(ca_dir, NEXT + ".pem")):
        return "trust"
    if os.path.isfile(os.path.join(ca_dir, PREVIOUS + ".pem")):
        return "sign"
    return "none"


def trust_bundle(ca_dir: str) -> str:
    """What the nodes and clients trust: ca.pem, then ca-next.pem and ca-previous.pem when they exist, each once.

    '' when the directory holds no CA (yet)."""
    seen: list[str] = []
    for name in (SIGNING, NEXT, PREVIOUS):
        for cert in certificates(_read(os.path.join(ca_dir, name + ".pem"))):
            if cert not in seen:
                seen.append(cert)
    return "".join(cert + "\n" for cert in seen)


def trust_problem(host: str, trusted: str, project_ca: str, ca_dir: str, variable: str) -> str:
    """'' when the node trusts nothing yet, or some CA the project trusts; otherwise why the run must stop, and the fix.

    trusted: the CA certificates on the node now ('' if none); project_ca: what the controller machine's CA
    directory `ca_dir` trusts (trust_bundle; '' if nothing); variable: the inventory setting that names ca_dir.
    A node in the middle of a CA rotation trusts two CAs, and the project one or both of them: that is no problem.
    """
    node = certificates(trusted)
    project = certificates(project_ca)
    if not node or set(node) & set(project):
        return ""
    where = (
        f"another CA (sha256 {fingerprint(project[0])}...) is in {variable} {ca_dir}"
        if project
        else f"{variable} {ca_dir} holds no CA"
    )
    return (
        f"{host}: trusts the CA whose certificate hashes to sha256 {fingerprint(node[0])}..., but {where}: the "
        "project CA was lost or moved. A new CA would make the nodes distrust each other in the middle of a roll. "
        f"Restore ca.pem and ca.key into {variable} (or point {variable} at them)."
    )


def _copy(src: str, dest: str) -> None:
    """Replace dest by a copy of src, atomically, keeping src's mode (a key stays 0600)."""
    tmp = dest + ".tmp"
    shutil.copy2(src, tmp)
    os.replace(tmp, dest)


def promote(ca_dir: str) -> bool:
    """trust -> sign: ca becomes ca-previous, ca-next becomes ca. True when something changed.

    Steps a rerun repeats safely: ca-previous is written once (from ca while ca is still the old CA), then ca-next
    is copied over ca (key first, certificate second), and only then is ca-next removed. A run killed anywhere
    leaves ca-next in place, so rotation_state stays 'trust' and the next promote() finishes the same way."""
    path = os.path.join
    if rotation_state(ca_dir) != "trust":
        return False
    if not os.path.isfile(path(ca_dir, PREVIOUS + ".pem")):
        _copy(path(ca_dir, SIGNING + ".key"), path(ca_dir, PREVIOUS + ".key"))
        _copy(path(ca_dir, SIGNING + ".pem"), path(ca_dir, PREVIOUS + ".pem"))
    _copy(path(ca_dir, NEXT + ".key"), path(ca_dir, SIGNING + ".key"))
    _copy(path(ca_dir, NEXT + ".pem"), path(ca_dir, SIGNING + ".pem"))
    os.remove(path(ca_dir, NEXT + ".key"))
    os.remove(path(ca_dir, NEXT + ".pem"))
    return True


def retire(ca_dir: str) -> str:
    """sign -> none: ca-previous moves to retired/<fingerprint>.{pem,key}. Returns where it went ('' if nothing).

    The certificate moves last, so a run killed between the two moves is still 'sign' and moves it next time."""
    path = os.path.join
    previous = path(ca_dir, PREVIOUS + ".pem")
    if rotation_state(ca_dir) != "sign":
        return ""
    retired = path(ca_dir, "retired")
    os.makedirs(retired, mode=0o700, exist_ok=True)
    name = path(retired, fingerprint(_read(previous)))
    if os.path.isfile(path(ca_dir, PREVIOUS + ".key")):
        os.replace(path(ca_dir, PREVIOUS + ".key"), name + ".key")
    os.replace(previous, name + ".pem")
    return name + ".pem"


def signed_by(cert_pem: str, ca_pem: str) -> bool:
    """Whether the first certificate in cert_pem was signed by the key of the CA in ca_pem (cryptography)."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    certs, cas = certificates(cert_pem), certificates(ca_pem)
    if not certs or not cas:
        return False
    cert = x509.load_pem_x509_certificate(certs[0].encode())
    ca = x509.load_pem_x509_certificate(cas[0].encode())
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True
