"""The local lab: systemd containers that behave like VMs, for the Kafka roles to provision.

Run as ``python -m kafkalab.lab {engine,image,up,down,status}`` from the repository root, as root.

- ``engine``  makes sure a Docker engine answers (installs docker.io and starts dockerd if needed).
- ``image``   builds ``kafkalab/debian12:<recipe hash>`` from debootstrap, without any registry.
- ``up``      starts one container per inventory host at its ``ansible_host`` address, reachable by SSH.
- ``down``    removes the lab's containers and network (only what carries our label).
- ``status``  prints one line per lab host.

Logic (argument lists, recipe hashing, inventory parsing, network checks) lives in small pure
functions; the rest shells out to the docker CLI, debootstrap and ansible-inventory.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IMAGE_REPO = "kafkalab/debian12"
LATEST_IMAGE = f"{IMAGE_REPO}:latest"
# Every container and network `up` creates carries this label (value: the network name), so `down`
# removes exactly what the lab made and nothing else.
LAB_LABEL = "kafkalab.lab"
RECIPE_LABEL = "kafkalab.recipe"
DOCKERD_DATA_ROOT = "/var/lib/docker"
DOCKERD_LOG = "/var/log/kafkalab-dockerd.log"
DEFAULT_INVENTORY = "inventories/lab"
IMAGE_DIR = Path("images/debian12")
IMAGE_CACHE = Path(".cache/images")
KEY_PATH = Path(".cache/lab/id_ed25519")
DEFAULT_MIRROR = "http://deb.debian.org/debian"

# The flags that let systemd run as PID 1 without --privileged (which this kind of VM refuses:
# "unable to apply caps"). Keep in step with molecule/default/molecule.yml.
SYSTEMD_RUN_FLAGS: tuple[str, ...] = (
    "--cgroupns=host",
    "--cap-add", "SYS_ADMIN",
    "--cap-add", "NET_ADMIN",
    "--security-opt", "seccomp=unconfined",
    "--security-opt", "apparmor=unconfined",
    "--volume", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
    "--tmpfs", "/run",
    "--tmpfs", "/run/lock",
    # systemd halts cleanly on SIGRTMIN+3; on docker's default SIGTERM it re-executes itself and
    # `docker stop` ends in SIGKILL after 10 s. (docker import cannot set STOPSIGNAL in the image.)
    "--stop-signal", "SIGRTMIN+3",
)  # fmt: skip
SYSTEMD_COMMAND = "/lib/systemd/systemd"


PUBLISH_SPEC = re.compile(r"^((\d{1,3}\.){3}\d{1,3}:)?\d{1,5}:\d{1,5}(/(tcp|udp))?$")


class LabError(Exception):
    """A failure with a message that says what failed and what to do about it."""


# --------------------------------------------------------------------------- pure logic


@dataclass(frozen=True)
class Recipe:
    """Everything that determines the base image's content; its hash is the image tag."""

    suite: str
    packages: tuple[str, ...]
    tidy_script: bytes
    import_changes: tuple[str, ...]


@dataclass(frozen=True)
class LabHost:
    name: str
    ip: str
    # docker --publish specs ([host_ip:]host_port:container_port): stand-ins for NAT in front of a host.
    publish: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabSpec:
    network: str
    subnet: str
    hosts: tuple[LabHost, ...]


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


