"""The invalidator's use case over the in-memory state ports: rejects, deduplicates, applies in order, re-plans."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest

from cbt.contract.messages import Invalidation, InvalidationRejected, Message
from cbt.contract.topics import Topics
from cbt.invalidator.app import follow_builds
from cbt.invalidator.handler import InvalidationHandler
from cbt.invalidator.history import prune_history
from cbt.models.builds import Build, with_builds
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion
from cbt.models.spec import IncrementalModel, ModelId
from cbt.models.stored import definition_document
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CompletedInterval, InvalidationRecord
from cbt.state.ports import HeldInterval, InFlightTask
from tests.twins.memory_record import MemoryRecord
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext, inc, models_of

TOPICS = Topics("t.")
MODELS = ModelSet(models_of(ext("ext.blocks"), inc("an.minute", ["ext.blocks"], imax=60),
                            inc("an.two", ["an.minute"], imax=120)))


class FlakyRecord(MemoryRecord):
    """The durable record's twin, whose writes can be made to fail (Spark Connect down)."""

    def __init__(self) -> None:
        super().__init__()
        self.is_down = False

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        if self.is_down:
            raise RuntimeError("spark is down")
        return super().record_invalidation(record)


@dataclass
class FakeSeen:
    ids: set[str] = field(default_factory=set)

    def is_seen(self, event_id: str) -> bool:
        return event_id in self.ids

    def mark_seen(self, event_id: str) -> None:
        self.ids.add(event_id)


@dataclass
class FakePublisher:
    sent: list[tuple[str, Message]] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append((topic, message))


@dataclass
class Rig:
    state: MemoryState = field(default_factory=MemoryState)
    admin: FlakyRecord = field(default_factory=FlakyRecord)
    seen: FakeSeen = field(default_factory=FakeSeen)
    publisher: FakePublisher = field(default_factory=FakePublisher)
    replanned: list[list[ModelId]] = field(default_factory=list)

    async def replan(self, model_ids: Collection[ModelId]) -> int:
        self.replanned.append(list(model_ids))
        return 0

    def complete(self, model: ModelId, rng: tuple[int, int], step: int) -> None:
        """A worker's completion of tasks of ``step`` over ``rng``: durable row first, then the hot index."""
        self.admin.record_completed([CompletedInterval(model, rng[0], rng[1] - rng[0], f"{model}:{rng[0]}",
                                                       task_interval=step)])
        self.state.coverage.record_completed(model, rng, 0)

    def handler(self) -> InvalidationHandler:
        return InvalidationHandler(MODELS, self.state.coverage, self.state.ledger, self.admin, self.seen,
                                   self.publisher, TOPICS, self.replan, max_range=10_000, max_tasks=100_000,
                                   holds=self.state.holds)

    def rejected(self) -> list[InvalidationRejected]:
        return [m for t, m in self.publisher.sent if t == TOPICS.invalidation_rejected
                and isinstance(m, InvalidationRejected)]


def good(event_id: str = "e1", **changes: object) -> bytes:
    fields: dict[str, object] = {"id": event_id, "model": "ext.blocks", "start": 130, "end": 150, "reason": "reorg",
                                 "source": "test", **changes}
    return json.dumps(fields).encode()


