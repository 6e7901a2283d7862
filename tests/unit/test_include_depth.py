"""A reader follows at most three task files from any playbook: the entry point and two levels of includes.

Every include_tasks, import_tasks, include_role and import_role (a role's main.yml when no tasks_from) is an edge;
the chain starts at the task file a playbook (or a scenario's playbook) names, and its length counts task files.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MAX_FILES = 3
TASK_KEYS = ("block", "rescue", "always")
PLAY_KEYS = ("pre_tasks", "tasks", "post_tasks", "handlers")


def _short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def _tasks(tasks: object) -> Iterator[dict]:
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in TASK_KEYS:
            yield from _tasks(task.get(key))


def _role_file(name: str, entry: str | None) -> Path:
    return ROOT / "roles" / name.removeprefix("kafkalab.kafka.") / "tasks" / f"{entry or 'main'}.yml"


def _targets(tasks: object, here: Path) -> list[Path]:
    found = []
    for task in _tasks(tasks):
        for action, args in task.items():
            short = _short(str(action))
            if short in {"include_tasks", "import_tasks"}:
                file = args["file"] if isinstance(args, dict) else args
                found.append((here.parent / str(file)).resolve())
            elif short in {"include_role", "import_role"}:
                found.append(_role_file(args["name"], args.get("tasks_from")))
    return found


@cache
def _longest(path: Path) -> tuple[Path, ...]:
    """The longest chain of task files that starts at path (path included)."""
    assert path.exists(), f"{path} is included but does not exist"
    tails = [_longest(target) for target in _targets(yaml.safe_load(path.read_text()), path)]
    return (path, *max(tails, key=len, default=()))


def _playbooks() -> Iterator[Path]:
    yield from sorted((ROOT / "playbooks").glob("*.yml"))
    yield from sorted((ROOT / "molecule").glob("*/*.yml"))


def _entry_points() -> set[Path]:
    entries = set()
    for playbook in _playbooks():
        for play in yaml.safe_load(playbook.read_text()) or []:
            if not isinstance(play, dict) or "hosts" not in play:
                continue
            for role in play.get("roles") or []:
                entries.add(_role_file(role["role"] if isinstance(role, dict) else role, None))
            for key in PLAY_KEYS:
                entries.update(_targets(play.get(key), playbook))
    return entries


def test_the_walk_finds_the_known_chains() -> None:
    entries = _entry_points()
    assert _role_file("kafka", None) in entries
    assert _role_file("kafka_ops", "rotate_certificates") in entries
    chain = _longest(_role_file("kafka_ops", "rotate_certificates"))
    assert len(chain) == MAX_FILES  # rotate_certificates -> kafka tls -> pki certificate (or -> restart -> restart_one)


def test_no_include_chain_is_deeper_than_three_task_files() -> None:
    too_deep = {
        " -> ".join(str(p.relative_to(ROOT)) for p in chain)
        for chain in map(_longest, _entry_points())
        if len(chain) > MAX_FILES
    }
    assert sorted(too_deep) == [], f"include chains over {MAX_FILES} task files"
