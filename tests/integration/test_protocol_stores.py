"""The coverage protocol on the real stores together — Redis for the hot index, Delta for the durable record —
driven by the real invalidation handler: the scenarios of issue 10 that lost an invalidation or coverage silently.

Each test ends the way every quiet system must: the hot index equals what a rebuild from the admin tables gives.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Iterator, Mapping, Sequence

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.delta_admin import DeltaAdmin
from cbt.adapters.redis_state import RedisState
from cbt.contract.topics import Topics
from cbt.invalidator.handler import InvalidationHandler
from cbt.models.dag import ModelSet
from cbt.models.spec import ModelId
from cbt.planning import hot_index
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CompletedInterval
from tests.integration.test_invalidator import CapturingPublisher
from tests.unit.scheduling.factories import ext, inc, models_of
from tests.unit.test_invalidation_handler import FakeSeen

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
SRC, HOURLY = "ext.blocks", "an.hourly"
MODELS = ModelSet(models_of(ext(SRC), inc(HOURLY, [SRC], imax=100)))


class Stores:
    def __init__(self, admin: DeltaAdmin, client: Redis, prefix: str) -> None:
        self.admin, self.client, self.prefix = admin, client, prefix
        self.state = RedisState(client, prefix)
        self.seen = FakeSeen()

    def handler(self) -> InvalidationHandler:
        async def no_replan(models: Collection[ModelId]) -> int:
            return 0

        handler = InvalidationHandler(MODELS, self.state.coverage, self.state.ledger, self.admin, self.seen,
                                      CapturingPublisher(), Topics("t."), no_replan, max_range=10_000,
                                      max_tasks=100_000)
        handler.index_poll_s = 0.05
        return handler

    def rebuild(self) -> None:
        hot_index.rebuild(self.admin, self.state.coverage, [HOURLY], [], built_at=1)

    def complete(self, start: int, end: int) -> None:
        """A worker's steps 3, 5 and 6: read the sequence, append the row, record it in the hot index."""
        seq = self.state.coverage.invalidation_seq(HOURLY)
        self.admin.record_completed([CompletedInterval(HOURLY, start, end - start, f"{HOURLY}:{start}",
                                                       invalidation_seq=seq)])
        assert self.state.coverage.record_completed(HOURLY, (start, end), seq)

    def empty_redis(self) -> None:
        self.client.delete(*self.client.scan_iter(match=self.prefix + "*"))

    def hot(self) -> Coverage:
        return self.state.coverage.coverage(HOURLY)

    def durable(self) -> Coverage:
        return self.admin.coverage([HOURLY])[HOURLY]

    def assert_quiet_and_consistent(self) -> None:
        """What a rebuild from the admin tables gives equals the live hot index (and the sequence stays)."""
        assert self.state.coverage.is_built()
        hot, seq = self.hot(), self.state.coverage.invalidation_seq(HOURLY)
        self.rebuild()
        assert (self.hot(), self.state.coverage.invalidation_seq(HOURLY)) == (hot, seq)


def reorg(event_id: str, start: int, end: int) -> bytes:
    return json.dumps({"id": event_id, "model": SRC, "start": start, "end": end, "reason": "reorg",
                       "source": "test"}).encode()


@pytest.fixture
def stores(spark: SparkSession, spark_database: str, redis_client: Redis, redis_prefix: str) -> Iterator[Stores]:
    admin = DeltaAdmin(spark, (spark_database, "cbt_incremental"), (spark_database, "cbt_scheduled"),
                       (spark_database, "cbt_invalidations"))
    admin.ensure_tables()
    stores = Stores(admin, redis_client, redis_prefix)
    stores.rebuild()  # the coordinator's start-up rebuild
    yield stores


