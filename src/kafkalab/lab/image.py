"""The lab's base image: Debian with systemd, built with debootstrap and docker import, no registry.

One recipe (images/debian/) builds each Debian release of images/releases.yml; KAFKALAB_RELEASE picks one
(the file's first by default). The image is tagged with a hash of its recipe (release, package list, tidy
script, import changes) and rebuilt only when the recipe changes; the debootstrap tree is cached as a tarball
and reused while the release and the package list stay the same. The name it is also tagged with (`:latest`)
is the release's name in images/releases.yml, the one the lab's and molecule's hosts start from.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kafkalab.lab.common import IMAGE_DIR, LabError, ensure_tools, project_root, read_yaml, require_root, run, say
from kafkalab.lab.engine import cmd_engine
from kafkalab.lab.systemd_host import load_systemd_host

RECIPE_LABEL = "kafkalab.recipe"
IMAGE_CACHE = Path(".cache/images")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
RELEASES_FILE = Path("images/releases.yml")
RELEASE_ENV = "KAFKALAB_RELEASE"


@dataclass(frozen=True)
class Release:
    """A Debian release the hosts can run: its suite (what debootstrap installs) and the image hosts start from."""

    suite: str
    image: str


def parse_releases(data: object, source: str = str(RELEASES_FILE)) -> dict[str, str]:
    """images/releases.yml: suite -> image name, in the file's order (the first is the default)."""
    if not isinstance(data, dict) or not data:
        raise LabError(f"{source} must map each Debian release (suite) to the name of its image")
    for suite, name in data.items():
        if not isinstance(suite, str) or not re.fullmatch(r"[a-z]+", suite):
            raise LabError(f"{source}: {suite!r} is not a Debian suite name (bookworm, trixie, ...)")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9./:_-]+:[A-Za-z0-9._-]+", name):
            raise LabError(f"{source}: {suite}: {name!r} is not an image name with a tag (kafkalab/debian13:latest)")
    return dict(data)


def choose_release(releases: dict[str, str], wanted: str | None) -> Release:
    """The release KAFKALAB_RELEASE names (LAB_RELEASE for make), else the first of images/releases.yml."""
    suite = wanted or next(iter(releases))
    if suite not in releases:
        raise LabError(
            f"{RELEASE_ENV}={suite}: no such release in {RELEASES_FILE}; "
            f"use one of {', '.join(releases)} (make lab LAB_RELEASE={next(iter(releases))})"
        )
    return Release(suite, releases[suite])


def load_release(root: Path) -> Release:
    return choose_release(parse_releases(read_yaml(root, RELEASES_FILE)), os.environ.get(RELEASE_ENV) or None)


@dataclass(frozen=True)
class Recipe:
    """Everything that determines the base image's content; its hash is the image tag."""

    suite: str
    packages: tuple[str, ...]
    tidy_script: bytes
    import_changes: tuple[str, ...]


def parse_package_list(text: str) -> tuple[str, ...]:
    """Package names from a list file: one per line, '#' comments, blank lines ignored."""
    names = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return tuple(name for name in names if name)


def recipe_hash(recipe: Recipe) -> str:
    """A short, stable hash of the recipe: the image tag."""
    digest = hashlib.sha256()
    digest.update(bootstrap_hash(recipe).encode())
    digest.update(b"\0tidy\0" + recipe.tidy_script)
    digest.update(b"\0changes\0" + "\n".join(recipe.import_changes).encode())
    return digest.hexdigest()[:12]


def bootstrap_hash(recipe: Recipe) -> str:
    """Hash of what debootstrap alone produces, so a tidy-script change reuses the cached tree."""
    # Sorted: the order of --include does not change what gets installed.
    text = "suite=" + recipe.suite + "\ninclude=" + ",".join(sorted(recipe.packages))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def debootstrap_args(recipe: Recipe, target: Path, mirror: str) -> list[str]:
    return [
        "debootstrap",
        "--variant=minbase",
        "--include=" + ",".join(recipe.packages),
        recipe.suite,
        str(target),
        mirror,
    ]


def image_repository(ref: str) -> str:
    """The repository part of an image reference (kafkalab/debian12 of kafkalab/debian12:latest)."""
    name, colon, tag = ref.rpartition(":")
    return name if colon and "/" not in tag else ref


def import_args(recipe: Recipe, tag: str) -> list[str]:
    args = ["docker", "import"]
    for change in recipe.import_changes:
        args += ["--change", change]
    return [*args, "-", tag]