def test_an_invalidation_releases_the_intervals_failed_checks_held_over_its_range_in_its_reach() -> None:
    rig = Rig()
    rig.state.holds.hold("an.minute", [HeldInterval(120, 180, "v", "check failed"),
                                       HeldInterval(300, 360, "v", "check failed")])
    rig.state.holds.hold("an.two", [HeldInterval(120, 240, "v", "check failed")])

    assert asyncio.run(rig.handler().handle(good())) == "applied"

    assert rig.state.holds.held(["an.minute", "an.two"]) == {
        "an.minute": (HeldInterval(300, 360, "v", "check failed"),)}, "held over [130, 150) in the model or below"
    assert asyncio.run(rig.handler().handle(good("e2", model="an.minute", start=300, end=301, cascade=False))) \
        == "applied"
    assert rig.state.holds.held(["an.minute"]) == {}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"{oops", "Invalid JSON", id="invalid-json"),
        pytest.param(good(start="130"), "start:", id="wrong-type"),
        pytest.param(good(end=130), "end must be greater than start", id="end-not-after-start"),
        pytest.param(good(model="ext.nope"), "model: no model 'ext.nope'", id="unknown-model"),
        pytest.param(good(start=0, end=10_001), "invalidator.max_range", id="absurdly-large-range"),
        pytest.param(good(extra=1), "extra:", id="unknown-field"),
    ],
)
def test_bad_events_are_published_as_rejected_with_the_reason_and_change_nothing(raw: bytes, reason: str) -> None:
    rig = Rig()
    rig.state.coverage.record_completed("an.minute", (0, 600), 0)
    handler = rig.handler()

    assert asyncio.run(handler.handle(raw)) == "rejected"

    (rejected,) = rig.rejected()
    assert reason in rejected.reason
    assert rejected.raw == raw.decode()
    assert handler.counts["rejected"] == 1
    assert rig.state.coverage.coverage("an.minute") == ((0, 600),)
    assert not rig.admin.invalidations and not rig.replanned


def test_an_event_that_could_re_run_more_tasks_than_the_limit_is_rejected_before_anything_is_read() -> None:
    rig = Rig()
    rig.complete("an.minute", (0, 6000), 60)
    handler = replace(rig.handler(), max_tasks=50)

    assert asyncio.run(handler.handle(good(start=0, end=6000))) == "rejected"

    (rejected,) = rig.rejected()
    assert "more than invalidator.max_tasks (50)" in rejected.reason
    assert rig.state.coverage.coverage("an.minute") == ((0, 6000),) and not rig.admin.invalidations


def test_rejection_carries_the_id_when_the_body_has_one() -> None:
    rig = Rig()
    asyncio.run(rig.handler().handle(good("bad-1", end=1)))
    assert rig.rejected()[0].id == "bad-1"


def test_good_event_removes_coverage_with_cascade_records_it_and_replans() -> None:
    rig = Rig()
    rig.complete("an.minute", (0, 600), 60)
    rig.complete("an.two", (0, 600), 120)

    assert asyncio.run(rig.handler().handle(good())) == "applied"

    assert rig.state.coverage.coverage("an.minute") == ((0, 120), (180, 600))
    assert rig.state.coverage.coverage("an.two") == ((0, 120), (240, 600))
    assert rig.state.coverage.reruns(["an.minute", "an.two"]) == {"an.minute": ((120, 180),),
                                                                 "an.two": ((120, 240),)}
    record = rig.admin.invalidations["e1"]
    assert dict(record.affected) == {"an.minute": (TaskRun(120, 180, 60),), "an.two": (TaskRun(120, 240, 120),)}
    assert dict(record.seqs) == {"an.minute": 1, "an.two": 1}
    assert (record.model, record.start, record.end, record.reason) == ("ext.blocks", 130, 150, "reorg")
    assert rig.state.coverage.invalidation_seq("an.two") == 1
    assert rig.replanned == [["an.minute", "an.two"]]
    assert rig.seen.ids == {"e1"}


def test_an_invalidation_during_a_build_reaches_the_build_too() -> None:
    """Issue 36: upstream rows changed while ``an.two``'s new version is built; the build holds that range too."""
    rig = Rig()
    live, files = MODELS.get("an.two"), replace(inc("an.two", ["an.minute"], imax=120), sql="SELECT 2")
    assert isinstance(live, IncrementalModel)
    running = with_builds(MODELS, {"an.two": Build("an.two", 2, live, files, "old", "new")})
    rig.complete("an.minute", (0, 600), 60)
    rig.complete("an.two", (0, 600), 120)
    rig.complete("an.two__cbt_v2", (0, 600), 120)

    assert asyncio.run(replace(rig.handler(), models=running).handle(good())) == "applied"

    assert rig.state.coverage.coverage("an.two__cbt_v2") == ((0, 120), (240, 600))
    assert rig.state.coverage.coverage("an.two") == ((0, 120), (240, 600)), "and the live version, as before"


