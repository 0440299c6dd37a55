"""The coordinator's enqueueing: a task is claimed before it is published, and a claim never outlives a crash
between the two for longer than the publish grace."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

import pytest

from cbt.contract.messages import Message, TaskRequested
from cbt.contract.topics import Topics
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import PUBLISH_GRACE_MS, Planner
from cbt.scheduling.batching import BatchSizer
from cbt.scheduling.snapshot import RawBounds
from cbt.state.ports import HeldInterval
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext, inc

SRC, MODEL = "src.blocks", "out.minute"
DEADLINE_MS = 3_600_000


@dataclass
class Publisher:
    mode: str = "ok"
    """``ok``, ``fail`` (the broker refuses) or ``hang`` (the process dies before the broker answers)."""
    sent: list[Message] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        if self.mode == "fail":
            raise RuntimeError("broker unavailable")
        if self.mode == "hang":
            await asyncio.Event().wait()
        self.sent.append(message)


def make_planner(publisher: Publisher) -> tuple[Planner, MemoryState]:
    state = MemoryState()
    state.bounds.put_bounds(SRC, RawBounds(0, 60))
    models = ModelSet({SRC: ext(SRC), MODEL: inc(MODEL, [SRC], imax=60)})
    reader = LiveStateReader.of(models, state)
    planner = Planner(models, reader, state.ledger, publisher, Topics("t."), lambda tags: "default",
                      model_concurrency=4, task_deadline_ms=DEADLINE_MS)
    return planner, state


def in_flight_at(state: MemoryState, offset_ms: int) -> tuple[str, ...]:
    now_ms = int(time.time() * 1000) + offset_ms
    return tuple(t.task_id for t in state.ledger.in_flight([MODEL], now_ms)[MODEL])


def test_a_published_task_is_claimed_for_its_whole_deadline() -> None:
    publisher = Publisher()
    planner, state = make_planner(publisher)
    assert asyncio.run(planner.replan([MODEL])) == 1
    (task,) = publisher.sent
    assert isinstance(task, TaskRequested)
    assert in_flight_at(state, PUBLISH_GRACE_MS + 60_000) == (task.task_id,)
    assert asyncio.run(planner.replan([MODEL])) == 0, "claimed: never enqueued twice"


def test_a_claim_whose_publish_never_finished_expires_after_the_grace() -> None:
    planner, state = make_planner(Publisher(mode="hang"))

    async def dies_while_publishing() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(planner.replan([MODEL]), 0.05)

    asyncio.run(dies_while_publishing())
    assert in_flight_at(state, 0) == (f"{MODEL}:0:60",), "blocks its interval meanwhile"
    assert in_flight_at(state, PUBLISH_GRACE_MS + 1_000) == (), "not for the whole task deadline"


def test_a_refused_publish_releases_the_claim_at_once() -> None:
    planner, state = make_planner(Publisher(mode="fail"))
    with pytest.raises(RuntimeError):
        asyncio.run(planner.replan([MODEL]))
    assert in_flight_at(state, 0) == ()


@dataclass
class AckedTogether(Publisher):
    """A broker that acknowledges nothing until ``batch`` publishes are in flight: one publish at a time never
    gets an answer. The ``refused`` task's publish fails."""

    batch: int = 3
    refused: str = ""
    waiting: int = 0
    all_in_flight: asyncio.Event = field(default_factory=asyncio.Event)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.waiting += 1
        if self.waiting >= self.batch:
            self.all_in_flight.set()
        await asyncio.wait_for(self.all_in_flight.wait(), 1.0)
        if key == self.refused:
            raise RuntimeError("broker refused one")
        self.sent.append(message)


def test_a_ticks_tasks_are_published_together_and_one_refused_leaves_the_others_published() -> None:
    """Waiting for each broker ack before the next publish made a recovery tick of 29k tasks take 20 s."""
    publisher = AckedTogether(refused=f"{MODEL}:60:60")
    planner, state = make_planner(publisher)
    state.bounds.put_bounds(SRC, RawBounds(0, 180))

    async def replan() -> int:
        return await planner.replan([MODEL], directions=("forward",))

    with pytest.raises(RuntimeError, match="refused"):
        asyncio.run(replan())
    assert sorted(m.task_id for m in publisher.sent if isinstance(m, TaskRequested)) == [
        f"{MODEL}:0:60", f"{MODEL}:120:60"]
    assert in_flight_at(state, PUBLISH_GRACE_MS + 60_000) == (f"{MODEL}:0:60", f"{MODEL}:120:60")


def test_a_model_that_cannot_be_planned_holds_up_no_other() -> None:
    """A tick plans every due model in one pass: one model's planning error must not stop the others' tasks."""
    publisher = Publisher()
    planner, _ = make_planner(publisher)
    broken = "out.broken"

    class Unsizable(BatchSizer):
        def size(self, model: IncrementalModel) -> int:
            if model.id == broken:
                raise ValueError("a value this model chokes on")
            return super().size(model)

    models = ModelSet({SRC: ext(SRC), broken: inc(broken, [SRC], imax=60), MODEL: inc(MODEL, [SRC], imax=60)})
    planner = replace(planner, models=models, reader=replace(planner.reader, models=models), batch=Unsizable())
    with pytest.raises(ValueError, match="chokes"):
        asyncio.run(planner.replan([broken, MODEL]))
    assert [m.task_id for m in publisher.sent if isinstance(m, TaskRequested)] == [f"{MODEL}:0:60"]


def test_a_replan_reads_the_sources_upstream_of_its_models() -> None:
    """Planning ``an.top`` alone (a cascade) needs the source two levels up: its scanned minimum says ``an.up`` still
    fills backward, so ``an.top``'s short leading gap waits instead of being re-run widened over covered positions."""
    publisher, state = Publisher(), MemoryState()
    state.bounds.put_bounds(SRC, RawBounds(1000, 4000))
    up = inc("an.up", [SRC], imax=300, direction="head")
    top = inc("an.top", ["an.up"], imax=900, direction="head")
    state.coverage.record_completed(up.id, (2800, 4000), 0, None)
    state.coverage.record_completed(top.id, (3100, 4000), 0, None)
    models = ModelSet({SRC: ext(SRC), up.id: up, top.id: top})
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger, publisher, Topics("t."),
                      lambda tags: "default", model_concurrency=4, task_deadline_ms=DEADLINE_MS)
    assert asyncio.run(planner.replan([top.id])) == 0
    assert publisher.sent == []


def test_an_interval_a_failed_check_holds_is_not_planned_until_released_or_its_version_changes() -> None:
    publisher = Publisher()
    planner, state = make_planner(publisher)
    state.holds.hold(MODEL, [HeldInterval(0, 60, "v1", "check not_null_a failed: 1 violating row")])
    state.coverage.announce_versions({MODEL: "v1"})
    assert asyncio.run(planner.replan([MODEL])) == 0, "held in the deployed version"

    state.coverage.announce_versions({MODEL: "v2"})
    assert asyncio.run(planner.replan([MODEL])) == 1, "a new version computes it again"

    state.ledger.release(MODEL, f"{MODEL}:0:60")
    state.coverage.announce_versions({MODEL: "v1"})
    assert asyncio.run(planner.replan([MODEL])) == 0
    state.holds.release(MODEL, (30, 31))
    assert asyncio.run(planner.replan([MODEL])) == 1, "released (an invalidation over it)"
