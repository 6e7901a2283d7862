"""What the project does to make Ansible's per-task cost smaller, run through real ansible-playbook runs.

- kafkalab.kafka.preload_jinja (ansible.cfg): the filter plugins are loaded in ansible-playbook before a task's
  workers fork, so the workers inherit them instead of importing every plugin file again. A role's filter
  plugin that records the pid of each process importing it shows that, and that a role included at run time
  (whose filter_plugins join the search path then) still has its filters.
- kafkalab.kafka.node_files: several files of a node read in one call (the host preflights), read only.
- kafkalab.kafka.write_files: a node's directories, files and links in one call (the kafka role's), byte for byte
  what the file, template and copy modules made, and a secret in no output.
"""

from __future__ import annotations

import grp
import json
import os
import re
import sys
from pathlib import Path

import pytest

from kafkalab.ansible_driver import run_playbook

ROOT = Path(__file__).resolve().parents[2]
# The controller itself, through the Python running the tests (the venv, which has Ansible).
LOCAL = ["-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]

FILTER = """
import os

with open({log!r}, "a") as handle:
    handle.write(f"{{os.getpid()}}\\n")


class FilterModule:
    def filters(self):
        return {{"shout": lambda value: str(value).upper() + "!"}}
"""

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: A filter of ansible.builtin, in several tasks
      ansible.builtin.debug:
        msg: "{{ [3, 1, 2] | sort | join(',') }}"
      loop: [1, 2, 3, 4]
    - name: A role included at run time, whose filter plugin is used right after
      ansible.builtin.include_role:
        name: loud
    - name: Its filter, from a task of the play
      ansible.builtin.set_fact:
        said: "{{ 'again' | shout }}"
    - name: Its filter in more tasks
      ansible.builtin.debug:
        msg: "{{ item | shout }}"
      loop: [a, b, c]
"""


def _run(tmp: Path, callbacks: str) -> tuple[list[str], str]:
    log = tmp / "imports.log"
    role = tmp / "roles" / "loud"
    (role / "filter_plugins").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "filter_plugins" / "loud.py").write_text(FILTER.format(log=str(log)))
    (role / "tasks" / "main.yml").write_text("- ansible.builtin.set_fact:\n    said: \"{{ 'hello' | shout }}\"\n")
    playbook = tmp / "play.yml"
    playbook.write_text(PLAYBOOK)
    run = run_playbook(
        playbook,
        "localhost,",
        cwd=tmp,
        args=LOCAL,
        env={"ANSIBLE_CALLBACKS_ENABLED": callbacks, "ANSIBLE_ROLES_PATH": str(tmp / "roles"), "ANSIBLE_NOCOLOR": "1"},
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return log.read_text().split(), run.stdout


def test_workers_inherit_the_filters_loaded_before_they_fork(tmp_path: Path) -> None:
    pids, out = _run(tmp_path, "kafkalab.kafka.preload_jinja")
    # Loaded by ansible-playbook itself, once when the role's directory joined the search path; no worker
    # imported the file again.
    assert len(set(pids)) == 1, pids
    assert "A!" in out and "C!" in out and "1,2,3" in out


def test_without_it_every_worker_imports_the_filters_again(tmp_path: Path) -> None:
    # The control: the same run without the callback imports the plugin file in many processes.
    pids, out = _run(tmp_path, "ansible.posix.profile_tasks")
    # One worker per task that uses it: the role's task, the play's set_fact and the loop.
    assert len(set(pids)) >= 3, pids
    assert "A!" in out and "C!" in out


COLLECTION_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: A collection's filter, by its fully qualified name
      ansible.builtin.set_fact:
        said: "{{ 'once' | testns.loud.shout }}"
    - name: The same filter in a loop
      ansible.builtin.debug:
        msg: "{{ item | testns.loud.shout }}"
      loop: [a, b, c]
"""


def _run_collection(tmp: Path, preload: str) -> tuple[list[str], str]:
    log = tmp / "imports.log"
    plugins = tmp / "collections" / "ansible_collections" / "testns" / "loud" / "plugins" / "filter"
    plugins.mkdir(parents=True)
    (plugins / "loud.py").write_text(FILTER.format(log=str(log)))
    playbook = tmp / "play.yml"
    playbook.write_text(COLLECTION_PLAYBOOK)
    run = run_playbook(
        playbook,
        "localhost,",
        cwd=tmp,
        args=LOCAL,
        env={
            "ANSIBLE_CALLBACKS_ENABLED": "kafkalab.kafka.preload_jinja",
            # This collection first, then the project's (where the callback lives).
            "ANSIBLE_COLLECTIONS_PATH": f"{tmp / 'collections'}:{ROOT / 'collections'}",
            "KAFKALAB_PRELOAD_COLLECTIONS": preload,
            "ANSIBLE_NOCOLOR": "1",
        },
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return log.read_text().split(), run.stdout


def test_workers_inherit_a_collections_filters_loaded_before_they_fork(tmp_path: Path) -> None:
    pids, out = _run_collection(tmp_path, "testns.loud")
    assert len(set(pids)) == 1, pids
    assert "A!" in out and "C!" in out


def test_a_collection_not_named_is_imported_by_every_worker(tmp_path: Path) -> None:
    # The control: the callback on, but the collection not among those it loads.
    pids, out = _run_collection(tmp_path, "kafkalab.kafka")
    assert len(set(pids)) >= 2, pids
    assert "A!" in out and "C!" in out


NODE_FILES = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Look at the files
      kafkalab.kafka.node_files:
        exists: [{present}, {missing}, {directory}]
        read: [{present}, {missing}, {binary}, {big}]
        links: [{link}, {present}, {missing}]
        max_bytes: 64
      register: found
    - name: Show them
      ansible.builtin.copy:
        content: "{{{{ found | to_json }}}}"
        dest: {out}
"""


def test_node_files_reports_existence_and_text_and_changes_nothing(tmp_path: Path) -> None:
    files = {
        "present": tmp_path / "server.properties",
        "missing": tmp_path / "absent.pem",
        "directory": tmp_path,
        "binary": tmp_path / "binary",
        "big": tmp_path / "big",
    }
    files["present"].write_text("process.roles=broker\n")
    files["binary"].write_bytes(b"\xff\xfe\x00")
    files["big"].write_text("x" * 65)
    (tmp_path / "release").mkdir()
    files["link"] = tmp_path / "current"
    files["link"].symlink_to("release")  # relative, as a link may be: reported as the absolute path it resolves to
    out = tmp_path / "found.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(NODE_FILES.format(out=out, **{k: json.dumps(str(v)) for k, v in files.items()}))
    for check in (False, True):
        out.unlink(missing_ok=True)
        run = run_playbook(playbook, "localhost,", cwd=tmp_path, args=LOCAL, check=check, timeout=120)
        assert run.returncode == 0, run.stdout[-2000:]
        if check:
            # The module ran in check mode (it supports it; else Ansible skips it) and changed nothing.
            assert not out.exists()
            assert re.search(r"TASK \[Look at the files\][^\n]*\n[^\n]*\nok: \[localhost\]", run.stdout), run.stdout
            continue
        found = json.loads(out.read_text())
        assert found["changed"] is False
        assert found["exists"] == {str(files["present"]): True, str(files["missing"]): False, str(tmp_path): True}
        assert found["content"] == {
            str(files["present"]): "process.roles=broker\n",
            str(files["missing"]): None,
            str(files["binary"]): None,
            str(files["big"]): None,
        }
        assert found["links"] == {
            str(files["link"]): str(tmp_path / "release"),
            str(files["present"]): None,
            str(files["missing"]): None,
        }


PKI_INSTALL = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Install the node's files
      kafkalab.kafka.pki_install:
        dir: {dir}
        group: {group}
        certificate: {certificate}
        ca: {ca}
      register: installed
    - name: Show what it did
      ansible.builtin.copy:
        content: "{{{{ installed | to_json }}}}"
        dest: {out}
      check_mode: false
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the files are root's (chown to uid 0)")
def test_pki_install_writes_certificate_cas_and_key_store_in_one_call_and_only_what_changed(tmp_path: Path) -> None:
    """kafkalab.kafka.pki_install: three files (certificate, ca.pem, key + certificate) in one round trip."""
    tls = tmp_path / "tls"
    tls.mkdir()
    (tls / "key.pem").write_text("KEY\n")
    group = grp.getgrgid(os.getgid()).gr_name
    out = tmp_path / "installed.json"
    playbook = tmp_path / "play.yml"

    def run(certificate: str, ca: str, check: bool = False) -> dict:
        playbook.write_text(
            PKI_INSTALL.format(dir=tls, group=group, certificate=json.dumps(certificate), ca=json.dumps(ca), out=out)
        )
        result = run_playbook(playbook, "localhost,", cwd=tmp_path, args=LOCAL, check=check, timeout=120)
        assert result.returncode == 0, result.stdout[-2000:]
        return json.loads(out.read_text())

    first = run("CERT-1\n", "CA-A\n")
    assert first["changed"] and sorted(first["written"]) == ["ca.pem", "cert.pem", "node.pem"]
    assert (tls / "node.pem").read_text() == "KEY\nCERT-1\n"
    assert oct((tls / "node.pem").stat().st_mode & 0o777) == "0o640"
    assert oct((tls / "cert.pem").stat().st_mode & 0o777) == "0o644"
    assert run("CERT-1\n", "CA-A\n") == {**first, "changed": False, "written": [], "diff": []}
    # Check mode reports a new certificate and its key store without writing them.
    assert sorted(run("CERT-2\n", "CA-A\n", check=True)["written"]) == ["cert.pem", "node.pem"]
    assert (tls / "cert.pem").read_text() == "CERT-1\n"
    # Both CAs in the middle of a rotation: ca.pem alone is written; the key store stays as it is.
    assert run("CERT-1\n", "CA-A\nCA-B\n")["written"] == ["ca.pem"]
    # A mode changed by hand is put back.
    (tls / "node.pem").chmod(0o644)
    assert run("CERT-1\n", "CA-A\nCA-B\n")["written"] == ["node.pem"]
    assert oct((tls / "node.pem").stat().st_mode & 0o777) == "0o640"


WRITE_FILES = """
- hosts: localhost
  gather_facts: false
  vars:
    greeting: hello
    items_: [a, b]
  tasks:
    - name: Render the template the way the template module does
      ansible.builtin.template:
        src: config.j2
        dest: {dir}/by-template
        group: {group}
        mode: "0640"
    - name: Copy the file the way the copy module does
      ansible.builtin.copy:
        src: rules.yml
        dest: {dir}/by-copy
        group: {group}
        mode: "0640"
    - name: Write them all in one call
      kafkalab.kafka.write_files:
        directories:
          - path: {dir}/made/inner
            group: {group}
            mode: "0750"
        links:
          - path: {dir}/made/inner/link
            target: {dir}/by-lookup
        files:
          - path: {dir}/by-lookup
            content: "{{{{ lookup('ansible.builtin.template', 'config.j2') }}}}"
            group: {group}
            mode: "0640"
          - path: {dir}/by-file-lookup
            content: "{{{{ lookup('ansible.builtin.file', rules_file | default('rules.yml'), rstrip=false) }}}}"
            group: {group}
            mode: "0640"
            validate: "grep -q ^rules: %s"
        hidden_files:
          - path: {dir}/secret
            content: "password={secret}\\n"
            # Whoever runs the module (a file of the controller machine's operator).
            owner: ""
            group: ""
            mode: "0600"
      register: written
    - name: Show what it did
      ansible.builtin.copy:
        content: "{{{{ written | to_json }}}}"
        dest: {out}
      check_mode: false
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the files are root's (chown to uid 0)")
def test_write_files_writes_what_the_template_and_copy_modules_would_in_one_call_and_hides_secrets(
    tmp_path: Path,
) -> None:
    """kafkalab.kafka.write_files (the kafka role's files): byte for byte what the template and copy modules wrote
    before it (a role moving to it restarts nothing), only what changed, check mode, and a secret in no output."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "files").mkdir()
    # Blocks (trim_blocks), a trailing newline and a backslash: where renderers differ.
    (tmp_path / "templates" / "config.j2").write_text(
        "# {{ greeting }}\n{% for item in items_ %}\nitem.{{ item }}=C:\\\\dir\\n\n{% endfor %}\nend\n\n"
    )
    (tmp_path / "files" / "rules.yml").write_text("rules:\n  - a\n\n")
    out = tmp_path / "written.json"
    files = tmp_path / "out"
    files.mkdir()
    group = grp.getgrgid(os.getgid()).gr_name
    secret = "s3cret-Value-9"
    playbook = tmp_path / "play.yml"
    playbook.write_text(WRITE_FILES.format(dir=files, group=group, secret=secret, out=out))

    def run(*args: str, check: bool = False) -> tuple[dict, str]:
        result = run_playbook(playbook, "localhost,", cwd=tmp_path, args=[*LOCAL, *args], check=check, timeout=120)
        assert result.returncode == 0, result.stdout[-2000:]
        return json.loads(out.read_text()), result.stdout

    first, said = run("-vvv", "--diff")
    inner = files / "made" / "inner"
    expected = [str(inner)] + [str(files / name) for name in ("by-lookup", "by-file-lookup", "secret")]
    assert first["written"] == [*expected, str(inner / "link")]
    assert oct(inner.stat().st_mode & 0o777) == "0o750"
    assert os.readlink(inner / "link") == str(files / "by-lookup")
    assert (files / "by-lookup").read_bytes() == (files / "by-template").read_bytes()
    assert (files / "by-file-lookup").read_bytes() == (files / "by-copy").read_bytes() == b"rules:\n  - a\n\n"
    assert (files / "secret").read_text() == f"password={secret}\n"
    assert oct((files / "secret").stat().st_mode & 0o777) == "0o600"
    assert ((files / "secret").stat().st_uid, (files / "secret").stat().st_gid) == (os.geteuid(), os.getegid())
    assert secret not in said and secret not in out.read_text()
    again, _ = run()
    assert not again["changed"] and again["written"] == []
    # A file, modes and a link changed by hand: check mode names them and writes nothing; a run puts them back.
    (files / "by-lookup").write_text("edited\n")
    (files / "secret").chmod(0o644)
    inner.chmod(0o755)
    (inner / "link").unlink()
    (inner / "link").symlink_to(files / "secret")
    changed = [str(inner), str(files / "by-lookup"), str(files / "secret"), str(inner / "link")]
    checked, _ = run(check=True)
    assert checked["written"] == changed
    assert (files / "by-lookup").read_text() == "edited\n"
    assert os.readlink(inner / "link") == str(files / "secret")
    assert run()[0]["written"] == changed
    assert os.readlink(inner / "link") == str(files / "by-lookup")
    assert oct(inner.stat().st_mode & 0o777) == "0o750"
    assert (files / "by-lookup").read_bytes() == (files / "by-template").read_bytes()
    assert oct((files / "secret").stat().st_mode & 0o777) == "0o600"
    # New content its validate command refuses: the task fails naming the file, which stays as it was, and no
    # temporary copy is left beside it.
    (tmp_path / "files" / "bad.yml").write_text("not the rules\n")
    refused = run_playbook(
        playbook, "localhost,", cwd=tmp_path, args=[*LOCAL, "-e", "rules_file=bad.yml"], check=False, timeout=120
    )
    assert refused.returncode != 0
    said = re.sub(r"\s+", " ", refused.stdout)
    assert f"{files / 'by-file-lookup'}: the new content fails 'grep -q ^rules: %s' (rc 1); not written" in said
    assert (files / "by-file-lookup").read_bytes() == b"rules:\n  - a\n\n"
    assert sorted(path.name for path in files.iterdir() if path.name.startswith(".")) == []


MITOGEN = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: A module, as every task runs one
      ansible.builtin.command: "true"
      changed_when: false
    - name: The connections a task that becomes root goes through
      mitogen_get_stack:
      become: true
      register: stack
    - name: Show them
      ansible.builtin.copy:
        content: "{{ stack | to_json }}"
        dest: "{{ out }}"
"""


def test_the_projects_strategy_runs_the_tasks_over_mitogen(tmp_path: Path) -> None:
    """ansible.cfg's strategy, mitogen_linear (src/kafkalab/strategy_plugins): the tasks' modules go to an
    interpreter Mitogen keeps on the host for the run. mitogen_get_stack exists only under a Mitogen strategy, and
    says which connections Mitogen opens (its action is named here only so that the playbook parses)."""
    import ansible_mitogen

    playbook = tmp_path / "play.yml"
    playbook.write_text(MITOGEN)
    out = tmp_path / "stack.json"
    actions = Path(ansible_mitogen.__file__).parent / "plugins" / "action"
    run = run_playbook(
        playbook,
        "localhost,",
        cwd=tmp_path,
        args=[*LOCAL, "-e", f"out={out}"],
        env={"ANSIBLE_ACTION_PLUGINS": str(actions)},
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "plain linear strategy" not in run.stdout + run.stderr
    stack = json.loads(out.read_text())["result"]
    # Becoming the user that runs Ansible starts no sudo, as under plain Ansible (become_allow_same_user).
    assert [hop["method"] for hop in stack] == (["local"] if os.geteuid() == 0 else ["local", "sudo"]), stack


def test_without_mitogen_the_strategy_is_plain_linear_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ansible-playbook from outside the venv (no mitogen) still runs: Ansible's linear strategy, with a warning."""
    import importlib.util

    from ansible.plugins.strategy.linear import StrategyModule as Linear

    monkeypatch.setitem(sys.modules, "ansible_mitogen", None)
    monkeypatch.setitem(sys.modules, "ansible_mitogen.strategy", None)
    path = ROOT / "src" / "kafkalab" / "strategy_plugins" / "mitogen_linear.py"
    spec = importlib.util.spec_from_file_location("kafkalab_strategy_without_mitogen", path)
    assert spec is not None and spec.loader is not None
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    assert plugin.StrategyModule.__mro__[1] is Linear
    assert "ansible_mitogen" not in " ".join(cls.__module__ for cls in plugin.StrategyModule.__mro__)