def test_the_invalidator_takes_up_the_builds_the_versions_record_holds() -> None:
    rig = Rig()
    handler = rig.handler()
    planner = SimpleNamespace(models=MODELS, reader=None)
    live = MODELS.get("an.two")
    assert isinstance(live, IncrementalModel)
    record = [DeployedVersion("an.two", 1, "h1", "m", {}, spec=definition_document(live)),
              DeployedVersion("an.two", 2, "h2", "m", {}, deployed_ms=5, spec=definition_document(
                  replace(live, sql="SELECT 2")), state="building", build_table="an.two__cbt_v2")]

    asyncio.run(follow_builds(MODELS, lambda: record, handler, planner, rig.state))  # type: ignore[arg-type]

    assert "an.two__cbt_v2" in handler.models and planner.models is handler.models
    asyncio.run(follow_builds(MODELS, lambda: record[:1], handler, planner, rig.state))  # type: ignore[arg-type]
    assert "an.two__cbt_v2" not in handler.models, "after the switch"


def test_the_tasks_that_ran_are_re_run_whatever_their_offset() -> None:
    """Scenario 10: tasks ran at offsets of their own (forward fill starts where the data started), not on a grid."""
    rig = Rig()
    rig.complete("an.minute", (17, 617), 60)
    rig.complete("an.two", (17, 257), 120)
    rig.complete("an.two", (257, 317), 60)  # a short forward task at the head

    assert asyncio.run(rig.handler().handle(good(start=140, end=260))) == "applied"

    assert rig.admin.invalidations["e1"].affected == {
        "an.minute": (TaskRun(137, 317, 60),),  # three tasks of 60, stored as one run
        "an.two": (TaskRun(137, 257, 120), TaskRun(257, 317, 60)),
    }
    assert rig.state.coverage.coverage("an.two") == ((17, 137),)


def test_a_table_name_is_resolved_to_the_model_id() -> None:
    rig = Rig()
    asyncio.run(rig.handler().handle(good(model="blocks")))
    assert rig.admin.invalidations["e1"].model == "ext.blocks"


def test_duplicate_id_is_applied_once() -> None:
    rig = Rig()
    handler = rig.handler()
    outcomes = [asyncio.run(handler.handle(good())) for _ in range(3)]
    assert outcomes == ["applied", "duplicate", "duplicate"]
    assert rig.state.coverage.invalidation_seq("an.minute") == 1
    assert handler.counts == {"applied": 1, "duplicate": 2}


def test_infrastructure_failure_raises_for_redelivery_and_the_redelivery_applies() -> None:
    rig = Rig()
    rig.complete("an.minute", (0, 600), 60)
    rig.admin.is_down = True
    handler = rig.handler()
    with pytest.raises(RuntimeError, match="spark is down"):
        asyncio.run(handler.handle(good()))
    assert not rig.seen.ids, "not marked done: the event must come again"
    assert rig.state.coverage.coverage("an.minute") == ((0, 600),), "recorded durably before Redis is touched"

    rig.admin.is_down = False
    assert asyncio.run(handler.handle(good())) == "applied"
    assert rig.state.coverage.coverage("an.minute") == ((0, 120), (180, 600))
    assert len(rig.admin.invalidations) == 1


def test_a_redelivered_event_keeps_its_first_epoch_and_ranges() -> None:
    """Scenario 4: the seen-marker was lost (Redis emptied and rebuilt, or a crash before marking), so the event is
    handled again: the sequence must not move, and re-runs done since must not be removed again."""
    rig = Rig()
    rig.complete("an.minute", (0, 600), 60)
    handler = rig.handler()
    assert asyncio.run(handler.handle(good())) == "applied"
    seq = rig.state.coverage.invalidation_seq("an.minute")
    assert rig.state.coverage.record_completed("an.minute", (120, 180), seq), "the re-run of the range"

    rig.seen.ids.clear()
    rig.state.ledger.claim("an.minute", InFlightTask("an.minute:180:60", (180, 240), 2**62))  # would widen it
    assert asyncio.run(handler.handle(good())) == "applied"

    assert rig.state.coverage.invalidation_seq("an.minute") == seq == 1
    assert rig.admin.invalidation_seqs(["an.minute"]) == {"an.minute": 1}
    assert rig.state.coverage.coverage("an.minute") == ((0, 600),), "the re-run stays; nothing else was removed"


