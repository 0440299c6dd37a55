"""Done when: three workers on one Spark never have more statements executing than the limit, counted on the server's
side (its SQL executions, from the application's REST API) — and without admission control they would.

Three ``SparkExecutor``s (the workers' executors, each with its own sessions, Redis connection and admission handle)
and an admin-record writer share a Spark Connect server of the test's own (``local[*]``, its UI on). Every statement
only sleeps on the server, so the machine's two cores are not what limits it: only admission control does.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest
from redis import Redis

from cbt.adapters.admission import RedisPermitStore, admission_keys
from cbt.adapters.spark import SessionPool
from cbt.base.tasks import TaskDirection
from cbt.concurrency.admission import SparkAdmission
from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.scheduling.admission import cluster_of
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.e2e.measured_spark import Execution, MeasuredSpark, during, most_at_once
from tests.unit.scheduling.factories import inc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
LIMIT = 2
WORKERS, MODELS_PER_WORKER, TASKS_PER_MODEL, ADMIN_WRITES = 3, 4, 2, 3
SLEEP_MS = 600
STATEMENT = f"SELECT reflect('java.lang.Thread', 'sleep', {SLEEP_MS}L) AS slept"


@pytest.fixture(scope="module")
def measured_spark() -> Iterator[MeasuredSpark]:
    spark = MeasuredSpark.create()
    try:
        spark.start()
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def cluster(measured_spark: MeasuredSpark, endpoints: Endpoints) -> Iterator[str]:
    name = cluster_of(measured_spark.remote)
    yield name
    client = Redis.from_url(endpoints.redis_url)
    client.delete(*admission_keys(name))
    client.close()


def models(worker: int) -> list[IncrementalModel]:
    return [replace(inc(f"w{worker}.m{n}", imax=60), sql=STATEMENT) for n in range(MODELS_PER_WORKER)]


def tasks(model: IncrementalModel, directions: Iterator[TaskDirection]) -> list[TaskContext]:
    return [TaskContext(model_id=model.id, task_start_unix=int(time.time()), start=k * 60, end=(k + 1) * 60,
                        direction=next(directions)) for k in range(TASKS_PER_MODEL)]


def run_pipeline(remote: str, redis_url: str, cluster: str, is_admitted: bool) -> tuple[int, int]:
    """Every worker runs every task of its models at once (up to its 4 slots) while an admin writer records; returns
    the wall-clock window ``[start_ms, end_ms)`` of the run."""
    handles = [SparkAdmission(RedisPermitStore(Redis.from_url(redis_url), cluster), LIMIT, f"worker-{w}")
               for w in range(WORKERS + 1)] if is_admitted else []
    pools = [SessionPool(remote) for _ in range(WORKERS + 1)]
    directions: Iterator[TaskDirection] = itertools.cycle(("forward", "backfill", "rerun"))
    work = [(w, model, task) for w in range(WORKERS) for model in models(w) for task in tasks(model, directions)]
    for w, model, _ in work:  # sessions made beforehand: only statements run in the measured window
        pools[w].session(model.id)
    admin_session = pools[WORKERS].session("admin")
    executors = [SparkExecutor(pools[w], RenderSettings(), exec_timeout_s=60, slots=4,
                               admission=handles[w] if is_admitted else None) for w in range(WORKERS)]

    def admin_writer() -> None:
        for _ in range(ADMIN_WRITES):
            if is_admitted:
                with handles[WORKERS].held_sync("admin", "admin record"):
                    admin_session.sql(STATEMENT).collect()
            else:
                admin_session.sql(STATEMENT).collect()

    async def everything() -> None:
        # Sized as a worker sizes it (``cbt.worker.app``): the default (cores + 4) would cap the run at 6 statements.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(4 * 4 * WORKERS + 16))
        writer = asyncio.create_task(asyncio.to_thread(admin_writer))
        await asyncio.gather(*(executors[w].run(model, task) for w, model, task in work), writer)

    began_ms = int(time.time() * 1000)
    try:
        asyncio.run(everything())
    finally:
        for handle in handles:
            handle.close()
        for pool in pools:
            pool.close()
    return began_ms, int(time.time() * 1000)


def last_execution_id(spark: MeasuredSpark) -> int:
    """The newest execution the server recorded before a run (its readiness probe's ``SELECT 1``, the run before)."""
    return max((e.id for e in spark.executions()), default=-1)


def settled(spark: MeasuredSpark, window: tuple[int, int], expected: int, after_id: int) -> list[Execution]:
    """The run's executions once the server's listener has recorded them all (it records asynchronously): those
    newer than ``after_id`` — the server's own readiness probe can end within the window's margin."""
    deadline = time.monotonic() + 30
    while True:
        found = [e for e in during(spark.executions(), window[0] - 1000, window[1] + 1000)
                 if e.status != "RUNNING" and e.id > after_id]
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_three_workers_never_have_more_statements_executing_on_the_server_than_the_limit(
        measured_spark: MeasuredSpark, endpoints: Endpoints, cluster: str) -> None:
    statements = WORKERS * MODELS_PER_WORKER * TASKS_PER_MODEL + ADMIN_WRITES
    before = last_execution_id(measured_spark)
    free = settled(measured_spark, run_pipeline(measured_spark.remote, endpoints.redis_url, cluster, False),
                   statements, before)
    before = last_execution_id(measured_spark)
    admitted = settled(measured_spark, run_pipeline(measured_spark.remote, endpoints.redis_url, cluster, True),
                       statements, before)
    assert len(free) == len(admitted) == statements, "the server recorded other executions than the run's statements"
    assert all(e.status == "COMPLETED" for e in free + admitted)
    unlimited, limited = most_at_once(free), most_at_once(admitted)
    print(f"server-side max statements executing at once: {unlimited} without admission, {limited} with limit {LIMIT}")
    assert unlimited > LIMIT, f"without admission only {unlimited} ran at once: the run does not exercise the limit"
    assert limited == LIMIT, f"{limited} statements executed at once on the server with a limit of {LIMIT}"

