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
from typing import Any

_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)

SIGNING, NEXT, PREVIOUS, TRUST = "ca", "ca-next", "ca-previous", "trust.pem"


def certificates(pem: str) -> list[str]:
    """The certificates in a PEM text, each normalised (no blank lines or spaces at the ends), in order."""
    return [block.strip() for block in _BLOCK.findall(pem or "")]


def fingerprint(pem: str) -> str:
    """A short, printable name for a certificate: the start of its PEM text's sha256."""
    return hashlib.sha256(pem.strip().encode()).hexdigest()[:16]


def read_text(path: str) -> str:
    """The file's text; '' when it is missing or cannot be read."""
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

    A directory with no ca.pem but a trust.pem (the operator's own CA: the kafka role keeps a copy there, and
    no CA of the project's) gives that. '' when the directory holds no CA (yet)."""
    if not os.path.isfile(os.path.join(ca_dir, SIGNING + ".pem")):
        return "".join(cert + "\n" for cert in certificates(read_text(os.path.join(ca_dir, TRUST))))
    seen: list[str] = []
    for name in (SIGNING, NEXT, PREVIOUS):
        for cert in certificates(read_text(os.path.join(ca_dir, name + ".pem"))):
            if cert not in seen:
                seen.append(cert)
    return "".join(cert + "\n" for cert in seen)


def trust_problem(host: str, trusted: str, project_ca: str, ca_dir: str, variable: str, fix: str = "") -> str:
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
    why = "the cluster would move to another CA in one roll" if fix else "the project CA was lost or moved"
    return (
        f"{host}: trusts the CA whose certificate hashes to sha256 {fingerprint(node[0])}..., but {where}: {why}. "
        "A new CA would make the nodes distrust each other in the middle of a roll. "
        + (fix or f"Restore ca.pem and ca.key into {variable} (or point {variable} at them).")
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
    name = path(retired, fingerprint(read_text(previous)))
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
        _verify_issued_by(cert, ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _verify_issued_by(cert: Any, ca: Any) -> None:
    """cryptography's Certificate.verify_directly_issued_by, also where it is older than 40 (Debian 12's python3-
    cryptography, which roles/pki's node-side checks run with): raises unless `ca`'s key signed `cert`."""
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

    if hasattr(cert, "verify_directly_issued_by"):
        cert.verify_directly_issued_by(ca)
        return
    if cert.issuer != ca.subject:
        raise ValueError("the issuer is not the CA's subject")
    key = ca.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
    elif isinstance(key, rsa.RSAPublicKey):
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    else:
        raise TypeError(f"a CA key of type {type(key).__name__} is not checked here")


def _not_after(cert: Any) -> float:
    """When the certificate expires (epoch seconds), with cryptography before 42 too (not_valid_after, naive UTC)."""
    import datetime

    if hasattr(cert, "not_valid_after_utc"):
        return float(cert.not_valid_after_utc.timestamp())
    return float(cert.not_valid_after.replace(tzinfo=datetime.timezone.utc).timestamp())  # noqa: UP017 (nodes: Python 3.8+)


def _names(cert: Any) -> tuple[set[str], set[str]]:
    """The DNS names and IP addresses a certificate's subjectAltName holds."""
    from cryptography import x509

    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return {n.lower() for n in san.get_values_for_type(x509.DNSName)}, {
        str(a) for a in san.get_values_for_type(x509.IPAddress)
    }


def _covers(name: str, dns: set[str], ips: set[str]) -> bool:
    """Whether a client dialling `name` finds it in the certificate (one-label wildcards as TLS matches them)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(name)) in ips
    except ValueError:
        pass
    name = name.lower()
    return name in dns or any(d.startswith("*.") and name.partition(".")[2] == d[2:] for d in dns)


def own_certificate_problems(
    host: str, names: list[str], files: dict[str, tuple[str, str]], cn_only: bool, now: float | None = None
) -> list[str]:
    """What is wrong with the certificate, key and CA an operator supplies for one node, each with the fix.

    files: 'ca', 'certificate', 'key' -> (variable, path on the controller machine). names: every name and address
    the node is reached by (the model's tls_names). cn_only: the authorizer maps a node's certificate to its
    principal by a subject that is CN=<name> alone."""
    import time

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    problems = []
    text = {}
    for what, (variable, path) in files.items():
        if not path:
            problems.append(
                f"{host}: {variable} is not set, but kafka_tls_own_ca is: give every Kafka node its {what} file "
                f"(PEM, on the controller machine), e.g. {variable}: /etc/ssl/kafka/{{{{ inventory_hostname }}}}."
                + ("key" if what == "key" else "crt")
            )
        elif not os.path.isfile(path):
            problems.append(f"{host}: {variable} is {path!r}, which is no file on the controller machine. Fix it.")
        else:
            text[what] = read_text(path)
    if problems:
        return problems
    chain = certificates(text["certificate"])
    cas = certificates(text["ca"])
    if not cas:
        return [f"{host}: kafka_tls_own_ca {files['ca'][1]!r} holds no PEM certificate. Give the CA's certificate(s)."]
    if not chain:
        variable, path = files["certificate"]
        return [
            f"{host}: {variable} {path!r} holds no PEM certificate. Give the node's certificate, its chain after it."
        ]
    try:
        leaf = x509.load_pem_x509_certificate(chain[0].encode())
    except ValueError as exc:
        return [f"{host}: {files['certificate'][0]} {files['certificate'][1]!r} cannot be read ({exc})."]
    variable, path = files["certificate"]
    moment = time.time() if now is None else now
    if leaf.not_valid_after_utc.timestamp() <= moment:
        problems.append(
            f"{host}: {variable} {path!r} expired on {leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC. Ask your CA "
            "for a renewed certificate and point the variable at it."
        )
    elif leaf.not_valid_before_utc.timestamp() > moment:
        problems.append(
            f"{host}: {variable} {path!r} is not valid before {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC. "
            "Check the controller machine's clock, or wait."
        )
    dns, ips = _names(leaf)
    missing = [n for n in names if not _covers(n, dns, ips)]
    if missing:
        problems.append(
            f"{host}: {variable} {path!r} does not name {', '.join(missing)} in its subjectAltName (it has "
            f"{', '.join(sorted(dns | ips)) or 'none'}); clients that dial those would refuse it. Ask your CA for a "
            "certificate naming every name and address the node is reached by (inventory name, address, "
            "advertised hosts)."
        )
    # Each certificate of the chain signed by the next; the last by one of the CAs.
    linked = all(signed_by(chain[i], chain[i + 1]) for i in range(len(chain) - 1))
    if not linked or not any(signed_by(chain[-1], ca) for ca in cas):
        problems.append(
            f"{host}: {variable} {path!r} is not signed by the CA in kafka_tls_own_ca {files['ca'][1]!r}"
            + ("" if linked else " (its chain is out of order: the node's certificate first, then each issuer)")
            + ". Give the certificate your CA issued, or the CA that issued it."
        )
    if cn_only and [a.oid for a in leaf.subject] != [x509.NameOID.COMMON_NAME]:
        problems.append(
            f"{host}: {variable} {path!r} has the subject {leaf.subject.rfc4514_string()}, but with the authorizer on "
            "every node's certificate must say CN=<name> alone (ssl.principal.mapping.rules maps those to "
            "User:kafka-node, a super user). Ask your CA for a certificate with a CN-only subject."
        )
    key_variable, key_path = files["key"]
    try:
        key = serialization.load_pem_private_key(text["key"].encode(), password=None)
    except TypeError:
        problems.append(
            f"{host}: {key_variable} {key_path!r} is encrypted; Kafka reads an unencrypted PEM key here. Decrypt it "
            "(openssl pkey -in KEY -out KEY.plain) into a file only you can read, and point the variable at that."
        )
        return problems
    except ValueError:
        problems.append(f"{host}: {key_variable} {key_path!r} holds no PEM private key. Give the node's key.")
        return problems
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != leaf.public_key().public_bytes(*spki):
        problems.append(
            f"{host}: {key_variable} {key_path!r} is not the key of {variable} {path!r}. Give the key the "
            "certificate was issued for."
        )
    return problems


def certificate_outdated(
    key_pem: str,
    cert_pem: str,
    ca_pem: str,
    common_name: str,
    subject_alt_names: list[str],
    renew_seconds: float,
    now: float | None = None,
) -> str:
    """Why a node's certificate (tasks/certificate.yml's) must be signed again, '' when it need not be.

    It need not be when it is the one the role would sign now from the node's key: for that key, subject CN=
    common_name alone, exactly these subjectAltName entries ('DNS:name' / 'IP:address', as the san_entry filter
    writes them), key usage digitalSignature (critical) and extended key usage serverAuth + clientAuth, no other
    extension but the key identifiers, signed by the CA in ca_pem, and valid beyond renew_seconds from now. Anything
    else, or anything that cannot be read, is a reason: the caller then goes the signing way, whose checks decide."""
    import ipaddress
    import time

    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID

    chain = certificates(cert_pem)
    if not chain:
        return "no certificate yet"
    if not certificates(ca_pem):
        return "no project CA to check it against"
    try:
        cert = x509.load_pem_x509_certificate(chain[0].encode())
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        return f"the key or the certificate cannot be read ({exc})"
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.DER
    if cert.public_key().public_bytes(encoding, public) != key.public_key().public_bytes(encoding, public):
        return "the certificate is not the node key's"
    if cert.subject != x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]):
        return f"its subject is {cert.subject.rfc4514_string()}, not CN={common_name}"
    wanted_dns = {entry[4:].lower() for entry in subject_alt_names if entry.startswith("DNS:")}
    wanted_ips = {str(ipaddress.ip_address(entry[3:])) for entry in subject_alt_names if entry.startswith("IP:")}
    if len(wanted_dns) + len(wanted_ips) != len(set(subject_alt_names)) or _names(cert) != (wanted_dns, wanted_ips):
        return "its names differ from the node's"
    if subject_alt_names and cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).critical:
        return "its names are marked critical"
    kinds = {extension.oid for extension in cert.extensions}
    if kinds - {ExtensionOID.SUBJECT_KEY_IDENTIFIER, ExtensionOID.AUTHORITY_KEY_IDENTIFIER} != (
        {ExtensionOID.SUBJECT_ALTERNATIVE_NAME, ExtensionOID.KEY_USAGE, ExtensionOID.EXTENDED_KEY_USAGE}
        if subject_alt_names
        else {ExtensionOID.KEY_USAGE, ExtensionOID.EXTENDED_KEY_USAGE}
    ):
        return "its extensions differ from the role's"
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    if not usage.critical or not usage.value.digital_signature or any(
        getattr(usage.value, flag)
        for flag in ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement", "key_cert_sign",
                     "crl_sign")
    ):  # fmt: skip
        return "its key usage differs from the role's"
    purposes = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    if purposes.critical or set(purposes.value) != {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}:
        return "its extended key usage differs from the role's"
    try:  # (the CA's subject is the certificate's issuer, and the CA's key signed it)
        _verify_issued_by(cert, x509.load_pem_x509_certificate(certificates(ca_pem)[0].encode()))
    except (ValueError, TypeError, InvalidSignature):
        return "the project CA did not sign it"
    expires = _not_after(cert)
    if expires <= (time.time() if now is None else now) + renew_seconds:
        return f"it expires at {expires:.0f} (epoch seconds), within the renewal window"
    return ""
