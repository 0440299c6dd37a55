"""Runs the services as separate processes on this machine (demo, e2e tests, benchmarks).

Each service is ``python -m cbt.cli run <name>`` with the same config file; environment overrides
(``CBT__SECTION__KEY``) give a test its own topic prefix, Redis key prefix and databases.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from prometheus_client.parser import text_string_to_metric_families

from cbt.cli.run_cmd import PORT_OFFSET

SERVICE_NAMES = ("coordinator", "worker", "bounds-cache", "invalidator")


@dataclass
class ServiceProcesses:
    config_path: Path
    overrides: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    health_ports: dict[str, int] = field(default_factory=dict)
    """Where each process answers ``/healthz`` and ``/readyz``."""
    metrics_ports: dict[str, int] = field(default_factory=dict)
    """Where each process serves ``/metrics`` for Prometheus."""
    metrics_base_port: int | None = None
    """Serve metrics at this port plus the service's offset (``cbt run``'s default ports, for a Prometheus to
    scrape) when that port is free; otherwise, and when ``None``, at any free port."""
    _logs: list[IO[bytes]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.overrides, "PYTHONUNBUFFERED": "1"}

    def start(self, name: str, instance: str = "") -> subprocess.Popen[bytes]:
        """Start one service process (``instance`` tells several of one service apart)."""
        key = f"{name}{instance}"
        self.health_ports[key], self.metrics_ports[key] = free_port(), self._metrics_port(name)
        argv = [sys.executable, "-m", "cbt.cli", "run", name, "--config", str(self.config_path),
                "--health-addr", f"127.0.0.1:{self.health_ports[key]}",
                "--metrics-addr", f"127.0.0.1:{self.metrics_ports[key]}"]
        out: IO[bytes] | int = subprocess.DEVNULL
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            out = (self.log_dir / f"{key}.log").open("ab")
            self._logs.append(out)
        proc = subprocess.Popen(argv, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                cwd=self.config_path.parent)
        self.running[key] = proc
        return proc

    def _metrics_port(self, name: str) -> int:
        if self.metrics_base_port is None:
            return free_port()
        wanted = self.metrics_base_port + PORT_OFFSET[name]
        return wanted if is_free(wanted) and wanted not in self.metrics_ports.values() else free_port()

    def metrics(self, key: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """One scrape of a running process's ``/metrics``: each sample's value by name and labels."""
        url = f"http://127.0.0.1:{self.metrics_ports[key]}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {(sample.name, frozenset(sample.labels.items())): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples}

    def kill(self, key: str, sig: signal.Signals = signal.SIGKILL, timeout_s: float = 60.0) -> None:
        """Signal one service process and wait for it to exit (SIGKILL: a crash at an arbitrary moment)."""
        proc = self.running.pop(key)
        proc.send_signal(sig)
        proc.wait(timeout=timeout_s)

    def stop_all(self, timeout_s: float = 30.0) -> None:
        for proc in self.running.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for key, proc in list(self.running.items()):
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            del self.running[key]
        for log in self._logs:
            log.close()
        self._logs.clear()

    def startup(self, key: str) -> dict[str, Any] | None:
        """The process's start-up as its ``/readyz`` reports it: the step it is in and the milestones it passed
        (seconds since the process started); None when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_ports[key]}/readyz", timeout=10) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            body = e.read()
        except (OSError, KeyError):
            return None
        found: dict[str, Any] | None = json.loads(body).get("startup")
        return found

    def start_timeline(self) -> dict[str, dict[str, float]]:
        """Every running process's start-up milestones (``startup``), by process."""
        out: dict[str, dict[str, float]] = {}
        for key in self.running:
            found = self.startup(key)
            out[key] = dict(found.get("seconds_since_process_start", {})) if found else {}
        return out

    def readiness(self, key: str) -> dict[str, str] | None:
        """What the process's ``/readyz`` says of each dependency (``ok`` or why not); None while it does not answer
        (starting up, stopped)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_ports[key]}/readyz", timeout=10) as response:
                body = response.read()
        except urllib.error.HTTPError as e:  # 503: not ready, with the checks
            body = e.read()
        except (OSError, KeyError):
            return None
        checks: dict[str, str] = json.loads(body).get("checks", {})
        return checks

    def exited(self) -> dict[str, int]:
        """Processes that have exited on their own, with their exit codes."""
        return {k: code for k, p in self.running.items() if (code := p.poll()) is not None}


def is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


_HANDED_OUT: set[int] = set()
"""Ports ``free_port`` returned in this process: one is not bound until the process it was given to has started
(seconds of imports), and the kernel may offer it again meanwhile — to another service of the same run, whose health
server, now answering from its first moment, would take it first."""


def free_port() -> int:
    """A TCP port nothing listens on now, and never one this process handed out before."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
