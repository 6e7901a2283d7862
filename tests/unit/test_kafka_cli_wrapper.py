"""The kafka-* wrapper on every node (roles/kafka/templates/kafka-cli.sh.j2) and the client settings it adds.

Rendered with Jinja as the template module renders it (trim_blocks), run with /bin/sh against a fake release
whose bin/<tool>.sh prints the arguments it got: a tool given --bootstrap-server on a TLS cluster gets the node's
client.properties, one given --bootstrap-controller the controller listener's, and a caller's own settings win.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import jinja2
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["kafka-topics", "kafka-configs", "kafka-metadata-quorum", "kafka-console-producer", "kafka-cluster",
         "kafka-leader-election", "kafka-storage", "zookeeper-shell"]  # fmt: skip


def wrapper(tmp: Path, version: str = "4.3.1", tls: bool = True, java_home: str = "") -> Path:
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["comment"] = lambda text: f"# {text}"
    env.filters["split"] = lambda text, sep: str(text).split(sep)  # Ansible's split filter
    template = env.from_string((ROOT / "roles/kafka/templates/kafka-cli.sh.j2").read_text())
    conf, release = tmp / "etc", tmp / "release"
    (release / "bin").mkdir(parents=True)
    conf.mkdir()
    for tool in TOOLS:
        fake = release / "bin" / f"{tool}.sh"
        fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
        fake.chmod(0o755)
    if tls:
        (conf / "client.properties").write_text("security.protocol=SSL\n")
        (conf / "controller-client.properties").write_text("security.protocol=SSL\n")
    script = tmp / "kafka-cli"
    script.write_text(
        template.render(
            ansible_managed="managed",
            __kafka_cli_tools=TOOLS,
            __kafka_log={"option": "-Dlog4j2.configurationFile=", "tools_config": "tools-log4j2.properties"},
            __kafka_conf_dir=str(conf),
            __kafka_zookeeper_client_config=str(conf / "zookeeper-client.properties"),
            __kafka_log_path=str(tmp / "log"),
            kafka_java_home=java_home,
            kafka_cli_bin_dir=str(tmp),
            __kafka_current_dir=str(release),
            __kafka_cds_dir=str(tmp / "cds"),
            kafka_version=version,
        )
    )
    script.chmod(0o755)
    for tool in TOOLS:
        os.symlink(script, tmp / tool)
    return tmp


def run(tmp: Path, tool: str, *args: str) -> list[str]:
    done = subprocess.run([str(tmp / tool), *args], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_a_tool_given_bootstrap_server_gets_the_nodes_client_settings_even_with_a_topic_config(tmp_path: Path) -> None:
    tmp = wrapper(tmp_path)
    client = str(tmp / "etc" / "client.properties")
    args = ["--bootstrap-server", "10.0.0.1:9092", "--create", "--topic", "t", "--config", "min.insync.replicas=2"]
    assert run(tmp, "kafka-topics", *args) == ["--command-config", client, *args]
    add = ["--bootstrap-server", "b:9092", "--alter", "--entity-type", "brokers", "--add-config", "x=1"]
    assert run(tmp, "kafka-configs", *add) == ["--command-config", client, *add]
    assert run(tmp, "kafka-console-producer", "--bootstrap-server", "b:9092", "--topic", "t")[:2] == [
        "--command-config",
        client,
    ]


def test_the_quorum_tools_get_the_controller_listeners_settings(tmp_path: Path) -> None:
    tmp = wrapper(tmp_path)
    assert run(tmp, "kafka-metadata-quorum", "--bootstrap-controller", "c:9093", "describe", "--status") == [
        "--command-config",
        str(tmp / "etc" / "controller-client.properties"),
        "--bootstrap-controller",
        "c:9093",
        "describe",
        "--status",
    ]


def test_kafka_cluster_gets_them_after_its_sub_command(tmp_path: Path) -> None:
    tmp = wrapper(tmp_path)
    assert run(tmp, "kafka-cluster", "cluster-id", "--bootstrap-server", "b:9092") == [
        "cluster-id",
        "--bootstrap-server",
        "b:9092",
        "--command-config",
        str(tmp / "etc" / "client.properties"),
    ]


@pytest.mark.parametrize(
    "tool,args",
    [
        ("kafka-topics", ["--bootstrap-server", "b:9092", "--list", "--command-config", "/mine.properties"]),
        ("kafka-cluster", ["cluster-id", "--bootstrap-server", "b:9092", "--config", "/mine.properties"]),
        ("kafka-console-producer", ["--bootstrap-server", "b:9092", "--producer.config", "/mine.properties"]),
        ("kafka-storage", ["format", "--config", "/etc/kafka/server.properties", "--cluster-id", "x"]),
    ],
)
def test_the_callers_own_settings_win_and_other_tools_pass_unchanged(
    tmp_path: Path, tool: str, args: list[str]
) -> None:
    assert run(wrapper(tmp_path), tool, *args) == args


def test_a_plaintext_cluster_has_no_client_settings_to_add(tmp_path: Path) -> None:
    args = ["--bootstrap-server", "b:9092", "--list"]
    assert run(wrapper(tmp_path, tls=False), "kafka-topics", *args) == args


def test_kafka_3_console_tools_and_leader_election_take_them_under_their_old_names(tmp_path: Path) -> None:
    tmp = wrapper(tmp_path, version="3.9.2")
    client = str(tmp / "etc" / "client.properties")
    assert run(tmp, "kafka-console-producer", "--bootstrap-server", "b:9092")[:2] == ["--producer.config", client]
    assert run(tmp, "kafka-leader-election", "--bootstrap-server", "b:9092")[:2] == ["--admin.config", client]
    assert run(tmp, "kafka-topics", "--bootstrap-server", "b:9092")[:2] == ["--command-config", client]


def test_admin_tools_start_with_the_client_compiler_and_long_running_tools_keep_the_defaults(tmp_path: Path) -> None:
    tmp = wrapper(tmp_path)
    probe = 'printf "%s\\n" "${KAFKA_JVM_PERFORMANCE_OPTS:-unset}"\n'
    for tool in ("kafka-topics", "kafka-console-producer"):
        (tmp / "release" / "bin" / f"{tool}.sh").write_text(f"#!/bin/sh\n{probe}")
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_JVM_PERFORMANCE_OPTS"}
    admin = subprocess.run([str(tmp / "kafka-topics"), "--list"], capture_output=True, text=True, check=True, env=env)
    assert admin.stdout.split() == ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
    console = subprocess.run([str(tmp / "kafka-console-producer")], capture_output=True, text=True, check=True, env=env)
    assert console.stdout.strip() == "unset"
    # An operator's own choice wins.
    mine = subprocess.run([str(tmp / "kafka-topics")], capture_output=True, text=True, check=True,
                          env={**env, "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseG1GC"})  # fmt: skip
    assert mine.stdout.strip() == "-XX:+UseG1GC"


def cds_node(tmp: Path) -> Path:
    """A node with a JDK and the archive directory, whose tools act as the JVM does with the CDS options: make
    the archive named by -XX:ArchiveClassesAtExit as they exit, and print the options they got."""
    jdk = tmp / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\n")
    tmp = wrapper(tmp, java_home=str(jdk))
    (tmp / "cds").mkdir()
    fake = (
        "#!/bin/sh\n"
        'for o in $KAFKA_JVM_PERFORMANCE_OPTS; do case "$o" in\n'
        '  -XX:ArchiveClassesAtExit=*) echo classes > "${o#*=}" ;;\n'
        "esac; done\n"
        'printf "%s\\n" $KAFKA_JVM_PERFORMANCE_OPTS\n'
        'exit "${FAKE_RC:-0}"\n'
    )
    for tool in ("kafka-topics", "kafka-configs", "kafka-console-producer"):
        (tmp / "release" / "bin" / f"{tool}.sh").write_text(fake)
    return tmp


def cds_options(tmp: Path, tool: str, rc: int = 0) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_JVM_PERFORMANCE_OPTS"}
    done = subprocess.run([str(tmp / tool)], capture_output=True, text=True, env={**env, "FAKE_RC": str(rc)})
    assert done.returncode == rc, done.stderr
    return [o for o in done.stdout.split() if "Archive" in o or o.startswith("-Xlog")]


def test_an_admin_tools_first_run_makes_its_class_data_archive_and_later_runs_read_it(tmp_path: Path) -> None:
    tmp = cds_node(tmp_path)
    java = tmp / "jdk" / "bin" / "java"
    archive = tmp / "cds" / f"release-{java.stat().st_ino}-{int(java.stat().st_mtime)}-kafka-topics.jsa"
    first = cds_options(tmp, "kafka-topics")
    assert first[0].startswith(f"-XX:ArchiveClassesAtExit={archive}.")
    # JVM messages go to stderr, never into the output the modules parse: the run that makes the archive keeps
    # errors only (Kafka 3's log4j 1 classes draw a warning each), later ones warnings (an archive that does
    # not match).
    assert first[1:] == ["-Xlog:disable", "-Xlog:all=error:stderr"]
    assert sorted(p.name for p in (tmp / "cds").iterdir()) == [archive.name]
    assert oct(archive.stat().st_mode & 0o777) == "0o600"  # root's tools read it; nobody else needs to
    assert cds_options(tmp, "kafka-topics") == [
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:disable",
        "-Xlog:all=warning:stderr",
    ]
    # Each tool has its own; a console tool (runs long, keeps the release's JVM options) has none.
    assert cds_options(tmp, "kafka-configs")[0].startswith("-XX:ArchiveClassesAtExit=")
    assert cds_options(tmp, "kafka-console-producer") == []


def test_only_a_run_that_exits_0_names_its_archive_and_a_new_jvm_build_replaces_it(tmp_path: Path) -> None:
    tmp = cds_node(tmp_path)
    # A JVM killed as it wrote (137), or one that could not write it all (1), leaves a truncated archive, which
    # would crash every later run (SIGBUS): it is dropped, and the tool's exit code kept.
    for rc in (137, 1):
        assert cds_options(tmp, "kafka-topics", rc=rc)[0].startswith("-XX:ArchiveClassesAtExit=")
        assert list((tmp / "cds").iterdir()) == []
    assert cds_options(tmp, "kafka-topics")[0].startswith("-XX:ArchiveClassesAtExit=")
    (old,) = (tmp / "cds").iterdir()
    java = tmp / "jdk" / "bin" / "java"
    os.utime(java, (java.stat().st_atime, java.stat().st_mtime + 60))  # a JDK package upgrade
    assert cds_options(tmp, "kafka-topics")[0].startswith("-XX:ArchiveClassesAtExit=")
    (new,) = (tmp / "cds").iterdir()
    assert new != old and not list((tmp / "cds").glob("*.jsa.*"))


def test_no_archive_directory_means_no_class_data_options(tmp_path: Path) -> None:
    tmp = cds_node(tmp_path)
    (tmp / "cds").rmdir()
    assert cds_options(tmp, "kafka-topics") == []


def test_zookeeper_shell_gets_the_machines_zookeeper_tls_settings_when_they_exist(tmp_path: Path) -> None:
    """Kafka 3.x: with TLS to ZooKeeper (tasks/zookeeper_tls.yml wrote the file) the shell gets -zk-tls-config-file
    at the end (Kafka's shell takes it anywhere), unless the caller gives its own; without the file, nothing."""
    tmp = wrapper(tmp_path, version="3.9.2")
    args = ["10.0.0.1:2182", "ls", "/brokers/ids"]
    assert run(tmp, "zookeeper-shell", *args) == args
    settings = tmp / "etc" / "zookeeper-client.properties"
    settings.write_text("zookeeper.ssl.client.enable=true\n")
    assert run(tmp, "zookeeper-shell", *args) == [*args, "-zk-tls-config-file", str(settings)]
    own = [*args, "-zk-tls-config-file", "/root/other.properties"]
    assert run(tmp, "zookeeper-shell", *own) == own