def parse_inventory(data: Mapping[str, Any]) -> LabSpec:
    """The lab's shape from `ansible-inventory --list` output: network, subnet, hosts."""
    hostvars: Mapping[str, Mapping[str, Any]] = data.get("_meta", {}).get("hostvars", {})
    if not hostvars:
        raise LabError("the inventory has no hosts (checked `ansible-inventory --list` _meta.hostvars)")
    networks = {str(v.get("lab_network_name")) for v in hostvars.values()}
    subnets = {str(v.get("lab_network_subnet")) for v in hostvars.values()}
    if len(networks) != 1 or len(subnets) != 1 or "None" in networks | subnets:
        raise LabError(
            "every host needs the same lab_network_name and lab_network_subnet "
            f"(found {sorted(networks)} / {sorted(subnets)}): set them once in group_vars/all/lab.yml"
        )
    network, subnet_text = networks.pop(), subnets.pop()
    try:
        subnet = ipaddress.ip_network(subnet_text)
    except ValueError as exc:
        raise LabError(f"lab_network_subnet {subnet_text!r} is not a network: {exc}") from exc
    # Docker gives the first address to the bridge (the gateway).
    gateway = next(subnet.hosts())
    hosts: list[LabHost] = []
    for name in sorted(hostvars):
        ip_text = hostvars[name].get("ansible_host")
        if not ip_text:
            raise LabError(f"host {name} has no ansible_host: the lab needs a fixed address per host")
        try:
            ip = ipaddress.ip_address(str(ip_text))
        except ValueError as exc:
            raise LabError(f"host {name}: ansible_host {ip_text!r} is not an IP address") from exc
        if ip not in subnet or ip in (subnet.network_address, subnet.broadcast_address, gateway):
            raise LabError(
                f"host {name}: ansible_host {ip} is not a usable address in {subnet} "
                f"(the gateway {gateway} is taken by docker)"
            )
        publish = hostvars[name].get("lab_published_ports") or []
        if not isinstance(publish, list) or not all(PUBLISH_SPEC.match(str(p)) for p in publish):
            raise LabError(
                f"host {name}: lab_published_ports {publish!r} must be a list of "
                "'[host_ip:]host_port:container_port' strings, e.g. ['127.0.0.1:19091:9094']"
            )
        hosts.append(LabHost(name=name, ip=str(ip), publish=tuple(str(p) for p in publish)))
    ips = [h.ip for h in hosts]
    duplicates = sorted({ip for ip in ips if ips.count(ip) > 1})
    if duplicates:
        raise LabError(f"several hosts share ansible_host {', '.join(duplicates)}")
    return LabSpec(network=network, subnet=str(subnet), hosts=tuple(hosts))


def network_subnets(inspect: Mapping[str, Any]) -> list[str]:
    """The subnets of one `docker network inspect` entry."""
    configs = (inspect.get("IPAM") or {}).get("Config") or []
    return [str(c["Subnet"]) for c in configs if c.get("Subnet")]


def subnet_mismatch(network: str, existing: Sequence[str], wanted: str) -> str | None:
    """An error message if an existing network does not have the wanted subnet, else None."""
    wanted_net = ipaddress.ip_network(wanted)
    if any(ipaddress.ip_network(s) == wanted_net for s in existing):
        return None
    return (
        f"docker network {network} exists with subnet {', '.join(existing) or '(none)'}, "
        f"but the inventory wants {wanted}: remove it (`python -m kafkalab.lab down`, or "
        f"`docker network rm {network}` if the lab did not create it) or change lab_network_subnet"
    )


def container_name(network: str, host: str) -> str:
    """The lab container for an inventory host.

    Prefixed with the network so that the lab can run next to molecule scenarios, whose
    containers are named exactly after their (same) host names.
    """
    return f"{network}-{host}"


def docker_run_args(host: LabHost, network: str, image: str) -> list[str]:
    """The `docker run` command line for one lab host."""
    return [
        "docker", "run", "--detach",
        "--name", container_name(network, host.name),
        "--hostname", host.name,
        "--label", f"{LAB_LABEL}={network}",
        "--network", network,
        "--ip", host.ip,
        # Other lab hosts resolve this one by its inventory name through docker's DNS.
        "--network-alias", host.name,
        *(arg for spec in host.publish for arg in ("--publish", spec)),
        *SYSTEMD_RUN_FLAGS,
        image,
        SYSTEMD_COMMAND,
    ]  # fmt: skip


def network_create_args(network: str, subnet: str) -> list[str]:
    return [
        "docker", "network", "create",
        "--driver", "bridge",
        "--subnet", subnet,
        "--label", f"{LAB_LABEL}={network}",
        network,
    ]  # fmt: skip


def ssh_args(key: Path, ip: str, *command: str) -> list[str]:
    return [
        "ssh", "-i", str(key),
        "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null",
        "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=5",
        "-o", "LogLevel=ERROR",
        f"root@{ip}", *command,
    ]  # fmt: skip


def container_ip(inspect: Mapping[str, Any], network: str) -> str | None:
    net = ((inspect.get("NetworkSettings") or {}).get("Networks") or {}).get(network) or {}
    configured = (net.get("IPAMConfig") or {}).get("IPv4Address")
    return str(configured or net.get("IPAddress") or "") or None


