"""The project CA's rotation on the controller machine (collection module_utils/pki.py, module pki_ca_rotation,
lookup pki_trust): what is trusted in each state, each step's renames, a step killed halfway and finished by the
next run, and the checks that hold a step back until every node is ready. Real ECDSA CAs and certificates
(cryptography), as roles/pki makes them."""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path

import pytest
from ansible_collections.kafkalab.kafka.plugins.lookup.pki_trust import LookupModule
from ansible_collections.kafkalab.kafka.plugins.module_utils import pki
from ansible_collections.kafkalab.kafka.plugins.modules.pki_ca_rotation import _not_ready
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NOW = datetime.datetime.now(datetime.UTC)
DAYS = datetime.timedelta(days=9)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(directory: Path, name: str, cn: str) -> tuple[str, ec.EllipticCurvePrivateKey]:
    """<name>.key (0600) and <name>.pem in directory, as roles/pki tasks/ca.yml writes them."""
    key = ec.generate_private_key(ec.SECP384R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(NOW).not_valid_after(NOW + DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    (directory / f"{name}.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (directory / f"{name}.key").chmod(0o600)
    (directory / f"{name}.pem").write_text(pem)
    return pem, key


def node_cert(ca_pem: str, ca_key: ec.EllipticCurvePrivateKey, cn: str = "kafka1") -> str:
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(NOW).not_valid_after(NOW + DAYS)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM).decode()


@pytest.fixture
def ca_dir(tmp_path: Path) -> Path:
    directory = tmp_path / ".pki"
    directory.mkdir(mode=0o700)
    return directory


def test_outside_a_rotation_the_project_trusts_its_ca_alone(ca_dir: Path) -> None:
    assert pki.trust_bundle(str(ca_dir)) == "" and pki.rotation_state(str(ca_dir)) == "none"
    old, _ = make_ca(ca_dir, "ca", "kafkalab project CA (lab)")
    # The same text the nodes' ca.pem held before rotations existed: a converge changes (and restarts) nothing.
    assert pki.trust_bundle(str(ca_dir)) == old
    assert LookupModule().run([str(ca_dir)]) == [old]


def test_a_rotation_trusts_both_then_signs_with_the_new_then_retires_the_old(ca_dir: Path) -> None:
    old, old_key = make_ca(ca_dir, "ca", "kafkalab project CA (lab)")
    new, new_key = make_ca(ca_dir, "ca-next", "kafkalab project CA (lab, 2026-11-29T18:00Z)")
    assert pki.rotation_state(str(ca_dir)) == "trust"
    assert pki.certificates(pki.trust_bundle(str(ca_dir))) == [old.strip(), new.strip()]

    assert pki.promote(str(ca_dir)) is True
    assert pki.rotation_state(str(ca_dir)) == "sign"
    assert (ca_dir / "ca.pem").read_text() == new and (ca_dir / "ca-previous.pem").read_text() == old
    assert (ca_dir / "ca.key").read_bytes() != (ca_dir / "ca-previous.key").read_bytes()
    assert not (ca_dir / "ca-next.pem").exists() and not (ca_dir / "ca-next.key").exists()
    # The signing CA first; both still trusted.
    assert pki.certificates(pki.trust_bundle(str(ca_dir))) == [new.strip(), old.strip()]
    assert stat.S_IMODE((ca_dir / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((ca_dir / "ca-previous.key").stat().st_mode) == 0o600
    assert pki.promote(str(ca_dir)) is False

    retired = pki.retire(str(ca_dir))
    assert retired == str(ca_dir / "retired" / pki.fingerprint(old)) + ".pem"
    assert Path(retired).read_text() == old and Path(retired).with_suffix(".key").exists()
    assert stat.S_IMODE((ca_dir / "retired").stat().st_mode) == 0o700
    assert pki.rotation_state(str(ca_dir)) == "none" and pki.trust_bundle(str(ca_dir)) == new
    assert pki.retire(str(ca_dir)) == ""
    assert pki.signed_by(node_cert(new, new_key), new) and not pki.signed_by(node_cert(old, old_key), new)


@pytest.mark.parametrize("killed_after", ["previous written", "key copied"])
def test_a_promotion_killed_halfway_is_finished_by_the_next_one(ca_dir: Path, killed_after: str) -> None:
    old, _ = make_ca(ca_dir, "ca", "old")
    new, new_key = make_ca(ca_dir, "ca-next", "new")
    # What promote() had done when the run was killed.
    pki._copy(str(ca_dir / "ca.key"), str(ca_dir / "ca-previous.key"))
    pki._copy(str(ca_dir / "ca.pem"), str(ca_dir / "ca-previous.pem"))
    if killed_after == "key copied":
        pki._copy(str(ca_dir / "ca-next.key"), str(ca_dir / "ca.key"))
    # Still 'trust': every CA is trusted, and nothing signs with a key that does not match ca.pem.
    assert pki.rotation_state(str(ca_dir)) == "trust"
    assert set(pki.certificates(pki.trust_bundle(str(ca_dir)))) == {old.strip(), new.strip()}

    assert pki.promote(str(ca_dir)) is True
    assert (ca_dir / "ca.pem").read_text() == new and (ca_dir / "ca-previous.pem").read_text() == old
    signer = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
    assert signer.public_key().public_numbers() == new_key.public_key().public_numbers()


def test_a_node_mid_rotation_is_no_lost_ca_but_another_ca_still_is(ca_dir: Path) -> None:
    old, _ = make_ca(ca_dir, "ca", "old")
    new, _ = make_ca(ca_dir, "ca-next", "new")
    both = old + new
    assert pki.trust_problem("k1", old, both, "/inv/.pki", "kafka_tls_ca_dir") == ""
    assert pki.trust_problem("k1", both, new, "/inv/.pki", "kafka_tls_ca_dir") == ""
    assert pki.trust_problem("k1", new + old, both, "/inv/.pki", "kafka_tls_ca_dir") == ""
    other, _ = make_ca(ca_dir, "other", "another")
    problem = pki.trust_problem("k1", other, both, "/inv/.pki", "kafka_tls_ca_dir")
    assert problem.startswith(f"k1: trusts the CA whose certificate hashes to sha256 {pki.fingerprint(other)}...")
    assert f"another CA (sha256 {pki.fingerprint(old)}...) is in kafka_tls_ca_dir /inv/.pki" in problem
    assert "holds no CA" in pki.trust_problem("k1", both, "", "/inv/.pki", "kafka_tls_ca_dir")


def test_each_step_waits_for_every_node_and_names_the_ones_not_ready(ca_dir: Path) -> None:
    old, old_key = make_ca(ca_dir, "ca", "old")
    new, new_key = make_ca(ca_dir, "ca-next", "new")
    waiting = _not_ready("promote", str(ca_dir), {"kafka1": old + new, "kafka2": old, "kafka3": new + old})
    assert waiting == ["kafka2: does not trust the next CA yet (its ca.pem lacks ca-next.pem)"]
    pki.promote(str(ca_dir))
    waiting = _not_ready("retire", str(ca_dir), {"kafka1": node_cert(new, new_key), "kafka2": node_cert(old, old_key)})
    assert waiting == [f"kafka2: its certificate is not signed by the new CA ({ca_dir}/ca.pem) yet"]
    assert _not_ready("retire", str(ca_dir), {"kafka1": node_cert(new, new_key), "kafka2": ""}) == [
        f"kafka2: its certificate is not signed by the new CA ({ca_dir}/ca.pem) yet"
    ]


def test_the_files_keep_their_modes_through_the_renames(ca_dir: Path) -> None:
    make_ca(ca_dir, "ca", "old")
    make_ca(ca_dir, "ca-next", "new")
    pki.promote(str(ca_dir))
    pki.retire(str(ca_dir))
    keys = [p for p in ca_dir.rglob("*.key")]
    assert len(keys) == 2 and all(stat.S_IMODE(os.stat(k).st_mode) == 0o600 for k in keys)
    assert not list(ca_dir.rglob("*.tmp"))


# ---- a node's certificate that needs no work (module_utils/pki.py certificate_outdated, modules/pki_current.py) ----

NAMES = ["DNS:kafka1", "IP:10.0.0.11", "IP:127.0.0.1"]


def role_certificate(
    ca_pem: str,
    ca_key: ec.EllipticCurvePrivateKey,
    key: ec.EllipticCurvePrivateKey,
    names: list[str] = NAMES,
    days: int = 9,
    eku_critical: bool = False,
) -> str:
    """A certificate as roles/pki tasks/certificate.yml has the CA sign one: CN, the names, digitalSignature
    (critical), serverAuth + clientAuth, and the key identifiers the ownca provider adds."""
    import ipaddress

    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    san = [x509.IPAddress(ipaddress.ip_address(n[3:])) if n.startswith("IP:") else x509.DNSName(n[4:]) for n in names]
    usage = dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement", "key_cert_sign", "crl_sign",
         "encipher_only", "decipher_only"),
        False,
    )  # fmt: skip
    cert = (
        x509.CertificateBuilder().subject_name(_name("kafka1")).issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(NOW)
        .not_valid_after(NOW + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.KeyUsage(digital_signature=True, **usage), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH, x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=eku_critical,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_a_certificate_the_role_would_sign_again_is_current_and_anything_else_is_due(ca_dir: Path) -> None:
    ca_pem, ca_key = make_ca(ca_dir, "ca", "kafkalab CA")
    other_pem, other_key = make_ca(ca_dir, "ca-next", "kafkalab CA 2")
    key, stranger = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    renew = 3 * 86400

    def outdated(cert: str, names: list[str] = NAMES, ca: str = ca_pem, key_text: str = key_pem(key)) -> str:
        return pki.certificate_outdated(key_text, cert, ca, "kafka1", names, renew)

    current = role_certificate(ca_pem, ca_key, key)
    assert outdated(current) == ""
    assert outdated(current, names=list(reversed(NAMES))) == ""  # the order of the names is the inventory's
    assert outdated("") == "no certificate yet"
    assert outdated(current, ca="") == "no project CA to check it against"
    assert outdated(current, names=[*NAMES, "DNS:kafka1.lab"]) == "its names differ from the node's"
    assert outdated(current, names=NAMES[:1]) == "its names differ from the node's"
    assert outdated(current, key_text=key_pem(stranger)) == "the certificate is not the node key's"
    # A CA rotation's signing step: the new CA signs now, and this certificate is the old one's.
    assert outdated(current, ca=other_pem) == "the project CA did not sign it"
    assert outdated(role_certificate(ca_pem, other_key, key)) == "the project CA did not sign it"
    assert "within the renewal window" in outdated(role_certificate(ca_pem, ca_key, key, days=2))
    assert outdated(role_certificate(ca_pem, ca_key, key, eku_critical=True)) != ""
    assert outdated(node_cert(ca_pem, ca_key)) != ""  # another key, and none of the role's extensions
    assert outdated("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n").startswith(
        "the key or the certificate cannot be read"
    )


def test_the_signature_is_checked_with_a_cryptography_older_than_40_too(ca_dir: Path) -> None:
    # Debian 12's python3-cryptography (38) has no verify_directly_issued_by: the node-side check verifies by hand.
    ca_pem, ca_key = make_ca(ca_dir, "ca", "kafkalab CA")
    _other_pem, other_key = make_ca(ca_dir, "ca-next", "kafkalab CA 2")
    key = ec.generate_private_key(ec.SECP256R1())
    ca = x509.load_pem_x509_certificate(ca_pem.encode())

    class Old:  # what such a Certificate offers: everything but verify_directly_issued_by
        def __init__(self, pem: str) -> None:
            self._cert = x509.load_pem_x509_certificate(pem.encode())

        def __getattr__(self, name: str) -> object:
            if name == "verify_directly_issued_by":
                raise AttributeError(name)
            return getattr(self._cert, name)

    pki._verify_issued_by(Old(role_certificate(ca_pem, ca_key, key)), ca)
    with pytest.raises(InvalidSignature):
        pki._verify_issued_by(Old(role_certificate(ca_pem, other_key, key)), ca)
