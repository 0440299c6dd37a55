"""`cbt dev up | down | status`: the local Kafka, Redis and Spark Connect, started once and found again."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from cbt.dev.kafka import KafkaBroker
from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess, require_free_port
from cbt.dev.redis import RedisServer
from cbt.dev.spark import SparkConnectServer
from cbt.errors import InfraError

READY_TIMEOUT_S = {"kafka": 90.0, "redis": 15.0, "spark-connect": 300.0}


class Component(Protocol):
    name: str
    port_env: str
    process: ManagedProcess

    @property
    def endpoint(self) -> str: ...
    @property
    def port(self) -> int: ...
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

    def line(self) -> str:
        state = "up" if self.is_up else "down"
        memory = f"{self.rss_mib:.0f} MiB" if self.rss_mib is not None else "-"
        owner = f"pid {self.pid}" if self.pid else "not started by cbt"
        took = f", started in {self.started_in_s:.1f}s" if self.started_in_s is not None else ""
        return f"{self.name:<14} {state:<5} {self.endpoint:<24} {owner:<20} {memory}{took}"


def components(layout: Layout | None = None) -> list[Component]:
    lay = layout or Layout.from_env()
    return [KafkaBroker(lay), RedisServer(lay), SparkConnectServer(lay)]


def up(layout: Layout | None = None) -> list[ComponentStatus]:
    """Start every component that is not already running (idempotent) and wait until each answers."""
    parts = components(layout)
    for part in parts:
        part.install()
    started: dict[str, float] = {}
    for part in parts:
        if part.process.pid() is not None:
            continue
        require_free_port(part.name, HOST, part.port, part.port_env)
        started[part.name] = time.monotonic()
        part.start()
    took = _wait_all_ready(parts, started)
    for part in parts:
        part.after_ready()
    return [_status(part, took.get(part.name)) for part in parts]


def down(layout: Layout | None = None) -> list[str]:
    """Stop only the processes this launcher started; returns their names."""
    return [part.name for part in reversed(components(layout)) if part.process.stop()]


def status(layout: Layout | None = None) -> list[ComponentStatus]:
    return [_status(part) for part in components(layout)]


def _wait_all_ready(parts: list[Component], started: dict[str, float]) -> dict[str, float]:
    """Poll every component together; returns how long each one we started took to answer."""
    took: dict[str, float] = {}
    waiting_since = time.monotonic()
    pending = list(parts)
    while pending:
        for part in list(pending):
            if part.is_ready():
                pending.remove(part)
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
        rss_mib=part.process.rss_mib(), started_in_s=started_in_s,
    )
