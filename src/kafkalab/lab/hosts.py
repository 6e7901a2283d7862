"""The lab's hosts: one systemd container per inventory host, on a docker network of the lab's own.

The inventory (`ansible-inventory --list`) gives the network, its subnet and each host's fixed address;
`up` creates the network and the containers, installs the lab's SSH key and waits for systemd and SSH,
`down` removes what carries the lab's label, `status` prints one line per host.
"""

from __future__ import annotations

import ipaddress
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.ansible_driver import AnsibleError, list_inventory
from kafkalab.lab.common import LabError, ensure_tools, out, project_root, run, say
from kafkalab.lab.engine import cmd_engine, docker_answers
from kafkalab.lab.image import cmd_image, image_id, load_release
from kafkalab.lab.systemd_host import SystemdHost, load_systemd_host, systemd_run_flags

# Every container and network `up` creates carries this label (value: the network name), so `down`
# removes exactly what the lab made and nothing else.
LAB_LABEL = "kafkalab.lab"
KEY_PATH = Path(".cache/lab/id_ed25519")

PUBLISH_SPEC = re.compile(r"^((\d{1,3}\.){3}\d{1,3}:)?\d{1,5}:\d{1,5}(/(tcp|udp))?$")
# A docker named volume and where the container mounts it; never a directory of this machine.
VOLUME_SPEC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*:/[^:\s]*$")


@dataclass(frozen=True)
class LabHost:
    name: str
    ip: str
    # docker --publish specs ([host_ip:]host_port:container_port): stand-ins for NAT in front of a host.
    publish: tuple[str, ...] = ()
    # docker named volumes (NAME:/path) several hosts mount: stand-ins for a shared filesystem (NFS).
    volumes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabSpec:
    network: str
    subnet: str
    hosts: tuple[LabHost, ...]


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
        volumes = hostvars[name].get("lab_volumes") or []
        if not isinstance(volumes, list) or not all(VOLUME_SPEC.match(str(v)) for v in volumes):
            raise LabError(
                f"host {name}: lab_volumes {volumes!r} must be a list of 'NAME:/path' strings (a docker named "
                "volume and where the host mounts it), e.g. ['kafkalab-spark-shared:/srv/spark-shared']"
            )
        hosts.append(
            LabHost(
                name=name, ip=str(ip), publish=tuple(str(p) for p in publish), volumes=tuple(str(v) for v in volumes)
            )
        )
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


def docker_run_args(host: LabHost, network: str, systemd: SystemdHost, image: str) -> list[str]:
    """The `docker run` command line for one lab host, started from image as molecule/systemd_host.yml says."""
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
        *systemd_run_flags(systemd),
        *(arg for volume in host.volumes for arg in ("--volume", volume)),
        image,
        systemd.command,
    ]  # fmt: skip


def volume_create_args(network: str, volume: str) -> list[str]:
    """Creates the named volume of a NAME:/path spec, labelled so that `down` removes it."""
    return ["docker", "volume", "create", "--label", f"{LAB_LABEL}={network}", volume.split(":", 1)[0]]


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


def read_inventory(inventory: str) -> LabSpec:
    path = project_root() / inventory if not Path(inventory).is_absolute() else Path(inventory)
    if not path.exists():
        raise LabError(f"inventory {inventory} does not exist")
    try:
        listing = list_inventory(str(path))
    except AnsibleError as exc:
        raise LabError(f"reading inventory {inventory} failed: {exc}") from exc
    return parse_inventory(listing)


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


def ensure_container(spec: LabSpec, host: LabHost, systemd: SystemdHost, image: str) -> None:
    name = container_name(spec.network, host.name)
    existing = inspect("container", name)
    if existing is None:
        for volume in host.volumes:
            if inspect("volume", volume.split(":", 1)[0]) is None:
                run(volume_create_args(spec.network, volume), what=f"creating volume {volume}")
        say(f"starting {name} at {host.ip}")
        run(docker_run_args(host, spec.network, systemd, image), what=f"starting container {name}")
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
    mounted = sorted(
        f"{m.get('Name')}:{m.get('Destination')}" for m in existing.get("Mounts") or [] if m.get("Type") == "volume"
    )
    if mounted != sorted(host.volumes):
        raise LabError(
            f"{name} mounts {mounted or 'no volume'}, the inventory asks for {sorted(host.volumes) or 'none'} "
            "(lab_volumes): `python -m kafkalab.lab down` then `up`"
        )
    if existing.get("Image") != image_id(image):
        say(f"note: {name} runs another base image than {image} (an older one, or another release); `down` then `up`")
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
    systemd = load_systemd_host(root)
    release = load_release(root)
    cmd_engine()
    cmd_image(release=release)
    ensure_tools({"ssh": "openssh-client"})
    ensure_network(spec)
    key = ensure_key(root)
    public_key = key.with_suffix(".pub").read_bytes()
    # Start every container first so that they boot in parallel, then wait for each.
    for host in spec.hosts:
        ensure_container(spec, host, systemd, release.image)
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
    volumes = out(["docker", "volume", "ls", "-q", "--filter", f"label={LAB_LABEL}={spec.network}"]).split()
    if volumes:
        say(f"removing {len(volumes)} lab volume(s): {', '.join(volumes)}")
        run(["docker", "volume", "rm", *volumes], what="removing lab volumes")
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
