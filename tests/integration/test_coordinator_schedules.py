"""The leader's schedules keep firing while the admin tables are consolidated (issue 10, scenario 9).

A real Redis holds the leader lease, the hot index's built flag and the scheduled-run marks; the admin tables are a
stand-in whose consolidation takes seconds (on a large pipeline it takes minutes). Before: the tick awaited the
consolidation, so every fire time inside it was missed and collapsed into one run afterwards.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from redis import Redis

from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.base.cron import previous_fire
from cbt.config.settings import load_config
from cbt.contract.messages import Message, TaskRequested
from cbt.contract.topics import Topics
from cbt.coordinator.app import LEADER_LEASE, Coordinator
from cbt.models.dag import ModelSet
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from cbt.state.admin_records import ScheduledRun
from tests.e2e.harness import CONFIG
from tests.twins.memory_record import MemoryRecord
from tests.unit.scheduling.factories import sched

pytestmark = pytest.mark.integration
EVERY_SECOND = "out.every_second"
CONSOLIDATION_S = 4.0


@dataclass
class Publisher:
    sent: list[Message] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append(message)


class SlowAdmin:
    """Consolidation that holds its thread for a while, as merging many admin rows does."""

    def __init__(self) -> None:
        self.consolidating = threading.Event()

    def consolidate(self, still_allowed: object = None) -> list[object]:
        self.consolidating.set()
        time.sleep(CONSOLIDATION_S)
        self.consolidating.clear()
        return []

    def last_scheduled_runs(self, model_ids: object = None) -> dict[str, object]:
        return {}


def test_scheduled_runs_fire_every_second_while_a_consolidation_runs(redis_client: Redis, redis_prefix: str) -> None:
    config = load_config(CONFIG, environ={**os.environ, "CBT__SCHEDULER__CONSOLIDATION": "@every 1s"})
    models = ModelSet({EVERY_SECOND: sched(EVERY_SECOND, schedule="@every 1s")})
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())
    publisher = Publisher()
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger,
                      publisher, Topics("t."), lambda tags: "default", model_concurrency=1,
                      task_deadline_ms=60_000)
    admin = SlowAdmin()
    coordinator = Coordinator(config, models, state, planner, RedisMarks(redis_client, redis_prefix), "c1",
                              lambda: admin)

    async def tick_while_consolidating() -> list[int]:
        fired_during: list[int] = []
        deadline = time.monotonic() + CONSOLIDATION_S + 6
        while time.monotonic() < deadline:
            before = len(publisher.sent)
            await asyncio.wait_for(coordinator.tick(), timeout=CONSOLIDATION_S + 5)
            if admin.consolidating.is_set():
                fired_during += [m.scheduled_unix for m in publisher.sent[before:]
                                 if isinstance(m, TaskRequested) and m.scheduled_unix is not None]
            await asyncio.sleep(0.2)
        return fired_during

    fired_during = asyncio.run(tick_while_consolidating())
    assert len(set(fired_during)) >= CONSOLIDATION_S - 1, fired_during


def test_a_fire_time_the_admin_tables_recorded_is_not_run_again_after_redis_was_emptied(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Redis lost the coordinator's scheduled-run marks: the durable record of runs still says the latest fire
    time ran, so recovery must not run it a second time (found by the e2e's once-per-fire-time check)."""
    hourly = "out.hourly"
    models = ModelSet({hourly: sched(hourly, schedule="0 * * * *")})
    latest = previous_fire("0 * * * *", int(time.time()))
    admin = MemoryRecord()
    admin.record_scheduled_run(ScheduledRun(hourly, latest, f"{hourly}:@{latest}", "success"))
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())  # rebuilt; the marks are gone
    publisher = Publisher()
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger,
                      publisher, Topics("t."), lambda tags: "default", model_concurrency=1, task_deadline_ms=60_000)
    coordinator = Coordinator(load_config(CONFIG), models, state, planner, RedisMarks(redis_client, redis_prefix),
                              "c1", lambda: admin)  # type: ignore[arg-type,return-value]

    asyncio.run(coordinator.tick())

    fired = [m.scheduled_unix for m in publisher.sent if isinstance(m, TaskRequested)]
    assert latest not in fired, "the fire time already ran (admin tables), and ran again"


class FencedAdmin:
    """Consolidates two models, asking the fencing check before each; another coordinator takes the leader lease
    between the two."""

    def __init__(self, take_over: Callable[[], None]) -> None:
        self.take_over = take_over
        self.written: list[str] = []

    def consolidate(self, still_allowed: Callable[[], bool]) -> list[object]:
        for model in ("out.a", "out.b"):
            if not still_allowed():
                break
            self.written.append(model)
            self.take_over()
        return []


def test_a_leader_that_lost_its_lease_writes_no_more_consolidation(redis_client: Redis, redis_prefix: str) -> None:
    config = load_config(CONFIG, environ={**os.environ, "CBT__SCHEDULER__CONSOLIDATION": "@every 1s"})
    models = ModelSet({})
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger,
                      Publisher(), Topics("t."), lambda tags: "default", model_concurrency=1, task_deadline_ms=60_000)

    def another_coordinator_takes_over() -> None:  # this one was paused past the lease's ttl
        state.leases.release(LEADER_LEASE, "c1")
        assert state.leases.acquire(LEADER_LEASE, "c2", 60_000) is not None

    admin = FencedAdmin(another_coordinator_takes_over)
    coordinator = Coordinator(config, models, state, planner, RedisMarks(redis_client, redis_prefix), "c1",
                              lambda: admin)  # type: ignore[arg-type,return-value]

    async def tick_until_consolidated() -> None:
        deadline = time.monotonic() + 5
        while not admin.written and time.monotonic() < deadline:
            await coordinator.tick()
            await asyncio.sleep(0.2)
        if coordinator.consolidation is not None:
            await coordinator.consolidation

    asyncio.run(tick_until_consolidated())
    assert admin.written == ["out.a"], "the second model was rewritten after another coordinator became leader"
