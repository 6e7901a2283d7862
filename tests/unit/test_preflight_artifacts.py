"""playbooks/preflight.yml on the controller: the Kafka archive is verified by sha512 before any host changes.

Covers both sources: `local` (an archive already on the controller) and `url` (downloaded from a
local HTTP server standing in for Apache's archive, with a pinned or a published .sha512 in either
of the two formats Apache uses).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab.ansible_driver import PlaybookRun, run_playbook

ROOT = Path(__file__).resolve().parents[2]
NAME = "kafka_2.13-4.3.1.tgz"


def run_preflight(tmp: Path, group_vars: dict[str, Any]) -> PlaybookRun:
    inv = {
        "all": {
            "vars": {
                "kafka_artifact_cache": str(tmp / "cache"),
                "kafka_version": "4.3.1",
                # preflight.yml also plans the firewall and checks the hosts' SSH source; these hosts
                # do not exist, so they are "reached" locally, which the SSH check leaves alone.
                "firewall_admin_networks": ["192.0.2.1/32"],
                "ansible_connection": "local",
                # The host preflight reads each node's metadata dir (absent here): with this Python.
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                **group_vars,
            },
            "hosts": {f"kafka{i}": {"ansible_host": f"192.0.2.{10 + i}", "kafka_node_id": i} for i in (1, 2, 3)},
            "children": {
                "kafka": {
                    "children": {
                        "kafka_controller": {"hosts": {"kafka1": None, "kafka2": None, "kafka3": None}},
                        "kafka_broker": {"hosts": {"kafka1": None, "kafka2": None, "kafka3": None}},
                    }
                }
            },
        }
    }
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inv))
    return run_playbook(ROOT / "playbooks/preflight.yml", tmp / "hosts.yml", cwd=ROOT, timeout=300)


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "dist" / NAME
    path.parent.mkdir()
    path.write_bytes(os.urandom(4096))
    return path, hashlib.sha512(path.read_bytes()).hexdigest()


@pytest.fixture
def server(archive: tuple[Path, str]) -> Iterator[str]:
    """A local HTTP server (loopback only) serving the archive's directory."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive[0].parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_local_archive_with_matching_sha512_is_accepted(tmp_path: Path, archive: tuple[Path, str]) -> None:
    path, sha = archive
    result = run_preflight(
        tmp_path, {"kafka_archive_source": "local", "kafka_archive_local_path": str(path), "kafka_archive_sha512": sha}
    )
    assert result.returncode == 0, result.stdout[-3000:]


def test_local_archive_with_wrong_sha512_is_refused(tmp_path: Path, archive: tuple[Path, str]) -> None:
    path, sha = archive
    wrong = "0" * 128
    result = run_preflight(
        tmp_path,
        {"kafka_archive_source": "local", "kafka_archive_local_path": str(path), "kafka_archive_sha512": wrong},
    )
    assert result.returncode != 0
    assert f"sha512 is {sha} but kafka_archive_sha512 says {wrong}" in result.stdout


def test_missing_local_archive_is_refused_with_the_fix(tmp_path: Path) -> None:
    result = run_preflight(
        tmp_path,
        {
            "kafka_archive_source": "local",
            "kafka_archive_local_path": str(tmp_path / "nope.tgz"),
            "kafka_archive_sha512": "a" * 128,
        },
    )
    assert result.returncode != 0
    assert (
        "no such file: the archive of kafka_version 4.3.1 (kafka_archive_local_path) is not on the controller"
        in result.stdout
    )


def test_download_with_pinned_sha512_lands_in_the_cache(tmp_path: Path, archive: tuple[Path, str], server: str) -> None:
    _, sha = archive
    result = run_preflight(tmp_path, {"kafka_archive_url": f"{server}/{NAME}", "kafka_archive_sha512": sha})
    assert result.returncode == 0, result.stdout[-3000:]
    cached = tmp_path / "cache" / NAME
    assert hashlib.sha512(cached.read_bytes()).hexdigest() == sha


def test_download_with_wrong_sha512_is_refused_and_not_cached(
    tmp_path: Path, archive: tuple[Path, str], server: str
) -> None:
    result = run_preflight(tmp_path, {"kafka_archive_url": f"{server}/{NAME}", "kafka_archive_sha512": "b" * 128})
    assert result.returncode != 0
    assert "checksum" in result.stdout.lower()
    assert not (tmp_path / "cache" / NAME).exists()


@pytest.mark.parametrize("style", ["sha512sum", "gpg-print-md"])
def test_download_verified_against_the_published_sha512(
    tmp_path: Path, archive: tuple[Path, str], server: str, style: str
) -> None:
    path, sha = archive
    if style == "sha512sum":
        published = f"{sha}  {NAME}\n"
    else:  # gpg --print-md SHA512: upper case, grouped by 8, wrapped over lines
        groups = [sha[i : i + 8].upper() for i in range(0, 128, 8)]
        published = (
            f"{NAME}: " + " ".join(groups[:6]) + "\n" + " ".join(groups[6:12]) + "\n" + " ".join(groups[12:]) + "\n"
        )
    (path.parent / f"{NAME}.sha512").write_text(published)
    result = run_preflight(tmp_path, {"kafka_archive_url": f"{server}/{NAME}"})
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "cache" / NAME).exists()


def test_the_sha512_lookup_hashes_files_and_gives_nothing_for_what_is_no_file(tmp_path: Path) -> None:
    """kafkalab.kafka.sha512, which every artifact check of the preflight (Kafka, ZooKeeper, the JMX agent, the
    wheels and jars) compares with the pinned sha512: a file's sha512 in full, and '' (which no pin equals) for a
    missing path or a directory."""
    from ansible_collections.kafkalab.kafka.plugins.lookup.sha512 import LookupModule

    data = os.urandom(3 * (1 << 20) + 17)  # more than one read block
    (tmp_path / "a.jar").write_bytes(data)
    found = LookupModule().run([str(tmp_path / "a.jar"), str(tmp_path / "gone.jar"), str(tmp_path)], {})
    assert found == [hashlib.sha512(data).hexdigest(), "", ""]
