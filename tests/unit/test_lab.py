"""Unit tests for the lab substrate's pure logic (kafkalab.lab): no docker, no network, no root.

They pin what the containers are started with (molecule/systemd_host.yml, shared with the molecule
scenarios), when the base image is rebuilt, and how the inventory turns into the lab's hosts and network.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab.ansible_driver import AnsibleError
from kafkalab.lab import common, hosts, image, systemd_host
from kafkalab.lab.__main__ import VERIFY_TOOLS

ROOT = Path(__file__).resolve().parents[2]
SYSTEMD_HOST = systemd_host.load_systemd_host(ROOT)
IMAGE = "kafkalab/debian12:latest"
RECIPE = image.Recipe(
    suite="bookworm",
    packages=("systemd", "python3", "openssh-server"),
    tidy_script=b"#!/bin/sh\nset -eu\n",
    import_changes=('CMD ["/lib/systemd/systemd"]',),
)


def inventory(**overrides: Any) -> dict[str, Any]:
    """`ansible-inventory --list` output shaped like inventories/lab."""
    common = {"lab_network_name": "kafkalab", "lab_network_subnet": "10.231.0.0/24"}
    hostvars = {f"kafka{i}": {**common, "ansible_host": f"10.231.0.1{i}", "kafka_node_id": i} for i in (1, 2, 3)}
    for host, values in overrides.items():
        hostvars[host] = {**hostvars.get(host, common), **values}
    return {
        "_meta": {"hostvars": hostvars},
        "all": {"children": ["ungrouped", "kafka"]},
        "kafka": {"children": ["kafka_controller", "kafka_broker"]},
    }


# ------------------------------------------------------------------ docker run arguments


def test_run_args_start_systemd_with_the_working_flag_set_and_never_privileged() -> None:
    args = hosts.docker_run_args(hosts.LabHost("kafka1", "10.231.0.11"), "kafkalab", SYSTEMD_HOST, IMAGE)
    assert args[:3] == ["docker", "run", "--detach"]
    assert "--privileged" not in args
    assert args[-2:] == ["kafkalab/debian12:latest", "/lib/systemd/systemd"]
    joined = " ".join(args)
    for flag in (
        "--cgroupns=host",
        "--cap-add SYS_ADMIN",
        "--cap-add NET_ADMIN",
        "--security-opt seccomp=unconfined",
        "--security-opt apparmor=unconfined",
        "--volume /sys/fs/cgroup:/sys/fs/cgroup:rw",
        "--tmpfs /run ",
        "--tmpfs /run/lock",
    ):
        assert flag in joined


def test_run_args_pin_name_hostname_address_and_label() -> None:
    args = hosts.docker_run_args(hosts.LabHost("kafka2", "10.231.0.12"), "kafkalab", SYSTEMD_HOST, IMAGE)

    def value(flag: str) -> str:
        return args[args.index(flag) + 1]

    assert value("--name") == "kafkalab-kafka2"
    assert value("--hostname") == "kafka2"
    assert value("--network") == "kafkalab"
    assert value("--ip") == "10.231.0.12"
    assert value("--network-alias") == "kafka2"
    assert value("--label") == "kafkalab.lab=kafkalab"


def test_published_ports_stand_in_for_nat_in_front_of_a_host() -> None:
    spec = hosts.parse_inventory(inventory(kafka1={"lab_published_ports": ["127.0.0.1:19091:9094"]}))
    assert spec.hosts[0].publish == ("127.0.0.1:19091:9094",)
    args = hosts.docker_run_args(spec.hosts[0], "kafkalab", SYSTEMD_HOST, IMAGE)
    assert args[args.index("--publish") + 1] == "127.0.0.1:19091:9094"
    assert "--publish" not in hosts.docker_run_args(spec.hosts[1], "kafkalab", SYSTEMD_HOST, IMAGE)


def test_named_volumes_stand_in_for_a_shared_filesystem() -> None:
    shared = ["kafkalab-spark-shared:/srv/spark-shared"]
    spec = hosts.parse_inventory(inventory(kafka1={"lab_volumes": shared}, kafka2={"lab_volumes": shared}))
    for host in spec.hosts[:2]:
        assert host.volumes == tuple(shared)
        args = hosts.docker_run_args(host, "kafkalab", SYSTEMD_HOST, IMAGE)
        # After the systemd host's own volumes (the cgroup mount), before the image.
        volumes = [args[i + 1] for i, a in enumerate(args) if a == "--volume"]
        assert volumes[-1] == shared[0] and len(volumes) == len(SYSTEMD_HOST.volumes) + 1
    assert hosts.volume_create_args("kafkalab", shared[0]) == [
        "docker", "volume", "create", "--label", "kafkalab.lab=kafkalab", "kafkalab-spark-shared",
    ]  # fmt: skip


# ------------------------------------------------------------------ the systemd host definition, shared with molecule

# How each molecule-plugins docker platform key is written on a `docker run` command line, worked out here
# independently of the lab's code. The image (the release's, images/releases.yml) and the command end the
# command line.
DOCKER_RUN_FLAG = {
    "cgroupns_mode": "--cgroupns",
    "capabilities": "--cap-add",
    "security_opts": "--security-opt",
    "volumes": "--volume",
    "tmpfs": "--tmpfs",
}


def passes(args: list[str], flag: str, value: str) -> bool:
    """True if args give flag the value, as `--flag=value` or as `--flag value`."""
    return f"{flag}={value}" in args or any(a == flag and b == value for a, b in itertools.pairwise(args))


def test_lab_run_args_carry_every_setting_of_systemd_host_yml() -> None:
    settings = yaml.safe_load((ROOT / "molecule/systemd_host.yml").read_text())
    assert set(settings) == {"command", *DOCKER_RUN_FLAG}, "a key this test does not translate"
    args = hosts.docker_run_args(hosts.LabHost("kafka1", "10.231.0.11"), "kafkalab", SYSTEMD_HOST, IMAGE)
    assert args[-2:] == [IMAGE, settings["command"]]
    for key, flag in DOCKER_RUN_FLAG.items():
        values = settings[key] if isinstance(settings[key], list) else [settings[key]]
        for value in values:
            assert passes(args, flag, value), f"{key}: {value} is not passed as {flag}"


@pytest.mark.parametrize("scenario", sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml")))
def test_molecule_scenarios_start_their_hosts_from_systemd_host_yml_alone(scenario: str) -> None:
    config = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
    assert config["provisioner"]["playbooks"]["create"] == "../create.yml"
    # And are removed by molecule/destroy.yml, which knows what create.yml makes (its volumes kept).
    assert config["provisioner"]["playbooks"]["destroy"] == "../destroy.yml"
    settings = yaml.safe_load((ROOT / "molecule/systemd_host.yml").read_text())
    for platform in config["platforms"]:
        # A platform may add named volumes of its own (a shared filesystem's stand-in); create.yml appends
        # them to systemd_host.yml's, which it must not repeat.
        assert not set(platform) - {"volumes"} & set(settings), (
            f"{platform['name']} repeats a setting of systemd_host.yml"
        )
        for volume in platform.get("volumes", []):
            assert volume not in settings["volumes"] and hosts.VOLUME_SPEC.match(volume), (platform["name"], volume)


def test_a_setting_the_lab_would_not_pass_to_docker_is_refused() -> None:
    settings = yaml.safe_load((ROOT / "molecule/systemd_host.yml").read_text())
    with pytest.raises(common.LabError, match="privileged"):
        systemd_host.parse_systemd_host({**settings, "privileged": True})


# ------------------------------------------------------------------ Debian releases (images/releases.yml)

RELEASES = yaml.safe_load((ROOT / "images/releases.yml").read_text())


def test_the_default_release_is_debian_12_and_each_release_has_an_image_of_its_own() -> None:
    releases = image.parse_releases(RELEASES)
    assert image.choose_release(releases, None) == image.Release("bookworm", IMAGE)
    assert image.choose_release(releases, "trixie") == image.Release("trixie", "kafkalab/debian13:latest")
    assert len({image.image_repository(name) for name in releases.values()}) == len(releases)


def test_the_release_builds_the_recipe_of_its_own_suite() -> None:
    recipe = image.load_recipe(ROOT, image.Release("trixie", "kafkalab/debian13:latest"))
    assert recipe.suite == "trixie"
    assert image.debootstrap_args(recipe, Path("/tmp/root"), "http://deb.debian.org/debian")[-3] == "trixie"


def test_an_unknown_release_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(common.LabError, match=r"KAFKALAB_RELEASE=jessie: .*bookworm, trixie"):
        image.choose_release(image.parse_releases(RELEASES), "jessie")


@pytest.mark.parametrize("scenario", sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml")))
def test_a_scenario_names_only_a_release_there_is(scenario: str) -> None:
    # The Makefile's `images` reads the same key (scenario_release) to build every release a scenario runs.
    config = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
    wanted = (config["provisioner"].get("env") or {}).get("KAFKALAB_RELEASE")
    assert wanted is None or wanted in RELEASES


@pytest.mark.parametrize(
    "data",
    [[], {}, {"Bookworm": IMAGE}, {"bookworm": "kafkalab/debian12"}, {"bookworm": 12}],
    ids=["not a mapping", "empty", "suite not lower case", "image without a tag", "image not a string"],
)
def test_a_malformed_releases_file_is_refused(data: object) -> None:
    with pytest.raises(common.LabError, match=r"releases\.yml"):
        image.parse_releases(data)


def test_image_is_built_under_the_repository_of_the_name_the_hosts_use() -> None:
    assert image.image_repository("kafkalab/debian12:latest") == "kafkalab/debian12"
    assert image.image_repository("registry.local:5000/kafkalab/debian12") == "registry.local:5000/kafkalab/debian12"


def test_container_names_do_not_collide_with_molecule_platform_names() -> None:
    assert hosts.container_name("kafkalab", "kafka1") != "kafka1"


def test_network_is_created_with_the_fixed_subnet_and_our_label() -> None:
    args = hosts.network_create_args("kafkalab", "10.231.0.0/24")
    assert args[-1] == "kafkalab"
    assert args[args.index("--subnet") + 1] == "10.231.0.0/24"
    assert args[args.index("--label") + 1] == "kafkalab.lab=kafkalab"


# ------------------------------------------------------------------ image recipe


def test_recipe_hash_is_stable_and_short() -> None:
    assert image.recipe_hash(RECIPE) == image.recipe_hash(dataclasses.replace(RECIPE))
    assert len(image.recipe_hash(RECIPE)) == 12


@pytest.mark.parametrize(
    "change",
    [
        {"suite": "trixie"},
        {"packages": (*RECIPE.packages, "ufw")},
        {"tidy_script": RECIPE.tidy_script + b"rm -f /etc/machine-id\n"},
        {"import_changes": (*RECIPE.import_changes, "ENV container=docker")},
    ],
    ids=["suite", "packages", "tidy_script", "import_changes"],
)
def test_recipe_hash_changes_when_the_recipe_changes(change: dict[str, Any]) -> None:
    assert image.recipe_hash(dataclasses.replace(RECIPE, **change)) != image.recipe_hash(RECIPE)


def test_tidy_change_reuses_the_debootstrap_tree_but_a_package_change_does_not() -> None:
    tidied = dataclasses.replace(RECIPE, tidy_script=b"echo changed\n")
    assert image.bootstrap_hash(tidied) == image.bootstrap_hash(RECIPE)
    more = dataclasses.replace(RECIPE, packages=(*RECIPE.packages, "ufw"))
    assert image.bootstrap_hash(more) != image.bootstrap_hash(RECIPE)


def test_package_order_does_not_force_a_new_debootstrap() -> None:
    shuffled = dataclasses.replace(RECIPE, packages=tuple(reversed(RECIPE.packages)))
    assert image.bootstrap_hash(shuffled) == image.bootstrap_hash(RECIPE)


def test_package_list_ignores_comments_and_blank_lines() -> None:
    text = "# what we need\nsystemd\n\npython3  # for ansible\n  \n"
    assert image.parse_package_list(text) == ("systemd", "python3")


def test_project_recipe_has_what_ansible_and_the_roles_need() -> None:
    recipe = image.load_recipe(ROOT, image.Release("bookworm", IMAGE))
    for package in ("systemd", "systemd-sysv", "python3", "python3-apt", "openssh-server", "sudo", "ufw"):
        assert package in recipe.packages
    assert 'CMD ["/lib/systemd/systemd"]' in recipe.import_changes


def test_debootstrap_is_minbase_with_the_include_list() -> None:
    args = image.debootstrap_args(RECIPE, Path("/tmp/root"), "http://deb.debian.org/debian")
    assert args == [
        "debootstrap",
        "--variant=minbase",
        "--include=systemd,python3,openssh-server",
        "bookworm",
        "/tmp/root",
        "http://deb.debian.org/debian",
    ]


def test_import_args_pass_every_change_and_read_stdin() -> None:
    args = image.import_args(RECIPE, "kafkalab/debian12:abc")
    assert args == [
        "docker",
        "import",
        "--change",
        'CMD ["/lib/systemd/systemd"]',
        "-",
        "kafkalab/debian12:abc",
    ]


def test_mirrors_are_read_from_deb822_sources() -> None:
    sources = (
        "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
        "URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n"
    )
    assert image.debian_mirrors(sources) == (
        "http://deb.debian.org/debian",
        "http://deb.debian.org/debian-security",
    )


def test_mirrors_are_read_from_one_line_sources() -> None:
    sources = "deb [arch=amd64] http://mirror.example/debian bookworm main\n"
    assert image.debian_mirrors(sources) == ("http://mirror.example/debian", None)


# ------------------------------------------------------------------ inventory


def test_inventory_gives_network_subnet_and_hosts_in_name_order() -> None:
    spec = hosts.parse_inventory(inventory())
    assert spec.network == "kafkalab"
    assert spec.subnet == "10.231.0.0/24"
    assert spec.hosts == (
        hosts.LabHost("kafka1", "10.231.0.11"),
        hosts.LabHost("kafka2", "10.231.0.12"),
        hosts.LabHost("kafka3", "10.231.0.13"),
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kafka2": {"ansible_host": None}}, "has no ansible_host"),
        ({"kafka2": {"ansible_host": "kafka2.example"}}, "not an IP address"),
        ({"kafka2": {"ansible_host": "10.9.9.9"}}, "not a usable address"),
        ({"kafka2": {"ansible_host": "10.231.0.1"}}, "gateway"),
        ({"kafka2": {"ansible_host": "10.231.0.11"}}, "share ansible_host"),
        ({"kafka2": {"lab_network_subnet": "10.232.0.0/24"}}, "same lab_network_name"),
        ({"kafka2": {"lab_network_name": None}}, "same lab_network_name"),
        ({"kafka2": {"lab_published_ports": ["19092"]}}, "lab_published_ports"),
        ({"kafka2": {"lab_volumes": ["/srv/data:/srv/data"]}}, "lab_volumes"),
        ({"kafka2": {"lab_volumes": "shared:/srv"}}, "lab_volumes"),
    ],
    ids=[
        "no-address",
        "name-not-ip",
        "outside-subnet",
        "gateway",
        "duplicate",
        "two-subnets",
        "no-network",
        "bad-publish",
        "bind-mount-volume",
        "volumes-not-a-list",
    ],
)
def test_inventory_errors_name_the_problem(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(common.LabError, match=message):
        hosts.parse_inventory(inventory(**overrides))


def test_an_inventory_ansible_cannot_read_is_a_lab_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(inventory: str, env: Any = None) -> dict[str, Any]:
        raise AnsibleError(f"ansible-inventory -i {inventory} --list failed (exit 1): boom")

    monkeypatch.setattr(hosts, "list_inventory", broken)
    with pytest.raises(common.LabError, match=r"reading inventory inventories/lab failed: .*boom"):
        hosts.read_inventory("inventories/lab")


def test_empty_inventory_is_an_error() -> None:
    with pytest.raises(common.LabError, match="no hosts"):
        hosts.parse_inventory({"_meta": {"hostvars": {}}})


# ------------------------------------------------------------------ network checks


def test_existing_network_with_the_same_subnet_is_accepted() -> None:
    inspect = {"IPAM": {"Config": [{"Subnet": "10.231.0.0/24", "Gateway": "10.231.0.1"}]}}
    assert hosts.subnet_mismatch("kafkalab", hosts.network_subnets(inspect), "10.231.0.0/24") is None


def test_existing_network_with_another_subnet_is_reported_with_a_fix() -> None:
    inspect = {"IPAM": {"Config": [{"Subnet": "172.18.0.0/16"}]}}
    problem = hosts.subnet_mismatch("kafkalab", hosts.network_subnets(inspect), "10.231.0.0/24")
    assert problem is not None
    assert "172.18.0.0/16" in problem
    assert "10.231.0.0/24" in problem
    assert "down" in problem


def test_network_without_ipam_config_is_a_mismatch() -> None:
    assert hosts.subnet_mismatch("kafkalab", hosts.network_subnets({"IPAM": {"Config": None}}), "10.231.0.0/24")


def test_container_ip_prefers_the_configured_address() -> None:
    inspect = {
        "NetworkSettings": {"Networks": {"kafkalab": {"IPAMConfig": {"IPv4Address": "10.231.0.11"}, "IPAddress": ""}}}
    }
    assert hosts.container_ip(inspect, "kafkalab") == "10.231.0.11"
    assert hosts.container_ip(inspect, "other") is None


def test_ssh_probe_never_prompts_or_trusts_stale_host_keys() -> None:
    args = hosts.ssh_args(Path(".cache/lab/id_ed25519"), "10.231.0.11", "true")
    joined = " ".join(args)
    assert "BatchMode=yes" in joined
    assert "UserKnownHostsFile=/dev/null" in joined
    assert args[-2:] == ["root@10.231.0.11", "true"]


def _controller_commands(source: str) -> set[str]:
    """The commands a suite file runs on the controller: shutil.which("x"), and subprocess.run(["x", ...])."""
    found: set[str] = set()
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and n.args):
        name, first = ast.unparse(call.func), call.args[0]
        if name == "shutil.which" and isinstance(first, ast.Constant):
            found.add(str(first.value))
        elif name == "subprocess.run" and isinstance(first, ast.List) and first.elts:
            head = first.elts[0]
            if isinstance(head, ast.Constant):
                found.add(str(head.value))
    return found


def test_make_verify_installs_every_command_the_cluster_suite_runs_on_the_controller() -> None:
    suites = sorted((ROOT / "tests" / "cluster").glob("*.py"))
    used = set().union(*(_controller_commands(path.read_text()) for path in suites))
    # The parser finds what is there: the suite draws the overview page in chromium, makes a foreign CA with openssl.
    assert {"chromium", "openssl"} <= used
    assert used <= set(VERIFY_TOOLS), f"tests/cluster runs {sorted(used - set(VERIFY_TOOLS))}: add to VERIFY_TOOLS"
    assert "kafkalab.lab tools" in (ROOT / "Makefile").read_text().split("\nverify:", 1)[1].split("\n\n", 1)[0]
