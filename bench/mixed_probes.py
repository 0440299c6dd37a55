"""What bench (h) watches while the mixed pipeline runs: a command-line client, how many Spark statements execute at
once, the services' metrics and spans.

- ``CliClient``: ``cbt status --json`` then ``cbt plan --json``, then a pause of a few seconds, again and again
  (``watch -n 3``), each a subprocess against the bench deployment's config, with its wall time.
- ``Sampler`` runs ``ConcurrencyProbe``s — pluggable: each answers "how many Spark statements execute now" from one
  source, or ``None`` when that source does not exist here. ``worker_tasks_running`` (the workers' own gauge) always
  works; ``admission_permits_held`` reads admission control's permits in Redis (when the code under test has it) and
  ``spark_ui_running_jobs`` the Spark UI's REST API on the Connect server (``BENCH_SPARK_UI``; the local server runs
  without a UI unless started in cluster mode).
- ``span_overlap``: after the run, the exact peak of the workers' ``spark job`` / ``script`` spans open at once
  (tasks in their statement phase; once admission control exists, that includes waiting for a permit).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from redis import Redis

from bench.report import summary

Scrape = Mapping[tuple[str, frozenset[tuple[str, str]]], float]
"""One ``/metrics`` scrape: each sample's value by name and labels."""


@dataclass
class CliClient:
    """Runs each command in ``commands`` in turn, then pauses ``period_s``, recording wall times (ms) and failures."""

    commands: Mapping[str, Sequence[str]]
    env: Mapping[str, str]
    cwd: Path
    period_s: float = 3.0
    wall_ms: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-cli", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def report(self) -> dict[str, Any]:
        return {"period_s": self.period_s, "wall_ms": {name: summary(v) for name, v in self.wall_ms.items()},
                "failures": len(self.failures), "first_failures": self.failures[:3]}

    def _run(self) -> None:
        while not self._stop.is_set():  # as ``watch -n 3`` does: the pause follows the commands, they never pile up
            for name, argv in self.commands.items():
                self._once(name, argv)
            self._stop.wait(self.period_s)

    def _once(self, name: str, argv: Sequence[str]) -> None:
        began = time.perf_counter()
        try:
            done = subprocess.run(list(argv), env=dict(self.env), cwd=self.cwd, capture_output=True, timeout=60,
                                  check=False)
        except subprocess.TimeoutExpired:
            self.failures.append(f"{name}: timed out after 60 s")
            return
        except OSError as e:  # e.g. the command's script is being reinstalled: a failed call, the client goes on
            self.failures.append(f"{name}: {e}")
            return
        self.wall_ms.setdefault(name, []).append(round((time.perf_counter() - began) * 1000, 1))
        if done.returncode != 0:
            self.failures.append(f"{name}: exit {done.returncode}: {done.stderr.decode()[-300:]}")
            return
        try:
            json.loads(done.stdout)
        except ValueError:
            self.failures.append(f"{name}: not JSON: {done.stdout.decode()[:200]}")


class ConcurrencyProbe(Protocol):
    """How many Spark statements execute now, from one source; ``None``: the source does not answer here."""

    name: str

    def sample(self) -> int | None: ...


@dataclass
class WorkerTasksRunning:
    """The sum of ``cbt_tasks_running`` over the workers (tasks between pickup and end: their statements, and the
    checks and commits around them)."""

    scrapes: Sequence[Callable[[], Scrape]]
    name: str = "worker_tasks_running"

    def sample(self) -> int | None:
        total = 0.0
        for scrape in self.scrapes:
            try:
                total += sum(v for (name, _), v in scrape().items() if name.startswith("cbt_tasks_running"))
            except OSError:
                return None
        return int(total)


@dataclass
class AdmissionPermits:
    """Permits held now in admission control's queue in Redis (``cbt.adapters.admission.read_status``: statements
    executing on the Spark cluster, counted over every process and deployment that shares the cluster and this Redis
    — other users of the same server count too). ``None`` when admission is off or that module is not there."""

    read: Callable[[], Any]
    name: str = "admission_permits_held"
    waiting: list[int] = field(default_factory=list)
    limits: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, config: Any, redis: Redis) -> AdmissionPermits:
        def read() -> Any:
            try:
                from cbt.adapters.admission import read_status
            except ImportError:
                return None
            return read_status(config, redis)

        return cls(read)

    def sample(self) -> int | None:
        try:
            status = self.read()
        except Exception:  # the store's layout changed or Redis does not answer: this source says nothing
            return None
        if status is None:
            return None
        self.waiting.append(int(status.waiting))
        if status.limit is not None:
            self.limits.add(int(status.limit))
        return int(status.executing)


@dataclass
class SparkUiRunningJobs:
    """Running jobs in the Spark UI's REST API of the Connect server (``BENCH_SPARK_UI``; the local server runs
    without a UI unless started in cluster mode)."""

    url: str = field(default_factory=lambda: os.environ.get("BENCH_SPARK_UI", "http://127.0.0.1:4040"))
    name: str = "spark_ui_running_jobs"

    def sample(self) -> int | None:
        try:
            apps = _get_json(f"{self.url}/api/v1/applications")
            return sum(len(_get_json(f"{self.url}/api/v1/applications/{app['id']}/jobs?status=running"))
                       for app in apps)
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.loads(response.read())


