"""The operator's own CA (roles/kafka kafka_tls_own_ca): what preflight refuses in the files an operator supplies
(module_utils/pki.py own_certificate_problems, filter kafka_own_tls_problems), with real certificates: a root CA,
an issuing CA, node certificates with their chain, as a company's PKI hands them over."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.filter.kafka_tls import kafka_own_tls_problems
from ansible_collections.kafkalab.kafka.plugins.module_utils.pki import own_certificate_problems, trust_bundle
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NOW = datetime.datetime.now(datetime.UTC)
DAY = datetime.timedelta(days=1)
NAMES = ["kafka1", "10.0.0.11", "kafka1.example.com"]


def _subject(cn: str, org: bool = False) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Corp")]
    return x509.Name([*(attrs if org else []), x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _sign(subject: x509.Name, key: Any, issuer: x509.Name, issuer_key: Any, **kw: Any) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(kw.get("before", NOW - DAY)).not_valid_after(kw.get("after", NOW + 90 * DAY))
    )  # fmt: skip
    if kw.get("ca"):
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    if kw.get("names") is not None:
        entries: list[x509.GeneralName] = []
        for n in kw["names"]:
            try:
                entries.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                entries.append(x509.DNSName(n))
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class Pki:
    """A company PKI in a folder: root CA, issuing CA, and node files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.root_key = ec.generate_private_key(ec.SECP384R1())
        self.root = _sign(_subject("Root CA", True), self.root_key, _subject("Root CA", True), self.root_key, ca=True)
        self.issuing_key = ec.generate_private_key(ec.SECP384R1())
        self.issuing = _sign(_subject("Issuing CA", True), self.issuing_key, self.root.subject, self.root_key, ca=True)
        (folder / "ca.pem").write_text(_pem(self.root))

    def node(self, name: str, *, chain: str = "leaf+issuing", key_of: str = "", encrypted: bool = False,
             **kw: Any) -> dict[str, str]:  # fmt: skip
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = _sign(kw.pop("subject", _subject("kafka1")), key, self.issuing.subject, self.issuing_key,
                     names=kw.pop("names", NAMES), **kw)  # fmt: skip
        parts = {"leaf+issuing": [leaf, self.issuing], "issuing+leaf": [self.issuing, leaf], "leaf": [leaf]}[chain]
        (self.folder / f"{name}.crt").write_text("".join(_pem(c) for c in parts))
        other = ec.generate_private_key(ec.SECP256R1()) if key_of == "other" else key
        encryption = (
            serialization.BestAvailableEncryption(b"pw") if encrypted else serialization.NoEncryption()
        )  # fmt: skip
        (self.folder / f"{name}.key").write_bytes(
            other.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        )
        return {
            "ca": ("kafka_tls_own_ca", str(self.folder / "ca.pem")),
            "certificate": ("kafka_tls_own_certificate", str(self.folder / f"{name}.crt")),
            "key": ("kafka_tls_own_key", str(self.folder / f"{name}.key")),
        }


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


def test_a_good_certificate_with_its_chain_passes(pki: Pki) -> None:
    assert own_certificate_problems("kafka1", NAMES, pki.node("good"), cn_only=True) == []
    # A wildcard covers one label.
    files = pki.node("wild", names=["kafka1", "10.0.0.11", "*.example.com"])
    assert own_certificate_problems("kafka1", NAMES, files, cn_only=False) == []


def test_an_expired_certificate_is_refused_naming_host_variable_file_and_fix(pki: Pki) -> None:
    files = pki.node("old", before=NOW - 30 * DAY, after=NOW - DAY)
    (problem,) = own_certificate_problems("kafka1", NAMES, files, cn_only=True)
    assert problem.startswith(f"kafka1: kafka_tls_own_certificate '{pki.folder}/old.crt' expired on ")
    assert "Ask your CA for a renewed certificate" in problem


def test_a_certificate_missing_a_name_or_address_is_refused(pki: Pki) -> None:
    (problem,) = own_certificate_problems("kafka1", NAMES, pki.node("few", names=["kafka1"]), cn_only=True)
    assert problem.startswith(f"kafka1: kafka_tls_own_certificate '{pki.folder}/few.crt' does not name ")
    assert "10.0.0.11, kafka1.example.com in its subjectAltName (it has kafka1)" in problem
    # A wildcard does not cover two labels, nor the bare domain.
    files = pki.node("wide", names=["kafka1", "10.0.0.11", "*.com"])
    assert "does not name kafka1.example.com" in own_certificate_problems("kafka1", NAMES, files, cn_only=True)[0]


