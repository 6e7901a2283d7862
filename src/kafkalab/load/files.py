"""The load run's state directory: its file layout, and the append-only JSON-lines files the background
process writes while `checkpoint`, `stop` and `status` read them.

The background process can be killed at any moment (SIGKILL after a stop timeout, the host going down),
so a reader must take a half-written last line in its stride: it is the one record the writer did not
finish, never a reason to fail the accounting.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO


class LoadError(Exception):
    """An expected failure, with a message that says what failed and what to do about it."""


@dataclass(frozen=True)
class StateDir:
    """Where one load run keeps everything: what it was started with, what it saw, what was checked."""

    path: Path

    @property
    def config(self) -> Path:  # bootstrap, topic, group, run id, rate: written by `start`
        return self.path / "config.json"

    @property
    def pid(self) -> Path:
        return self.path / "pid"

    @property
    def log(self) -> Path:  # the background process's stdout and stderr
        return self.path / "load.log"

    @property
    def ready(self) -> Path:  # written by the background process once the first acks arrived
        return self.path / "ready.json"

    @property
    def done(self) -> Path:  # written by the background process when it shut down after SIGTERM
        return self.path / "done.json"

    @property
    def acked(self) -> Path:  # partition, offset, key, seq, t (ack time, time.time())
        return self.path / "acked.jsonl"

    @property
    def group(self) -> Path:  # partition, offset, seq, t: what the group member consumed of this run
        return self.path / "group.jsonl"

    @property
    def commits(self) -> Path:  # t, offsets {partition: next offset}: each commit the broker accepted
        return self.path / "commits.jsonl"

    @property
    def failed(self) -> Path:  # seq, error, t: sends that ended in an error instead of an ack
        return self.path / "failed.jsonl"

    @property
    def phases(self) -> Path:  # the checkpoints taken so far: where each phase ended
        return self.path / "phases.json"

    def require(self) -> StateDir:
        """The state directory of a started run, or a LoadError that says how to get one."""
        if not self.path.is_dir():
            raise LoadError(
                f"state directory {self.path} does not exist: start a load first "
                f"(python -m kafkalab.load start --bootstrap ... --topic ... --state {self.path})"
            )
        if not self.config.is_file():
            raise LoadError(
                f"{self.path} holds no load run (no config.json): pass the --state the load was started with"
            )
        return self


@dataclass
class JsonlRows:
    """The complete records of a JSON-lines file; `skipped` counts lines that were not (a torn last line)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


def parse_jsonl(data: bytes) -> JsonlRows:
    """Parse JSON lines, tolerating what a writer killed mid-line leaves behind.

    A line that does not parse as a JSON object is skipped and counted. An unterminated last line that
    does parse is a whole record (no prefix of a JSON object is itself one), so it is kept: the next read
    sees the same line, terminated, at the same position, and row indexes stay stable across reads.
    """
    out = JsonlRows()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            out.skipped += 1
            continue
        if isinstance(row, dict):
            out.rows.append(row)
        else:
            out.skipped += 1
    return out


def read_jsonl(path: Path) -> JsonlRows:
    """The records of a JSON-lines file; none if the file does not exist (yet)."""
    try:
        return parse_jsonl(path.read_bytes())
    except FileNotFoundError:
        return JsonlRows()


class JsonlWriter:
    """Appends JSON lines from several threads; each line is stamped with the time it was written.

    Lines are buffered; `flush` (called by the background process at least once a second) makes them
    visible to readers. The stamp is taken under the lock, so the file's order is the order of the stamps.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file: TextIO = path.open("a", encoding="utf-8")
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        with self._lock:
            if self._file.closed:  # a callback that trails the shutdown: nothing is left to account it
                return
            line = json.dumps({**row, "t": round(time.time(), 4)}, separators=(",", ":"))
            self._file.write(line + "\n")
            self.count += 1

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_json(path: Path) -> Any:
    """A JSON document, or None if the file does not exist."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def write_json(path: Path, data: Any) -> None:
    """Write a JSON document atomically: a reader sees the old or the new document, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def append_to_list(path: Path, entry: dict[str, Any]) -> None:
    """Append one object to a file holding a JSON list (the phase report); create it if missing."""
    try:
        current = read_json(path)
    except ValueError as exc:
        raise LoadError(f"report file {path} is not JSON ({exc}): move it away or pass another --report") from exc
    if current is None:
        current = []
    if not isinstance(current, list):
        raise LoadError(f"report file {path} holds no JSON list: move it away or pass another --report")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, [*current, entry])


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log file, for a message (empty if there is none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def problem_lines(path: Path, own: int = 12, clients: int = 8) -> list[str]:
    """The load process's last warnings and errors, in the log's order, for a failure message: its own (the
    producer's and the group member's threads, the main thread's watchdog) and fewer of its Kafka clients' (their
    kafka-* I/O threads log every refused connection while a broker restarts, which would crowd the rest out).
    Lines are logging's "<date> <time> <LEVEL> <thread>: <message>"."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    hits = []
    for number, line in enumerate(text.splitlines()):
        parts = line.split(" ", 4)
        if len(parts) >= 4 and parts[2] in ("ERROR", "WARNING"):
            hits.append((number, line, parts[3].startswith("kafka-")))
    kept = [h for h in hits if not h[2]][-own:] + [h for h in hits if h[2]][-clients:]
    return [line for _, line, _ in sorted(kept)]