@dataclass
class Sampler:
    """Samples every probe and the load average each ``period_s``; keeps each probe's peak."""

    probes: Sequence[ConcurrencyProbe]
    period_s: float = 1.0
    samples: dict[str, list[int]] = field(default_factory=dict)
    load: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started: float = field(default_factory=time.monotonic)

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for probe in self.probes:
            values = self.samples.get(probe.name, [])
            out[probe.name] = ({"available": True, "max": max(values), "samples": len(values),
                                "mean": round(sum(values) / len(values), 2)} if values
                               else {"available": False, "note": "no answer from this source during the run"})
            if isinstance(probe, AdmissionPermits) and values:
                out[probe.name].update({"max_waiting": max(probe.waiting, default=0), "limits": sorted(probe.limits)})
        return out

    def _run(self) -> None:
        last_load = -10.0
        while not self._stop.is_set():
            for probe in self.probes:
                value = probe.sample()
                if value is not None:
                    self.samples.setdefault(probe.name, []).append(value)
            at = time.monotonic() - self._started
            if at - last_load >= 10:
                self.load.append((round(at, 1), round(os.getloadavg()[0], 2)))
                last_load = at
            self._stop.wait(self.period_s)


def histogram(scrapes: Iterable[Scrape], name: str, by: str | None = None) -> dict[str, dict[str, float]]:
    """A Prometheus histogram summed over scrapes (e.g. every worker): count, mean and bucket-estimated p50 / p90
    (the upper bound of the bucket holding the quantile), per value of label ``by`` (or ``all``)."""
    counts: dict[str, float] = {}
    sums: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    for scrape in scrapes:
        for (sample, labels), value in scrape.items():
            group = dict(labels).get(by, "") if by else "all"
            if sample == f"{name}_count":
                counts[group] = counts.get(group, 0) + value
            elif sample == f"{name}_sum":
                sums[group] = sums.get(group, 0) + value
            elif sample == f"{name}_bucket":
                bound = float(dict(labels)["le"])
                buckets.setdefault(group, {})[bound] = buckets.get(group, {}).get(bound, 0) + value
    out = {}
    for group, n in counts.items():
        if not n:
            continue
        cumulative = sorted(buckets.get(group, {}).items())
        out[group] = {"count": int(n), "mean_s": round(sums.get(group, 0) / n, 3),
                      "p50_le_s": _bucket_quantile(cumulative, n, 0.5),
                      "p90_le_s": _bucket_quantile(cumulative, n, 0.9)}
    return out


def _bucket_quantile(cumulative: list[tuple[float, float]], n: float, q: float) -> float:
    return next((bound for bound, count in cumulative if count >= q * n), float("inf"))


def read_spans(folder: Path) -> list[dict[str, Any]]:
    """Every span the services wrote to ``folder`` (one JSON object per line)."""
    spans = []
    for path in sorted(folder.glob("*.jsonl")) if folder.exists() else []:
        for line in path.read_text().splitlines():
            try:
                spans.append(json.loads(line))
            except ValueError:
                continue
    return spans


def span_overlap(spans: Iterable[dict[str, Any]], names: Collection[str]) -> dict[str, Any]:
    """The most spans named in ``names`` open at the same moment, and their durations (ms)."""
    edges: list[tuple[float, int]] = []
    durations: list[float] = []
    for span in spans:
        if span.get("name") in names:
            start, end = _instant(span["start_time"]), _instant(span["end_time"])
            edges += [(start, 1), (end, -1)]
            durations.append(round((end - start) * 1000, 1))
    peak = current = 0
    for _, step in sorted(edges):
        current += step
        peak = max(peak, current)
    return {"max_at_once": peak, "spans": len(durations), "duration_ms": summary(durations)}


def _instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


CPU_GROUPS: tuple[tuple[str, str], ...] = (
    ("spark", "SparkConnectServer"), ("kafka", "kafka.Kafka"), ("redis", "redis-server"),
    ("coordinator", "run coordinator"), ("worker", "run worker"), ("bounds-cache", "run bounds-cache"),
    ("invalidator", "run invalidator"),
)
"""Which processes' CPU time bench (h) reports, by a piece of their command line (first match names the group)."""


def cpu_by_group(groups: Sequence[tuple[str, str]] = CPU_GROUPS) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the live processes of each group, and by the whole machine
    (``machine``, from ``/proc/stat``); ``cli client`` is this process's waited children (the client's commands) and
    ``bench`` this process (the data writer, the probes). The difference of two readings is what each used in
    between."""
    tick = os.sysconf("SC_CLK_TCK")
    used = dict.fromkeys((name for name, _ in groups), 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while being read
            continue
        group = next((name for name, needle in groups if needle in cmdline), None)
        if group is not None:
            used[group] += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15 of stat)
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    used["cli client"], used["bench"] = children.ru_utime + children.ru_stime, own.ru_utime + own.ru_stime
    used["machine"] = (sum(int(v) for v in cpu) - int(cpu[3]) - int(cpu[4])) / tick  # all but idle and iowait
    return used


def cpu_used(before: Mapping[str, float], after: Mapping[str, float], elapsed_s: float) -> dict[str, Any]:
    """CPU seconds per group between two ``cpu_by_group`` readings, and as cores on average over ``elapsed_s``."""
    spent = {name: round(after[name] - before.get(name, 0.0), 1) for name in after}
    return {"cpu_s": spent, "cores": {name: round(s / elapsed_s, 2) for name, s in spent.items()} if elapsed_s else {}}