def test_a_certificate_of_another_ca_or_a_chain_out_of_order_is_refused(pki: Pki, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    other = Pki(tmp_path / "other")
    files = other.node("theirs")
    files["ca"] = ("kafka_tls_own_ca", str(pki.folder / "ca.pem"))
    (problem,) = own_certificate_problems("kafka1", NAMES, files, cn_only=True)
    assert "is not signed by the CA in kafka_tls_own_ca" in problem and "out of order" not in problem
    # The issuing CA first: the file's first certificate is not the node's (no names, not its key) and the chain
    # does not link.
    problems = own_certificate_problems("kafka1", NAMES, pki.node("swapped", chain="issuing+leaf"), cn_only=False)
    assert any("its chain is out of order" in p for p in problems), problems
    # Without the issuing CA the leaf cannot be traced to the root.
    (problem,) = own_certificate_problems("kafka1", NAMES, pki.node("bare", chain="leaf"), cn_only=True)
    assert "is not signed by the CA in kafka_tls_own_ca" in problem


def test_the_wrong_key_an_encrypted_key_and_a_long_subject_are_refused(pki: Pki) -> None:
    (problem,) = own_certificate_problems("kafka1", NAMES, pki.node("mixed", key_of="other"), cn_only=True)
    assert f"kafka_tls_own_key '{pki.folder}/mixed.key' is not the key of kafka_tls_own_certificate" in problem
    (problem,) = own_certificate_problems("kafka1", NAMES, pki.node("locked", encrypted=True), cn_only=True)
    assert "is encrypted; Kafka reads an unencrypted PEM key here" in problem and "openssl pkey" in problem
    files = pki.node("corp", subject=_subject("kafka1", org=True))
    assert own_certificate_problems("kafka1", NAMES, files, cn_only=False) == []
    (problem,) = own_certificate_problems("kafka1", NAMES, files, cn_only=True)
    assert "has the subject CN=kafka1,O=Corp,C=DE, but with the authorizer on" in problem


def test_missing_variables_and_files_are_named(pki: Pki) -> None:
    files = pki.node("good")
    problems = own_certificate_problems(
        "kafka2", NAMES, {**files, "certificate": ("kafka_tls_own_certificate", ""),
                          "key": ("kafka_tls_own_key", "/nowhere/kafka2.key")}, cn_only=True
    )  # fmt: skip
    assert problems[0].startswith("kafka2: kafka_tls_own_certificate is not set, but kafka_tls_own_ca is")
    assert problems[1] == (
        "kafka2: kafka_tls_own_key is '/nowhere/kafka2.key', which is no file on the controller machine. Fix it."
    )


def test_the_filter_checks_every_tls_node_of_the_model(pki: Pki) -> None:
    pki.node("kafka1")
    model = {"tls": True, "nodes": {"kafka1": {"tls_names": NAMES}, "kafka2": {"tls_names": ["kafka2"]}}}
    certs = {"kafka1": str(pki.folder / "kafka1.crt"), "kafka2": str(pki.folder / "kafka1.crt")}
    keys = {"kafka1": str(pki.folder / "kafka1.key"), "kafka2": str(pki.folder / "kafka1.key")}
    problems = kafka_own_tls_problems(model, {"authorizer": True}, str(pki.folder / "ca.pem"), certs, keys)
    assert len(problems) == 1 and problems[0].startswith("kafka2: kafka_tls_own_certificate")
    assert "does not name kafka2 in its subjectAltName" in problems[0]
    assert kafka_own_tls_problems({**model, "tls": False}, {}, str(pki.folder / "ca.pem"), {}, {}) == []
    assert kafka_own_tls_problems(model, {}, "", certs, keys) == []


def test_the_clients_trust_the_operators_ca_from_trust_pem(tmp_path: Path, pki: Pki) -> None:
    """The kafka role copies kafka_tls_own_ca to kafka_tls_ca_dir/trust.pem; the lookup the lag exporter and the
    Spark job read gives it (there is no ca.pem of the project's there)."""
    ca_dir = tmp_path / ".pki"
    ca_dir.mkdir()
    (ca_dir / "trust.pem").write_text((pki.folder / "ca.pem").read_text())
    assert trust_bundle(str(ca_dir)) == (pki.folder / "ca.pem").read_text()


def test_a_running_cluster_is_not_moved_to_another_operator_ca_in_one_roll(pki: Pki, tmp_path: Path) -> None:
    """Preflight's lost-CA rule with kafka_tls_own_ca: a node that trusts none of the CAs the file lists is refused,
    with the three-run way to change CA; a file listing the old and the new CA passes."""
    from ansible_collections.kafkalab.kafka.plugins.filter.kafka_tls import kafka_tls_problems

    old = (pki.folder / "ca.pem").read_text()
    (tmp_path / "other").mkdir()
    new = Pki(tmp_path / "other")
    new_ca = (new.folder / "ca.pem").read_text()
    model = {"tls_listeners": {}}
    disks = {"kafka1": {"config": "", "ca": old}}
    (problem,) = kafka_tls_problems(model, disks, new_ca, "/inv/.pki", "/etc/ssl/corp-ca.pem")
    assert problem.startswith("kafka1: trusts the CA whose certificate hashes to sha256 ")
    assert "is in kafka_tls_own_ca /etc/ssl/corp-ca.pem: the cluster would move to another CA in one roll." in problem
    assert "first list both CAs in kafka_tls_own_ca and run" in problem
    assert kafka_tls_problems(model, disks, old + new_ca, "/inv/.pki", "/etc/ssl/corp-ca.pem") == []
