"""Kafka's own Java clients, of the release under test, run from source (kafkalab/clients/*.java, with the JDK's
single-file launcher) by the tests and the benches, against the jars of the verified archive `make artifacts`
assembled: what speaks the newest protocols (the second transaction protocol, share groups), which kafka-python
does not."""

from __future__ import annotations

import os
import subprocess
import tarfile
import threading
import time
from pathlib import Path

# src/kafkalab/java_clients.py: the repository root is two levels up from the package.
ROOT = Path(__file__).resolve().parents[2]
SOURCES = Path(__file__).resolve().parent / "clients"


def client_libs(version: str, scala: str = "2.13") -> Path:
    """The release's libs/ (kafka-clients and what it needs), unpacked once from the verified archive into
    .cache/kafka-clients/."""
    stem = f"kafka_{scala}-{version}"
    libs = ROOT / ".cache" / "kafka-clients" / stem / "libs"
    if libs.is_dir():
        return libs
    archive = ROOT / ".cache" / "artifacts" / f"{stem}.tgz"
    if not archive.is_file():
        raise FileNotFoundError(f"{archive} is missing: make artifacts assembles it")
    partial = libs.parent.with_name(f"{stem}.partial")
    subprocess.run(["rm", "-rf", str(partial)], check=True)
    partial.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/libs/" in m.name and m.name.endswith(".jar")]
        for member in members:
            member.name = os.path.basename(member.name)
        tar.extractall(partial / "libs", members=members, filter="data")
    partial.rename(libs.parent)
    return libs


class JavaClient:
    """One client program as a child process; its stdout lines are collected as they come. Closing its standard
    input asks it to stop."""

    def __init__(self, program: str, version: str, scala: str, args: list[str]) -> None:
        self.command = [
            os.environ.get("JAVA", "java"),
            "-Xmx256m",
            "-cp",
            f"{client_libs(version, scala)}/*",
            str(SOURCES / f"{program}.java"),
            *args,
        ]
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self.started = 0.0
        self._reader: threading.Thread | None = None

    def start(self) -> JavaClient:
        self.proc = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.rstrip("\n"))

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.lines[-lines:])

    def wait_line(self, prefix: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            found = next((line for line in list(self.lines) if line.startswith(prefix)), None)
            if found is not None:
                return found
            assert self.running(), f"{self.command[-6:]} exited: {self.tail()}"
            assert time.monotonic() < deadline, f"no '{prefix}' line in {timeout_s:.0f} s: {self.tail()}"
            time.sleep(0.2)

    def stop(self, timeout_s: float = 180) -> None:
        """Close its standard input and wait for it to finish cleanly."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"it did not stop in {timeout_s:.0f} s: {self.tail()}") from None
        if self._reader:
            self._reader.join(timeout=10)
        assert self.proc.returncode == 0, f"it failed (rc {self.proc.returncode}): {self.tail(40)}"
        assert self.lines and self.lines[-1].startswith("STOPPED"), self.tail()

    def kill(self) -> None:
        """SIGKILL (a member that dies without a word to the cluster)."""
        if self.running():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(timeout=30)


class ShareMember(JavaClient):
    """kafkalab/clients/ShareMember.java: one member of a share group; `deliveries` parses what it printed."""

    def __init__(
        self,
        version: str,
        scala: str,
        bootstrap: str,
        client_config: str | None,
        topic: str,
        group: str,
        name: str,
        mode: str = "accept",
    ) -> None:
        self.name = name
        super().__init__("ShareMember", version, scala, [client_config or "-", bootstrap, topic, group, name, mode])

    def deliveries(self) -> list[tuple[str, int, str, str]]:
        """(partition:offset, delivery count, value, what the member did) for every record delivered to it."""
        found = []
        for line in list(self.lines):
            if line.startswith("REC "):
                _rec, at, count, value, action = line.split(" ", 4)
                found.append((at, int(count), value, action))
        return found