# --------------------------------------------------------------------------- side effects


def say(message: str) -> None:
    print(message, flush=True)


def run(
    cmd: Sequence[str],
    *,
    check: bool = True,
    capture: bool = True,
    input: bytes | None = None,
    timeout: float | None = None,
    what: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a command; on failure raise LabError naming the command and its stderr."""
    try:
        proc = subprocess.run(
            list(cmd),
            input=input,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.PIPE if capture else None,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise LabError(f"{cmd[0]} is not installed ({what or ' '.join(cmd)})") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"timed out after {timeout:.0f} s: {what or ' '.join(cmd)}") from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or b"").decode(errors="replace").strip()
        raise LabError(
            f"{what or 'command'} failed (exit {proc.returncode}): {' '.join(cmd)}" + (f"\n{detail}" if detail else "")
        )
    return proc


def out(cmd: Sequence[str], **kwargs: Any) -> str:
    return run(cmd, **kwargs).stdout.decode().strip()


def project_root() -> Path:
    """The repository root: KAFKALAB_ROOT, else the nearest directory up from here holding images/."""
    if env := os.environ.get("KAFKALAB_ROOT"):
        return Path(env).resolve()
    for candidate in (Path.cwd(), *Path.cwd().parents, *Path(__file__).resolve().parents):
        if (candidate / IMAGE_DIR / "tidy.sh").is_file():
            return candidate
    raise LabError("cannot find the repository root (no images/debian12/tidy.sh): run from the repo")


def require_root(action: str) -> None:
    if os.geteuid() != 0:
        raise LabError(f"{action} needs root: run it with sudo")


_apt_updated = False


def apt_install(packages: Iterable[str]) -> None:
    global _apt_updated
    pkgs = list(packages)
    require_root(f"installing {' '.join(pkgs)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    say(f"installing {' '.join(pkgs)} with apt-get")
    try:
        if not _apt_updated:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
            _apt_updated = True
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *pkgs],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise LabError(f"apt-get could not install {' '.join(pkgs)}: {exc}; install them by hand") from exc


def ensure_tools(tools: Mapping[str, str]) -> None:
    """Install the Debian packages providing any missing commands ({command: package})."""
    missing = sorted({pkg for cmd, pkg in tools.items() if shutil.which(cmd) is None})
    if missing:
        apt_install(missing)


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def dockerd_running() -> bool:
    """True if a dockerd is already running (perhaps still starting), judged by its pid file."""
    try:
        pid = int(Path("/var/run/docker.pid").read_text().strip())
    except (OSError, ValueError):
        return False
    return Path(f"/proc/{pid}").exists()


def cmd_engine(wait_seconds: float = 90) -> None:
    if docker_answers():
        return
    require_root("starting the docker engine")
    if shutil.which("dockerd") is None or shutil.which("docker") is None:
        apt_install(["docker.io"])
    if not dockerd_running():
        say(f"starting dockerd (data root {DOCKERD_DATA_ROOT}, log {DOCKERD_LOG})")
        with open(DOCKERD_LOG, "ab") as log:
            # A session of its own: dockerd must outlive this process and not get its signals.
            subprocess.Popen(
                ["dockerd", "--data-root", DOCKERD_DATA_ROOT],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )  # fmt: skip
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if docker_answers():
            say("docker engine is up")
            return
        time.sleep(1)
    raise LabError(f"docker info did not answer within {wait_seconds:.0f} s: see {DOCKERD_LOG}")


def load_recipe(root: Path) -> Recipe:
    image_dir = root / IMAGE_DIR
    packages = parse_package_list((image_dir / "packages").read_text())
    return Recipe(
        suite="bookworm",
        packages=packages,
        tidy_script=(image_dir / "tidy.sh").read_bytes(),
        import_changes=(
            f'CMD ["{SYSTEMD_COMMAND}"]',
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
    tarball = cache / f"debian12-bootstrap-{bootstrap_hash(recipe)}.tar"
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


def cmd_image(force: bool = False) -> str:
    """Make sure kafkalab/debian12:<recipe hash> exists and :latest points at it; return the tag."""
    root = project_root()
    recipe = load_recipe(root)
    tag = f"{IMAGE_REPO}:{recipe_hash(recipe)}"
    cmd_engine()
    if image_exists(tag) and not force:
        if image_id(LATEST_IMAGE) != image_id(tag):
            run(["docker", "tag", tag, LATEST_IMAGE], what="tagging the image")
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
        say("tidying the tree for containers (images/debian12/tidy.sh)")
        tidy = subprocess.run(["sh", str(root / IMAGE_DIR / "tidy.sh"), str(rootfs)], env=env, capture_output=True)
        if tidy.returncode != 0:
            raise LabError(f"images/debian12/tidy.sh failed:\n{tidy.stderr.decode(errors='replace')}")
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
    run(["docker", "tag", tag, LATEST_IMAGE], what="tagging the image")
    say(f"built {tag} (also {LATEST_IMAGE})")
    return tag


def ansible_inventory_cmd() -> str:
    # Prefer the ansible of the Python running us (a venv), then PATH.
    beside = Path(sys.executable).parent / "ansible-inventory"
    if beside.is_file():
        return str(beside)
    found = shutil.which("ansible-inventory")
    if not found:
        raise LabError("ansible-inventory not found: activate the project's venv (pip install ansible-core)")
    return found


def read_inventory(inventory: str) -> LabSpec:
    path = project_root() / inventory if not Path(inventory).is_absolute() else Path(inventory)
    if not path.exists():
        raise LabError(f"inventory {inventory} does not exist")
    text = out([ansible_inventory_cmd(), "-i", str(path), "--list"], what=f"reading inventory {inventory}")
    return parse_inventory(json.loads(text))


def inspect(kind: str, name: str) -> dict[str, Any] | None:
    proc = run(["docker", kind, "inspect", name], check=False)
    if proc.returncode != 0:
        return None
    entries: list[dict[str, Any]] = json.loads(proc.stdout)
    return entries[0] if entries else None


def ensure_network(spec: LabSpec) -> None:
    existing = inspect("network", spec.network)
    if existing is None:
        say(f"creating docker network {spec.network} ({spec.subnet})")
        run(network_create_args(spec.network, spec.subnet), what=f"creating network {spec.network}")
        return
    problem = subnet_mismatch(spec.network, network_subnets(existing), spec.subnet)
    if problem:
        raise LabError(problem)


def ensure_key(root: Path) -> Path:
    key = root / KEY_PATH
    if not key.is_file():
        ensure_tools({"ssh-keygen": "openssh-client"})
        key.parent.mkdir(parents=True, exist_ok=True)
        key.parent.chmod(0o700)
        say(f"generating SSH key {KEY_PATH}")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kafkalab-lab", "-f", str(key)])
    return key


def ensure_container(spec: LabSpec, host: LabHost, image: str) -> None:
    name = container_name(spec.network, host.name)
    existing = inspect("container", name)
    if existing is None:
        say(f"starting {name} at {host.ip}")
        run(docker_run_args(host, spec.network, image), what=f"starting container {name}")
        return
    labels = (existing.get("Config") or {}).get("Labels") or {}
    if labels.get(LAB_LABEL) != spec.network:
        raise LabError(f"a container named {name} exists but the lab did not create it: remove or rename it")
    ip = container_ip(existing, spec.network)
    if ip != host.ip:
        raise LabError(f"{name} runs at {ip}, the inventory says {host.ip}: `python -m kafkalab.lab down` then `up`")
    bound = ((existing.get("HostConfig") or {}).get("PortBindings")) or {}
    if len(bound) != len(host.publish):
        raise LabError(
            f"{name} publishes {len(bound)} port(s), the inventory asks for {len(host.publish)} "
            "(lab_published_ports): `python -m kafkalab.lab down` then `up`"
        )
    if existing.get("Image") != image_id(image):
        say(f"note: {name} runs an older base image; `down` then `up` to refresh it")
    if not (existing.get("State") or {}).get("Running"):
        say(f"starting stopped container {name}")
        run(["docker", "start", name], what=f"starting container {name}")


def install_key(name: str, public_key: bytes) -> None:
    # Written to a temporary file and renamed: sshd never sees a half-written key file.
    script = (
        "install -d -m 0700 /root/.ssh && cd /root/.ssh && umask 077 && "
        "cat > authorized_keys.new && mv authorized_keys.new authorized_keys"
    )
    cmd = ["docker", "exec", "-i", name, "sh", "-c", script]
    run(cmd, input=public_key, what=f"installing the SSH key in {name}")


def systemd_state(name: str) -> str:
    proc = run(["docker", "exec", name, "systemctl", "is-system-running"], check=False, timeout=15)
    return proc.stdout.decode().strip() or "unknown"


def wait_for_systemd(name: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    state = "unknown"
    while time.monotonic() < deadline:
        state = systemd_state(name)
        if state in ("running", "degraded"):
            break
        time.sleep(1)
    else:
        raise LabError(
            f"systemd in {name} is still {state!r} after {timeout:.0f} s: "
            f"look at `docker exec {name} systemctl list-jobs` and `docker logs {name}`"
        )
    if state == "degraded":
        failed = out(["docker", "exec", name, "systemctl", "--failed", "--no-legend", "--plain"], check=False)
        say(f"warning: {name} is degraded; failed units:\n{failed}")
    return state


def wait_for_ssh(key: Path, host: LabHost, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        proc = run(ssh_args(key, host.ip, "true"), check=False, timeout=20)
        if proc.returncode == 0:
            return
        last = proc.stderr.decode(errors="replace").strip()
        time.sleep(1)
    raise LabError(f"SSH to root@{host.ip} ({host.name}) with {KEY_PATH} failed for {timeout:.0f} s: {last}")


def cmd_up(inventory: str) -> None:
    root = project_root()
    spec = read_inventory(inventory)
    cmd_engine()
    cmd_image()
    ensure_tools({"ssh": "openssh-client"})
    ensure_network(spec)
    key = ensure_key(root)
    public_key = key.with_suffix(".pub").read_bytes()
    # Start every container first so that they boot in parallel, then wait for each.
    for host in spec.hosts:
        ensure_container(spec, host, LATEST_IMAGE)
    for host in spec.hosts:
        name = container_name(spec.network, host.name)
        install_key(name, public_key)
        state = wait_for_systemd(name)
        wait_for_ssh(key, host)
        say(f"{host.name}: {host.ip} systemd {state}, ssh ok")


def cmd_down(inventory: str) -> None:
    spec = read_inventory(inventory)
    if not docker_answers():
        raise LabError("docker does not answer: start it with `python -m kafkalab.lab engine`")
    ids = out(["docker", "ps", "-aq", "--filter", f"label={LAB_LABEL}={spec.network}"]).split()
    if ids:
        say(f"removing {len(ids)} lab container(s)")
        run(["docker", "rm", "--force", "--volumes", *ids], what="removing lab containers")
    network = inspect("network", spec.network)
    if network is not None:
        if ((network.get("Labels") or {}).get(LAB_LABEL)) == spec.network:
            say(f"removing docker network {spec.network}")
            run(["docker", "network", "rm", spec.network], what=f"removing network {spec.network}")
        else:
            say(f"leaving docker network {spec.network}: the lab did not create it")


def status_lines(spec: LabSpec) -> list[str]:
    lines = []
    for host in spec.hosts:
        name = container_name(spec.network, host.name)
        info = inspect("container", name)
        state = str((info.get("State") or {}).get("Status")) if info else "absent"
        systemd = systemd_state(name) if state == "running" else "-"
        lines.append(f"{host.name:<12} {host.ip:<15} {state:<10} {systemd}")
    return lines


def cmd_status(inventory: str) -> None:
    spec = read_inventory(inventory)
    if not docker_answers():
        raise LabError("docker does not answer: start it with `python -m kafkalab.lab engine`")
    for line in status_lines(spec):
        say(line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("engine", help="make sure a Docker engine answers")
    image = sub.add_parser("image", help="build the systemd base image if its recipe changed")
    image.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    for name, text in (("up", "start the lab"), ("down", "remove the lab"), ("status", "show the lab")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--inventory", "-i", default=DEFAULT_INVENTORY, help="inventory directory")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "engine":
            cmd_engine()
        elif args.cmd == "image":
            cmd_image(force=args.force)
        elif args.cmd == "up":
            cmd_up(args.inventory)
        elif args.cmd == "down":
            cmd_down(args.inventory)
        else:
            cmd_status(args.inventory)
    except LabError as exc:
        print(f"lab {args.cmd}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
