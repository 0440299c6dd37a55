"""Detached local processes with PID files: start once, find again, stop only what we started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cbt.base.errors import InfraError

_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Handles of the processes started by this interpreter, kept so they can be reaped when stopped here."""


@dataclass(frozen=True)
class ManagedProcess:
    """A process the launcher owns: its PID file records the pid and the kernel's start time of that pid."""

    name: str
    pid_file: Path
    log_file: Path

    def pid(self) -> int | None:
        """The recorded pid if that very process is still running (a recycled pid does not count)."""
        try:
            pid_text, started = self.pid_file.read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            return None
        return pid if _start_time(pid) == started else None

    def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> int:
        """Start ``argv`` detached (own session), logging to ``log_file``; records the pid."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        _CHILDREN[proc.pid] = proc
        self.pid_file.write_text(f"{proc.pid} {_start_time(proc.pid)}\n")
        return proc.pid

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the process group we started (TERM, then KILL); False when nothing of ours was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        _signal_group(pid, signal.SIGTERM)
        if not wait_until(lambda: _start_time(pid) is None, timeout_s):
            _signal_group(pid, signal.SIGKILL)
            wait_until(lambda: _start_time(pid) is None, 5.0)
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.wait(timeout=5)
        self.pid_file.unlink(missing_ok=True)
        return True

    def kill(self, timeout_s: float = 10.0) -> bool:
        """SIGKILL the whole process group at once, as a crashed machine would (fault tests); False when nothing of
        ours was running."""
        pid = self.pid()
        if pid is None:
            return False
        _signal_group(pid, signal.SIGKILL)
        wait_until(lambda: _start_time(pid) is None, timeout_s)
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.wait(timeout=5)
        self.pid_file.unlink(missing_ok=True)
        return True

    def rss_mib(self) -> float | None:
        """Resident memory of the process and its children, in MiB."""
        pid = self.pid()
        if pid is None:
            return None
        return sum(_rss_kib(p) for p in _tree(pid)) / 1024

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_until(check: Callable[[], bool], timeout_s: float, every_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(every_s)


def require_free_port(name: str, host: str, port: int, env_var: str) -> None:
    if port_open(host, port):
        raise InfraError(
            f"{name}: port {host}:{port} is already in use by a process this launcher did not start; "
            f"stop it or choose another port with {env_var}"
        )


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError as e:
        raise InfraError(f"not allowed to signal process group {pid}") from e


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