def debian_mirrors(sources: str) -> tuple[str | None, str | None]:
    """(main mirror, security mirror) from apt sources, deb822 (.sources) or one-line format."""
    main: str | None = None
    security: str | None = None
    entries: list[tuple[str, str]] = []  # (uri, suites)
    for stanza in re.split(r"\n\s*\n", sources):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and "uris" in fields:
            entries.append((fields["uris"].split()[0], fields.get("suites", "")))
    for line in sources.splitlines():
        match = re.match(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
        if match:
            entries.append((match.group(1), match.group(2)))
    for uri, suites in entries:
        if not uri.startswith("http"):
            continue
        if "security" in suites or "security" in uri:
            security = security or uri
        else:
            main = main or uri
    return main, security


def load_recipe(root: Path, release: Release) -> Recipe:
    image_dir = root / IMAGE_DIR
    packages = parse_package_list((image_dir / "packages").read_text())
    return Recipe(
        suite=release.suite,
        packages=packages,
        tidy_script=(image_dir / "tidy.sh").read_bytes(),
        import_changes=(
            f'CMD ["{load_systemd_host(root).command}"]',
            # systemd detects the container through this and adapts (no udev, no hardware).
            "ENV container=docker",
        ),
    )


def host_mirrors() -> tuple[str, str | None]:
    """The Debian mirrors from this machine's apt sources (override: KAFKALAB_DEBIAN_MIRROR)."""
    texts = []
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.suffix in (".list", ".sources") and path.is_file():
            texts.append(path.read_text())
    main, security = debian_mirrors("\n\n".join(texts))
    main = os.environ.get("KAFKALAB_DEBIAN_MIRROR") or main or DEFAULT_MIRROR
    security = os.environ.get("KAFKALAB_DEBIAN_SECURITY_MIRROR") or security
    return main, security


def image_exists(ref: str) -> bool:
    return run(["docker", "image", "inspect", ref], check=False).returncode == 0


def image_id(ref: str) -> str | None:
    proc = run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def bootstrap_tarball(root: Path, recipe: Recipe, mirror: str) -> Path:
    """The untouched debootstrap tree as a tarball, built once per (suite, packages)."""
    cache = root / IMAGE_CACHE
    tarball = cache / f"{recipe.suite}-bootstrap-{bootstrap_hash(recipe)}.tar"
    if tarball.is_file():
        say(f"reusing cached debootstrap tree {tarball.relative_to(root)}")
        return tarball
    ensure_tools({"debootstrap": "debootstrap"})
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="debootstrap-") as tmp:
        target = Path(tmp) / "rootfs"
        say(f"debootstrap {recipe.suite} from {mirror} (a few minutes)")
        proc = run(debootstrap_args(recipe, target, mirror), check=False)
        if proc.returncode != 0:
            log = target / "debootstrap" / "debootstrap.log"
            tail = log.read_text(errors="replace")[-2000:] if log.is_file() else proc.stderr.decode()
            raise LabError(f"debootstrap failed (mirror {mirror}; set KAFKALAB_DEBIAN_MIRROR):\n{tail}")
        partial = tarball.with_suffix(".tar.partial")
        run([*tar_create_args(target), "-f", str(partial)], what="archiving the debootstrap tree")
        partial.rename(tarball)  # atomic: a crash never leaves a truncated cache entry
    return tarball


# Numeric owners and xattrs (file capabilities, e.g. ping's) must survive into the image.
TAR_KEEP = ("--numeric-owner", "--xattrs", "--xattrs-include=*")


def tar_create_args(directory: Path) -> list[str]:
    return ["tar", *TAR_KEEP, "-C", str(directory), "-c", "."]


def tar_extract_args(tarball: Path, directory: Path) -> list[str]:
    return ["tar", *TAR_KEEP, "-C", str(directory), "-xf", str(tarball)]


def cmd_image(force: bool = False, release: Release | None = None) -> str:
    """Make sure the release's image <name>:<recipe hash> exists (kafkalab/debian12:3a5... for bookworm) and the
    name the hosts use (:latest) points at it; return the tag. The release is KAFKALAB_RELEASE's unless given."""
    root = project_root()
    release = release or load_release(root)
    recipe = load_recipe(root, release)
    # The name the hosts are started from; the build is also tagged with its recipe hash.
    latest = release.image
    tag = f"{image_repository(latest)}:{recipe_hash(recipe)}"
    cmd_engine()
    if image_exists(tag) and not force:
        if image_id(latest) != image_id(tag):
            run(["docker", "tag", tag, latest], what="tagging the image")
        say(f"image {tag} is up to date")
        return tag
    require_root("building the base image")
    mirror, security = host_mirrors()
    tarball = bootstrap_tarball(root, recipe, mirror)
    with tempfile.TemporaryDirectory(dir=root / IMAGE_CACHE, prefix="tidy-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        rootfs.mkdir()
        run(tar_extract_args(tarball, rootfs), what="unpacking the debootstrap tree")
        env = {
            **os.environ,
            "KAFKALAB_SUITE": recipe.suite,
            "KAFKALAB_MIRROR": mirror,
            "KAFKALAB_SECURITY_MIRROR": security or "",
        }
        say(f"tidying the tree for containers ({IMAGE_DIR}/tidy.sh)")
        tidy = subprocess.run(["sh", str(root / IMAGE_DIR / "tidy.sh"), str(rootfs)], env=env, capture_output=True)
        if tidy.returncode != 0:
            raise LabError(f"{IMAGE_DIR}/tidy.sh failed:\n{tidy.stderr.decode(errors='replace')}")
        say(f"importing {tag}")
        changes = [*recipe.import_changes, f"LABEL {RECIPE_LABEL}={recipe_hash(recipe)}"]
        labelled = Recipe(recipe.suite, recipe.packages, recipe.tidy_script, tuple(changes))
        # Streamed: the tree never exists twice on disk as a tarball.
        tar = subprocess.Popen(tar_create_args(rootfs), stdout=subprocess.PIPE)
        assert tar.stdout is not None
        importer = subprocess.run(import_args(labelled, tag), stdin=tar.stdout, capture_output=True)
        tar.stdout.close()
        if tar.wait() != 0 or importer.returncode != 0:
            detail = importer.stderr.decode(errors="replace").strip()
            raise LabError(f"docker import of {tag} failed: {detail or 'tar failed'}")
    run(["docker", "tag", tag, latest], what="tagging the image")
    say(f"built {tag} (also {latest})")
    return tag
