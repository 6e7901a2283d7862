#!/usr/bin/python3
"""Make Kafka Connect's REST server stores from the PEM files of the pki role (run as root by the kafka_connect role).

Connect's REST server (Jetty) reads a keystore and a truststore, not PEM files: this writes rest-keystore.p12 (the
key and its certificate chain, from node.pem, cert.pem and ca.pem) and rest-truststore.p12 (the CA, a trusted
certificate entry, through keytool) into --dir, root:<group> 0640, with the password read from standard input.
It rewrites them only when the PEM files or the password changed (a stamp of their sha256 sits next to them), and
prints `changed` then, `unchanged` otherwise.
"""

from __future__ import annotations

import argparse
import grp
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def stamp_of(directory: Path, password: str) -> str:
    digest = hashlib.sha256(password.encode())
    for name in ("key.pem", "cert.pem", "ca.pem"):
        digest.update((directory / name).read_bytes())
    return digest.hexdigest()


def install(source: Path, target: Path, gid: int) -> None:
    os.chown(source, 0, gid)
    os.chmod(source, 0o640)
    os.replace(source, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--group", required=True)
    args = parser.parse_args()
    password = sys.stdin.read().strip()
    if len(password) < 8:
        print("the store password (standard input) is shorter than 8 characters", file=sys.stderr)
        return 2
    directory: Path = args.dir
    stamp_file = directory / "rest-stores.sha256"
    stamp = stamp_of(directory, password)
    keystore, truststore = directory / "rest-keystore.p12", directory / "rest-truststore.p12"
    if keystore.exists() and truststore.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        print("unchanged")
        return 0
    gid = grp.getgrnam(args.group).gr_gid
    env = {**os.environ, "STORE_PASS": password}
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        new_keystore, new_truststore = Path(tmp) / "k.p12", Path(tmp) / "t.p12"
        subprocess.run(
            [
                "openssl",
                "pkcs12",
                "-export",
                "-name",
                "rest",
                "-inkey",
                str(directory / "key.pem"),
                "-in",
                str(directory / "cert.pem"),
                "-certfile",
                str(directory / "ca.pem"),
                "-out",
                str(new_keystore),
                "-passout",
                "env:STORE_PASS",
            ],
            check=True,
            env=env,
            capture_output=True,
        )
        # Each CA certificate of the bundle (a rotation's old and new CA) as its own trusted entry.
        blocks = (directory / "ca.pem").read_text().split("-----END CERTIFICATE-----")
        for index, block in enumerate(b for b in blocks if "-----BEGIN CERTIFICATE-----" in b):
            pem = Path(tmp) / f"ca{index}.pem"
            pem.write_text(block.strip() + "\n-----END CERTIFICATE-----\n")
            subprocess.run(
                [
                    "keytool",
                    "-importcert",
                    "-noprompt",
                    "-alias",
                    f"ca{index}",
                    "-file",
                    str(pem),
                    "-keystore",
                    str(new_truststore),
                    "-storetype",
                    "PKCS12",
                    "-storepass:env",
                    "STORE_PASS",
                ],
                check=True,
                env=env,
                capture_output=True,
            )
        install(new_keystore, keystore, gid)
        install(new_truststore, truststore, gid)
    stamp_file.write_text(stamp)
    stamp_file.chmod(0o600)
    print("changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
