"""The repository as the collection kafkalab.kafka: what its tarball holds, and the scenario that converges from it.

The converge itself (molecule/zookeeper) proves the installed tarball works; these tests keep that scenario honest
(nothing of the clone reachable) and the tarball complete, without containers.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
import yaml

from kafkalab.collection import build, install, metadata

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("collection"))


def test_the_tarball_holds_the_roles_playbooks_plugins_and_locks_but_no_tests_or_caches(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    tops = {name.split("/")[0] for name in names}
    assert {"roles", "playbooks", "plugins", "meta", "artifacts", "inventories"} <= tops
    for role in (p.name for p in (ROOT / "roles").iterdir() if p.is_dir()):
        assert f"roles/{role}/tasks/main.yml" in names or f"roles/{role}/meta/argument_specs.yml" in names, role
    # The lag exporter's modules, which the prometheus role pushes from the collection.
    assert {f"src/kafkalab/{f}" for f in ("__init__.py", "kafka_client.py", "report.py", "lag_exporter.py")} <= names
    assert "tests/sanity/ignore-2.19.txt" in names
    for left_out in (
        ".cache",
        ".venv",
        "molecule",
        "collections",
        "tests/unit",
        "tests/journeys",
        "spark",
        "src/kafkalab/lab",
    ):
        assert not any(n == left_out or n.startswith(left_out + "/") for n in names), left_out


def test_installing_it_gives_a_collection_named_as_galaxy_yml_says(tarball: Path, tmp_path: Path) -> None:
    meta = metadata()
    installed = install(tarball, tmp_path / "collections")
    assert installed == tmp_path / "collections" / "ansible_collections" / meta["namespace"] / meta["name"]
    manifest = yaml.safe_load((installed / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["version"] == meta["version"]
    assert (installed / "plugins" / "modules" / "kafka_gate.py").is_file()


def test_the_zookeeper_scenario_converges_from_the_installed_tarball_with_nothing_of_the_clone_in_reach() -> None:
    converge = yaml.safe_load((ROOT / "molecule/zookeeper/converge.yml").read_text())
    assert [play.get("ansible.builtin.import_playbook") for play in converge] == ["kafkalab.kafka.site"]
    scenario = yaml.safe_load((ROOT / "molecule/zookeeper/molecule.yml").read_text())
    assert scenario["provisioner"]["playbooks"]["converge"] == "converge.yml"
    env = scenario["provisioner"]["env"]
    paths = env["ANSIBLE_COLLECTIONS_PATH"].split(":")
    assert paths[0] == "${MOLECULE_PROJECT_DIRECTORY}/.cache/collection/installed"
    # The clone's own link (collections/) is neither named nor found through sys.path; no roles_path either.
    assert not any(re.search(r"/collections/?$", p) for p in paths)
    assert env["ANSIBLE_COLLECTIONS_SCAN_SYS_PATH"] == "false"
    assert "ANSIBLE_ROLES_PATH" not in env


def test_the_repository_names_roles_and_plugins_only_by_their_fully_qualified_names() -> None:
    cfg = (ROOT / "ansible.cfg").read_text()
    assert not re.search(r"^\s*roles_path\s*=", cfg, re.M)
    assert (ROOT / "collections/ansible_collections/kafkalab/kafka").resolve() == ROOT
    roles = {p.name for p in (ROOT / "roles").iterdir() if p.is_dir()}
    short = re.compile(r"^\s*(?:- )?(?:role|name): (" + "|".join(sorted(roles)) + r")\s*$", re.M)
    offenders = []
    for path in [*ROOT.glob("playbooks/**/*.yml"), *ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("molecule/*/*.yml")]:
        for match in short.finditer(path.read_text()):
            line = path.read_text()[: match.start()].count("\n") + 1
            before = path.read_text().splitlines()[line - 2] if line > 1 else ""
            if "role:" in match.group(0) or re.search(r"(include|import)_role:\s*$", before):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "name roles as kafkalab.kafka.<role>"
