"""Admission control where the services use it, on the real Spark Connect server: a worker's tasks take the
cluster's permits in priority order (forward fill and scheduled runs, then re-runs, then backfill), and every
statement on the admin tables holds one."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters import runtime
from cbt.adapters.admission import RedisPermitStore, admission_keys
from cbt.adapters.delta_admin import DeltaAdmin
from cbt.adapters.kafka_bus import make_broker
from cbt.adapters.spark import SessionPool
from cbt.base.tasks import TaskDirection
from cbt.concurrency.admission import SparkAdmission
from cbt.config.settings import Config, SparkConfig
from cbt.models.spec import Transformation
from cbt.models.templates import RenderSettings, TaskContext
from cbt.scheduling.admission import cluster_of
from cbt.state.admin_records import CompletedInterval
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.twins.memory_admission import MemoryPermitStore
from tests.unit.scheduling.factories import inc, sched

pytestmark = pytest.mark.integration


class RecordingStore(MemoryPermitStore):
    """Remembers the order permits were granted in (by the request's name)."""

    def __init__(self) -> None:
        super().__init__()
        self.granted: list[str] = []

    def attempt(self, member: str, score: int, ttl_ms: int, waiter_ttl_ms: int, limit: int) -> tuple[bool, int]:
        is_granted, rank = super().attempt(member, score, ttl_ms, waiter_ttl_ms, limit)
        if is_granted and member not in self.granted:
            self.granted.append(member)
        return is_granted, rank


@pytest.fixture
def sessions(endpoints: Endpoints) -> Iterator[SessionPool]:
    pool = SessionPool(endpoints.spark_remote)
    yield pool
    pool.close()


def task(model: Transformation, direction: TaskDirection = "forward") -> TaskContext:
    if model.id.endswith("scheduled"):
        return TaskContext(model_id=model.id, task_start_unix=1_700_000_000, direction=direction)
    return TaskContext(model_id=model.id, task_start_unix=int(time.time()), start=0, end=60, direction=direction)


def test_a_worker_s_waiting_tasks_take_permits_freshness_first(sessions: SessionPool) -> None:
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=4, admission=worker)
    arrivals: list[tuple[Transformation, TaskDirection]] = [
        (replace(inc("an.backfilled", imax=60), sql="SELECT 1"), "backfill"),
        (replace(inc("an.rerun", imax=60), sql="SELECT 1"), "rerun"),
        (replace(inc("an.forward", imax=60), sql="SELECT 1"), "forward"),
        (replace(sched("an.scheduled"), sql="SELECT 1"), "forward")]
    for model, _ in arrivals:
        sessions.session(model.id)

    async def scenario() -> None:
        async with other.held("admin", "busy"):  # the cluster's only permit is taken: every task queues
            running = []
            for model, direction in arrivals:
                running.append(asyncio.create_task(executor.run(model, task(model, direction))))
                while store.status().waiting < len(running):
                    await asyncio.sleep(0.005)
                await asyncio.sleep(0.002)  # a later millisecond for the next arrival
        await asyncio.gather(*running)

    asyncio.run(scenario())
    worker.close()
    other.close()
    order = [member.split("/", 2)[2] for member in store.granted if member.startswith("worker/")]
    assert order == ["an.forward:0:60", "an.scheduled:@1700000000", "an.rerun:0:60", "an.backfilled:0:60"]


def test_a_task_of_a_model_in_a_chain_goes_ahead_of_a_leaf_queued_just_before(
        sessions: SessionPool) -> None:
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    leaf, chain = replace(inc("an.leaf", imax=60), sql="SELECT 1"), replace(inc("an.chain", imax=60), sql="SELECT 1")
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=4, admission=worker,
                             lead_levels={chain.id: 1, leaf.id: 0}, feeding=frozenset({chain.id}))
    sessions.session(leaf.id)
    sessions.session(chain.id)

    async def scenario() -> None:
        async with other.held("admin", "busy"):
            running = [asyncio.create_task(executor.run(leaf, task(leaf)))]
            while store.status().waiting < 1:
                await asyncio.sleep(0.005)
            running.append(asyncio.create_task(executor.run(chain, task(chain))))
            while store.status().waiting < 2:
                await asyncio.sleep(0.005)
        await asyncio.gather(*running)

    asyncio.run(scenario())
    worker.close()
    other.close()
    assert [m.split("/", 2)[2] for m in store.granted if m.startswith("worker/")] == ["an.chain:0:60", "an.leaf:0:60"]