def test_events_wait_while_the_hot_index_is_rebuilt() -> None:
    """Scenario 1: Redis emptied. Applying now would work on an index the coming rebuild overwrites."""
    rig = Rig(state=MemoryState(built=False))
    handler = rig.handler()
    handler.index_poll_s = 0.01

    async def scenario() -> str:
        pending = asyncio.create_task(handler.handle(good()))
        await asyncio.sleep(0.1)
        assert not pending.done() and not rig.admin.invalidations, "applied before the index was rebuilt"
        rig.state.coverage.mark_built(0, rig.state.coverage.generation())
        return await pending

    assert asyncio.run(scenario()) == "applied"


def test_in_flight_task_overlapping_the_range_cannot_record_its_completion() -> None:
    rig = Rig()
    rig.complete("an.minute", (0, 100), 100)
    observed = rig.state.coverage.invalidation_seq("an.minute")
    rig.state.ledger.claim("an.minute", InFlightTask("an.minute:100:70", (100, 170), 2**62))

    asyncio.run(rig.handler().handle(good()))

    assert not rig.state.coverage.record_completed("an.minute", (100, 170), observed)
    affected = rig.admin.invalidations["e1"].affected
    assert affected["an.minute"] == (TaskRun(100, 170, 70),), "[0, 100) ran, but not over it"


def test_no_cascade_on_an_external_model_is_recorded_and_removes_nothing() -> None:
    rig = Rig()
    rig.state.coverage.record_completed("an.minute", (0, 600), 0)
    asyncio.run(rig.handler().handle(good(cascade=False)))
    assert rig.state.coverage.coverage("an.minute") == ((0, 600),)
    assert rig.admin.invalidations["e1"].affected == {}


def test_event_built_by_the_message_class_is_accepted() -> None:
    rig = Rig()
    raw = Invalidation(id="m1", model="an.minute", start=0, end=60, reason="manual", source="cbt-cli").encode()
    assert asyncio.run(rig.handler().handle(raw)) == "applied"


def test_a_wide_event_is_recorded_and_applied_as_one_run_per_model() -> None:
    """5,000 one-minute tasks: one run in the record, one member in the re-runs; each task still re-runs whole."""
    rig = Rig()
    rig.complete("an.minute", (0, 300_000), 60)
    handler = replace(rig.handler(), max_range=10**6)

    assert asyncio.run(handler.handle(good(model="an.minute", start=0, end=300_000, cascade=False))) == "applied"

    assert rig.admin.invalidations["e1"].affected == {"an.minute": (TaskRun(0, 300_000, 60),)}
    pending = rig.state.coverage.reruns(["an.minute"])["an.minute"]
    assert (len(pending), pending[0], pending[-1]) == (5_000, (0, 60), (299_940, 300_000))


def test_pruning_the_history_deletes_what_changes_nothing_and_forgets_its_marks() -> None:
    rig = Rig()
    rig.complete("an.minute", (0, 600), 60)
    asyncio.run(rig.handler().handle(good("e1", model="an.minute", start=130, end=150, cascade=False)))
    asyncio.run(rig.handler().handle(good("e2", model="an.minute", start=430, end=450, cascade=False)))
    now_ms = max(r.received_at_ms for r in rig.admin.invalidations.values()) + 1

    assert prune_history(rig.admin, rig.state.coverage, retention_s=0, now_ms=now_ms) == 0, "stale rows still hidden"
    rig.complete("an.minute", (120, 180), 60)  # e1's re-run (it read sequence 0: refused by the hot index)
    rig.admin.rows = [replace(r, invalidation_seq=2) for r in rig.admin.rows]  # as consolidation leaves them
    assert prune_history(rig.admin, rig.state.coverage, retention_s=0, now_ms=now_ms) == 1

    assert set(rig.admin.invalidations) == {"e2"}, "e2 is the newest: kept"
    assert rig.state.coverage.record_completed("an.minute", (0, 60), 0) is False, "older than the pruned epoch"
