"""The repository as the Ansible collection kafkalab.kafka: build its tarball, install it, run ansible-test sanity.

    python -m kafkalab.collection build    --out .cache/collection
    python -m kafkalab.collection install  --tarball T --path DIR
    python -m kafkalab.collection sanity   --tarball T

`sanity` installs the tarball into an empty folder outside any git checkout (ansible-test lists a collection's
files through git when it sits inside one, and the repository ignores .cache) and runs `ansible-test sanity`
there, on exactly what an operator installs. ansible-test makes a virtual environment for each test and seeds
its pip with a script it downloads from Ansible's CI host, which these machines cannot reach: the seed here is
the same pip wheel from PyPI (the version ansible-test pins), run from a script of this tool's own.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# The Python the checks run on: the controller's (Debian 12's 3.11; ansible-core 2.19 supports it).
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
SEED_MARK = "# kafkalab: ansible-test's pip seed, from the PyPI wheel"


class CollectionError(RuntimeError):
    """A step failed; the message says which and why."""


def _bin(name: str) -> str:
    """A tool of the running Python's environment (the venv's ansible-galaxy, ansible-test)."""
    found = Path(sys.executable).parent / name
    return str(found) if found.exists() else name


def _run(cmd: Sequence[str], cwd: Path | None = None) -> None:
    done = subprocess.run(list(cmd), cwd=cwd, check=False)
    if done.returncode != 0:
        raise CollectionError(f"{' '.join(cmd)} exited {done.returncode}")


def metadata(root: Path = ROOT) -> dict[str, str]:
    data = yaml.safe_load((root / "galaxy.yml").read_text())
    return {"namespace": data["namespace"], "name": data["name"], "version": str(data["version"])}


def tarball_name(root: Path = ROOT) -> str:
    meta = metadata(root)
    return f"{meta['namespace']}-{meta['name']}-{meta['version']}.tar.gz"


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    _run([_bin("ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out.resolve())], cwd=ROOT)
    return out / tarball_name()


def install(tarball: Path, path: Path) -> Path:
    """Install into an empty collections path (no dependencies: they come with the `ansible` package)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    # --force: a clone's own collections/ (ansible.cfg) already holds kafkalab.kafka, which would make it a no-op.
    _run(
        [
            _bin("ansible-galaxy"),
            "collection",
            "install",
            "--force",
            "--no-deps",
            "--offline",
            "-p",
            str(path),
            str(tarball.resolve()),
        ]
    )
    meta = metadata()
    return path / "ansible_collections" / meta["namespace"] / meta["name"]


def ansible_test_pip() -> str:
    """The pip version ansible-test seeds its virtual environments with."""
    import ansible_test  # the ansible-core package's test tool

    source = (Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py").read_text()
    found = re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", source)
    if not found:
        raise CollectionError("cannot read the pip version ansible-test pins (python_requirements.py changed)")
    return found.group(1)


def seed_pip(cache: Path) -> None:
    """Give ansible-test its pip seed from PyPI instead of the CI host it would download it from."""
    version = ansible_test_pip()
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / f"pip-{version}-py3-none-any.whl"
    if not wheel.exists():
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(cache), f"pip=={version}"])
    seed = Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{version.replace('.', '_')}.py"
    if seed.exists() and SEED_MARK not in seed.read_text():
        return  # ansible-test's own download, from a machine that reached it: use it as it is
    seed.parent.mkdir(parents=True, exist_ok=True)
    # Run by ansible-test as get-pip.py would be: its arguments are pip install's (the packages, pip's options).
    seed.write_text(
        f"{SEED_MARK}\n"
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(wheel.resolve())!r})\n"
        'args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]\n'
        'sys.argv = ["pip", "install", *args]\n'
        'runpy.run_module("pip", run_name="__main__", alter_sys=True)\n'
    )


def sanity(tarball: Path, tests: Sequence[str] = ()) -> None:
    seed_pip(ROOT / ".cache" / "ansible-test")
    with tempfile.TemporaryDirectory(prefix="kafkalab-sanity-") as tmp:
        collection = install(tarball, Path(tmp) / "collections")
        cmd = [_bin("ansible-test"), "sanity", "--python", PYTHON, "--requirements", "--color", "no"]
        cmd += [arg for test in tests for arg in ("--test", test)]
        _run(cmd, cwd=collection)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.collection", description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="ansible-galaxy collection build into --out; prints the tarball's path")
    b.add_argument("--out", type=Path, default=ROOT / ".cache" / "collection")
    i = sub.add_parser("install", help="install --tarball into an empty collections path --path")
    i.add_argument("--tarball", type=Path, required=True)
    i.add_argument("--path", type=Path, required=True)
    s = sub.add_parser("sanity", help="ansible-test sanity on the installed --tarball")
    s.add_argument("--tarball", type=Path, required=True)
    s.add_argument("--test", action="append", default=[], help="one sanity test (repeatable); default: all")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build(args.out))
        elif args.command == "install":
            print(install(args.tarball, args.path))
        else:
            sanity(args.tarball, args.test)
    except CollectionError as err:
        print(f"kafkalab.collection: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