def test_a_forward_task_of_a_dependent_takes_the_permit_its_parent_s_task_hands_on(sessions: SessionPool) -> None:
    """The chain's levels run back to back: the permit a finished forward task hands on goes to its dependent's
    task, ahead of a leaf that ranks first in the queue."""
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    parent, child = (replace(inc(name, imax=60), sql="SELECT 1") for name in ("an.parent", "an.child"))
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=4, admission=worker,
                             feeding=frozenset({parent.id}), parents={child.id: frozenset({parent.id})})
    sessions.session(parent.id)
    sessions.session(child.id)

    moments: dict[str, float] = {}

    async def leaf() -> None:
        async with other.held("forward", "leaf", lead_levels=6):  # ranks first in the queue
            moments["leaf began"] = time.monotonic()

    async def scenario() -> None:
        await executor.run(parent, task(parent))  # its permit is handed on now
        leaf_waiting = asyncio.create_task(leaf())
        while store.status().waiting < 1:
            await asyncio.sleep(0.005)
        await executor.run(child, task(child))
        moments["child done"] = time.monotonic()
        await leaf_waiting

    asyncio.run(scenario())
    worker.close()
    other.close()
    assert moments["child done"] < moments["leaf began"]


def test_the_model_s_next_forward_task_takes_the_permit_its_previous_one_hands_on(sessions: SessionPool) -> None:
    """The head's two tasks of one model (a full interval and the partial one after it) run back to back: the next
    level may be waiting for either."""
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    model = replace(inc("an.head", imax=60), sql="SELECT 1")
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=4, admission=worker,
                             feeding=frozenset({model.id}))
    sessions.session(model.id)
    moments: dict[str, float] = {}

    async def leaf() -> None:
        async with other.held("forward", "leaf", lead_levels=6):
            moments["leaf began"] = time.monotonic()

    async def scenario() -> None:
        await executor.run(model, task(model))
        leaf_waiting = asyncio.create_task(leaf())
        while store.status().waiting < 1:
            await asyncio.sleep(0.005)
        await executor.run(model, replace(task(model), start=60, end=90))
        moments["next done"] = time.monotonic()
        await leaf_waiting

    asyncio.run(scenario())
    worker.close()
    other.close()
    assert moments["next done"] < moments["leaf began"]


def test_the_dependent_takes_the_handed_on_permit_while_every_slot_is_taken(sessions: SessionPool) -> None:
    """bench (h): the worker's slots were all held by tasks waiting for the permit, so the chain's next level could
    not even ask for the permit its parent handed on."""
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    parent, child, leaf = (replace(inc(name, imax=60), sql="SELECT 1") for name in ("an.up", "an.down", "an.beside"))
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=1, admission=worker,
                             feeding=frozenset({parent.id}), parents={child.id: frozenset({parent.id})})
    for model in (parent, child, leaf):
        sessions.session(model.id)
    done: dict[str, float] = {}

    async def run(model: Transformation) -> None:
        await executor.run(model, task(model))
        done[model.id] = time.monotonic()

    async def scenario() -> None:
        async with other.held("admin", "busy"):
            parent_run = asyncio.create_task(run(parent))  # the only slot, waiting for the permit
            while store.status().waiting < 1:
                await asyncio.sleep(0.005)
            leaf_run = asyncio.create_task(run(leaf))  # waits for the slot
            await asyncio.sleep(0.05)
        await parent_run  # handing its permit on; the leaf has the slot now and waits for a permit
        await run(child)
        await leaf_run

    asyncio.run(scenario())
    worker.close()
    other.close()
    assert done[child.id] < done[leaf.id]