def test_an_invalidation_after_redis_was_emptied_is_never_undone_by_a_rebuild(stores: Stores) -> None:
    """Scenario 1. Before: the sequence restarted at 1 after Redis was emptied, below the consolidated rows' own,
    so the admin rows were not made stale and the rebuild restored the reorged range: it never re-ran."""
    handler = stores.handler()
    for i, (start, end) in enumerate(((900, 1000), (1000, 1100), (1100, 1200))):
        asyncio.run(handler.handle(reorg(f"old-{i}", start, end)))
    for start in range(0, 800, 100):
        stores.complete(start, start + 100)
    stores.admin.consolidate()  # one row [0, 800), carrying the model's sequence 3

    stores.empty_redis()

    async def scenario() -> None:
        pending = asyncio.create_task(handler.handle(reorg("after-flush", 230, 260)))
        await asyncio.sleep(0.5)
        assert not pending.done(), "applied to an index the rebuild is about to overwrite"
        await asyncio.to_thread(stores.rebuild)
        assert await pending == "applied"

    asyncio.run(scenario())
    assert stores.durable() == stores.hot() == ((0, 200), (300, 800))
    assert stores.state.coverage.invalidation_seq(HOURLY) == 4, "the epoch continues after the loss of Redis"
    stores.assert_quiet_and_consistent()


def test_a_rebuild_racing_an_invalidation_does_not_restore_the_range(stores: Stores,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario 2 (``cbt admin rebuild-cache`` on a running system). Before: the rebuild wrote the coverage it had
    read before the invalidation, and moved the sequence back."""
    for start in range(0, 500, 100):
        stores.complete(start, start + 100)
    read_coverage = stores.admin.version_coverage  # (the rebuild's read of the durable coverage)

    def read_then_invalidation_lands(model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        covered = read_coverage(model_ids)
        if not stores.seen.ids:
            assert asyncio.run(stores.handler().handle(reorg("during-rebuild", 120, 130))) == "applied"
        return covered

    monkeypatch.setattr(stores.admin, "version_coverage", read_then_invalidation_lands)
    stores.rebuild()
    monkeypatch.undo()
    assert stores.seen.ids, "the invalidation landed while the rebuild ran"

    assert stores.hot() == stores.durable() == ((0, 100), (200, 500))
    assert stores.state.coverage.invalidation_seq(HOURLY) == 1
    stores.assert_quiet_and_consistent()


def test_consolidation_between_recording_and_applying_keeps_the_rest_of_a_row(stores: Stores,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenarios 3 and 8. Before: a consolidated row overlapping the range counted as stale whole until the range
    was removed, and a consolidation in between dropped it: the admin tables lost coverage outside the range."""
    for start in range(0, 1000, 100):
        stores.complete(start, start + 100)
    stores.admin.consolidate()  # one row [0, 1000)
    apply = stores.state.coverage.apply_invalidation

    def consolidate_then_apply(epoch: int, ranges: Mapping[ModelId, Sequence[TaskRun]]) -> None:
        stores.admin.consolidate()  # the leader's consolidation lands inside the window
        apply(epoch, ranges)

    monkeypatch.setattr(stores.state.coverage, "apply_invalidation", consolidate_then_apply)
    assert asyncio.run(stores.handler().handle(reorg("window", 450, 470))) == "applied"
    monkeypatch.undo()

    assert stores.durable() == stores.hot() == ((0, 400), (500, 1000))
    stores.assert_quiet_and_consistent()


def test_a_redelivered_invalidation_neither_moves_the_sequence_nor_repeats_its_removal(stores: Stores) -> None:
    """Scenario 4. Before: the redelivery incremented Redis's sequence again while the admin table kept the first;
    a later rebuild moved the sequence back and values were reused."""
    for start in range(0, 300, 100):
        stores.complete(start, start + 100)
    handler = stores.handler()
    assert asyncio.run(handler.handle(reorg("twice", 150, 160))) == "applied"
    stores.complete(100, 200)  # the re-run
    stores.seen.ids.clear()  # its marker lost (a crash before marking, or Redis emptied)

    assert asyncio.run(handler.handle(reorg("twice", 150, 160))) == "applied"

    assert stores.hot() == stores.durable() == ((0, 300),), "the re-run is kept"
    assert stores.state.coverage.invalidation_seq(HOURLY) == 1
    assert stores.admin.invalidation_seqs([HOURLY]) == {HOURLY: 1}
    stores.assert_quiet_and_consistent()
