"""`cbt dev up | down | status`: the local Kafka, Redis and Spark Connect (and, in cluster mode, the Spark master and
worker it runs on), started once and found again."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cbt.base.errors import InfraError
from cbt.dev.kafka import KafkaBroker
from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess, require_free_port
from cbt.dev.redis import RedisServer
from cbt.dev.spark import SparkConnectServer
from cbt.dev.spark_cluster import SparkMaster, SparkWorker

READY_TIMEOUT_S = {"kafka": 90.0, "redis": 15.0, "spark-connect": 300.0, "spark-master": 90.0,
                   "spark-worker": 90.0}


class Component(Protocol):
    name: str
    port_env: str
    process: ManagedProcess
    needs: tuple[str, ...]
    """Components that must answer before this one starts (the Spark master before its worker)."""

    @property
    def endpoint(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def detail(self) -> str: ...
    def install(self) -> None: ...
    def start(self) -> None: ...
    def is_ready(self) -> bool: ...
    def after_ready(self) -> None: ...


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    endpoint: str
    pid: int | None
    is_up: bool
    rss_mib: float | None
    started_in_s: float | None = None
    detail: str = ""
    """What else to know: where Spark Connect runs its work, the master's web UI, the worker's size."""

    def line(self) -> str:
        state = "up" if self.is_up else "down"
        memory = f"{self.rss_mib:.0f} MiB" if self.rss_mib is not None else "-"
        owner = f"pid {self.pid}" if self.pid else "not started by cbt"
        took = f", started in {self.started_in_s:.1f}s" if self.started_in_s is not None else ""
        detail = f"  ({self.detail})" if self.detail else ""
        return f"{self.name:<14} {state:<5} {self.endpoint:<24} {owner:<20} {memory}{took}{detail}"


def components(layout: Layout | None = None) -> list[Component]:
    """Kafka, Redis, then Spark: the master and worker come in when cluster mode is chosen or they are running."""
    lay = _following_the_running_stack(layout or Layout.from_env())
    return [KafkaBroker(lay), RedisServer(lay), *spark_components(lay, include_idle_cluster=False)]


def spark_components(layout: Layout, include_idle_cluster: bool = True) -> list[Component]:
    """The Spark Connect server, after the standalone master and worker in cluster mode (or when running)."""
    cluster: list[Component] = [SparkMaster(layout), SparkWorker(layout)]
    if layout.spark_mode != "cluster" and not include_idle_cluster:
        cluster = [part for part in cluster if part.process.pid() is not None]
    return [*cluster, SparkConnectServer(layout)]


def up(layout: Layout | None = None) -> list[ComponentStatus]:
    """Start every component that is not already running (idempotent) and wait until each answers."""
    return start(components(layout))


def start(parts: Sequence[Component]) -> list[ComponentStatus]:
    """Start those of ``parts`` that are not running, each once what it needs answers; wait until all answer."""
    for part in parts:
        part.install()
    took = _start_when_needs_ready(parts)
    for part in parts:
        part.after_ready()
    return [_status(part, took.get(part.name)) for part in parts]


def down(layout: Layout | None = None) -> list[str]:
    """Stop only the processes this launcher started; returns their names."""
    lay = layout or Layout.from_env()
    return stop([KafkaBroker(lay), RedisServer(lay), *spark_components(lay)])


def stop(parts: Sequence[Component]) -> list[str]:
    """Stop those of ``parts`` this launcher started, last started first."""
    return [part.name for part in reversed(parts) if part.process.stop()]


def status(layout: Layout | None = None) -> list[ComponentStatus]:
    return [_status(part) for part in components(layout)]


def _following_the_running_stack(layout: Layout) -> Layout:
    """Without a chosen mode, a Connect server already running on the standalone master keeps cluster mode."""
    if layout.is_spark_mode_chosen or layout.spark_mode == "cluster":
        return layout
    running = SparkConnectServer(layout).running_master()
    if running is not None and running.startswith("spark://"):
        return dataclasses.replace(layout, spark_mode="cluster")
    return layout


def _start_when_needs_ready(parts: Sequence[Component]) -> dict[str, float]:
    """Poll every component together, starting each whose ``needs`` answer; returns how long each one we started
    took to answer."""
    took: dict[str, float] = {}
    started: dict[str, float] = {}
    names = {part.name for part in parts}
    ready: set[str] = set()
    waiting_since = time.monotonic()
    pending = list(parts)
    while pending:
        for part in list(pending):
            if part.name not in started and part.process.pid() is None:
                if not ready.issuperset(names.intersection(part.needs)):  # others were started before
                    continue
                require_free_port(part.name, HOST, part.port, part.port_env)
                started[part.name] = time.monotonic()
                part.start()
            if part.is_ready():
                pending.remove(part)
                ready.add(part.name)
                if part.name in started:
                    took[part.name] = time.monotonic() - started[part.name]
            elif part.process.pid() is None and part.name in started:
                raise _not_ready(part, "exited")
            elif time.monotonic() - started.get(part.name, waiting_since) > READY_TIMEOUT_S[part.name]:
                raise _not_ready(part, f"did not answer within {READY_TIMEOUT_S[part.name]:.0f}s")
        time.sleep(0.1)
    return took


def _not_ready(part: Component, why: str) -> InfraError:
    return InfraError(f"{part.name} {why}; last lines of {part.process.log_file}:\n{part.process.log_tail()}")


def _status(part: Component, started_in_s: float | None = None) -> ComponentStatus:
    pid = part.process.pid()
    return ComponentStatus(
        name=part.name, endpoint=part.endpoint, pid=pid, is_up=pid is not None and part.is_ready(),
        rss_mib=part.process.rss_mib(), started_in_s=started_in_s, detail=part.detail,
    )
