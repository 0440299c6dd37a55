"""Records what the services publish: every task request and completion, with when the bench's consumer saw it.

The bench consumes in a group of its own, so the services' groups are unaffected. The receive time of a task
request is a proxy for how soon any consumer can pick a task up (one Kafka hop plus a poll).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer
from pydantic import ValidationError

from cbt.contract.messages import IntervalCompleted, TaskRequested, decode, now_ms


@dataclass(frozen=True)
class Seen:
    message: TaskRequested | IntervalCompleted
    received_ms: int


@dataclass
class EventRecorder:
    bootstrap: str
    topics: Sequence[str]
    group: str
    requested: list[Seen] = field(default_factory=list)
    completed: list[Seen] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _assigned: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, timeout_s: float = 60.0) -> None:
        """Start consuming; returns once the consumer holds its partitions."""
        self._thread = threading.Thread(target=self._run, name="bench-events", daemon=True)
        self._thread.start()
        if not self._assigned.wait(timeout_s):
            raise RuntimeError(f"the bench consumer got no partitions within {timeout_s:.0f}s")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def completions(self, model: str) -> list[IntervalCompleted]:
        with self._lock:
            return [s.message for s in self.completed if s.message.model == model
                    and isinstance(s.message, IntervalCompleted)]

    def requests(self, model: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.requested if s.message.model == model]

    def wait_completed(self, model: str, count: int, timeout_s: float) -> None:
        """Until ``count`` intervals of ``model`` completed (a batch counts each of its intervals)."""
        deadline = time.monotonic() + timeout_s
        while (done := self.intervals_completed(model)) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{model}: {done}/{count} intervals completed within {timeout_s:.0f}s")
            time.sleep(0.05)

    def intervals_completed(self, model: str) -> int:
        done = {c.task_id: c for c in self.completions(model)}
        return sum((c.interval or 0) // c.step if c.step else 1 for c in done.values())

    def _run(self) -> None:
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "fetch.wait.max.ms": 10, "log_level": 0,
        })
        consumer.subscribe(list(self.topics), on_assign=lambda c, parts: self._assigned.set())
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.02)
                if message is None or message.error() is not None:
                    continue
                received = now_ms()
                try:
                    body = decode(message.value() or b"")
                except ValidationError:
                    continue
                with self._lock:
                    if isinstance(body, TaskRequested):
                        self.requested.append(Seen(body, received))
                    elif isinstance(body, IntervalCompleted):
                        self.completed.append(Seen(body, received))
        finally:
            consumer.close()