def test_a_forward_task_goes_ahead_of_its_own_model_s_backfill_waiting_for_a_permit(
        sessions: SessionPool) -> None:
    """bench (h): a model's backfill task waiting for the permit held the model's lock in the worker, so the forward
    task that arrived next could not even queue, and the chain's next level waited behind history."""
    store = RecordingStore()
    worker, other = SparkAdmission(store, 1, "worker"), SparkAdmission(store, 1, "other")
    model = replace(inc("an.chained", imax=60), sql="SELECT 1")
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, slots=4, admission=worker)
    sessions.session(model.id)
    history = replace(task(model, "backfill"), start=0, end=60)
    fresh = replace(task(model, "forward"), start=60, end=120)

    async def queued(n: int) -> None:
        deadline = time.monotonic() + 2.0
        while store.status().waiting < n and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    async def scenario() -> None:
        async with other.held("admin", "busy"):
            running = [asyncio.create_task(executor.run(model, history))]
            await queued(1)
            running.append(asyncio.create_task(executor.run(model, fresh)))
            await queued(2)
        await asyncio.gather(*running)

    asyncio.run(scenario())
    worker.close()
    other.close()
    assert [m.split("/", 2)[2] for m in store.granted if m.startswith("worker/")] == [
        "an.chained:60:60", "an.chained:0:60"]


def test_every_admin_table_statement_holds_a_permit(spark: SparkSession, spark_database: str) -> None:
    entered: list[int] = []

    @contextlib.contextmanager
    def permit() -> Iterator[None]:
        entered.append(1)
        yield

    admin = DeltaAdmin(spark, (spark_database, "cbt_incremental"), (spark_database, "cbt_scheduled"),
                       (spark_database, "cbt_invalidations"), permit=permit)
    admin.ensure_tables()
    assert entered, "creating the tables ran outside the permit"
    before = len(entered)
    admin.record_completed([CompletedInterval(model="db.m", position=0, interval=10, task_id="db.m:0:10",
                                              direction="forward", invalidation_seq=0, worker="w", duration_ms=1)])
    assert len(entered) == before + 1
    assert admin.coverage(["db.m"]) == {"db.m": ((0, 10),)}
    assert len(entered) == before + 2


def note(config: Config, client: Redis) -> str | None:
    async def ask() -> str | None:
        return await runtime.spark_admission(config, client)()

    return asyncio.run(ask())


def test_readyz_notes_how_busy_the_cluster_is(endpoints: Endpoints) -> None:
    remote = f"sc://admission-{uuid.uuid4().hex[:8]}:15002"
    config = Config(spark=SparkConfig(remote=remote, max_concurrent_statements=3))
    client = Redis.from_url(endpoints.redis_url)
    holder = SparkAdmission(RedisPermitStore(client, cluster_of(remote)), 3, "holder")
    try:
        assert note(config, client) == "limit not decided yet, 0 executing, 0 waiting"
        with holder.held_sync("forward", "task"):
            assert note(config, client) == "limit 3, 1 executing, 0 waiting"
        assert note(Config(spark=SparkConfig(remote=remote, max_concurrent_statements="off")), client) == "off"
        assert "spark_admission" in runtime.dependency_checks(config, client, make_broker(config.kafka, "t"))
    finally:
        holder.close()
        client.delete(*admission_keys(cluster_of(remote)))
        client.close()


def test_a_bounds_scan_holds_a_permit_while_its_query_runs(sessions: SessionPool) -> None:
    from cbt.bounds_cache.query import SparkBoundsQuery
    from cbt.models.templates import ScanContext
    from tests.unit.scheduling.factories import ext

    store = RecordingStore()
    admission = SparkAdmission(store, 1, f"bc-{uuid.uuid4().hex[:6]}")
    held_while_running: list[int] = []

    class Watched(SparkBoundsQuery):
        @staticmethod
        def _scan_sql(spark: SparkSession, model: object, statements: list[str]) -> object:  # type: ignore[override]
            held_while_running.append(store.status().executing)
            return SparkBoundsQuery._scan_sql(spark, model, statements)  # type: ignore[arg-type]

    model = replace(ext("db.source"), sql="SELECT 10 AS min, 20 AS max")
    query = Watched(sessions, RenderSettings(), admission=admission)
    try:
        result = asyncio.run(query.scan(model, ScanContext(False, None, None)))
    finally:
        admission.close()
    assert (result.min, result.max) == (10, 20)
    assert held_while_running == [1], "the bounds query ran without a permit"
    assert len(store.granted) == 1 and store.status().executing == 0
