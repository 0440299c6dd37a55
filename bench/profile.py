"""Where a task's time goes inside the worker: the real ``TaskRunner`` with every port timed, in this process.

The runner gets the same adapters the worker process builds (Redis state, group-committed Delta admin recorder,
Spark executor, FastStream publisher), each wrapped in a proxy that adds up the time of every call. Tasks run one
after another (no group-commit sharing), like a worker with concurrency 1.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from bench.overhead import MODEL, Scenario
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_admin import ensure_topics
from cbt.adapters.kafka_bus import BrokerPublisher, make_broker
from cbt.adapters.spark import SessionPool
from cbt.base.tasks import incremental_task_id
from cbt.contract.messages import TaskRequested
from cbt.dev.generator import SourceTables, write_blocks
from cbt.models.templates import RenderSettings
from cbt.worker.executor import SparkExecutor
from cbt.worker.recorder import AdminRecorder
from cbt.worker.runner import TaskRunner, WorkerPorts
from tests.e2e.harness import T0


class Timings:
    def __init__(self) -> None:
        self.total_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def add(self, name: str, seconds: float) -> None:
        self.total_s[name] += seconds
        self.calls[name] += 1

    def per_task_ms(self, tasks: int) -> dict[str, dict[str, float]]:
        return {name: {"ms_per_task": round(total * 1000 / tasks, 1), "calls_per_task": self.calls[name] / tasks}
                for name, total in sorted(self.total_s.items(), key=lambda kv: -kv[1])}


class Timed:
    """Forwards every method call to ``target`` and adds its duration to ``timings`` under ``label.method``."""

    def __init__(self, target: object, label: str, timings: Timings) -> None:
        self._target = target
        self._label = label
        self._timings = timings

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            return attribute
        key = f"{self._label}.{name}"
        if inspect.iscoroutinefunction(attribute):
            return self._wrap_async(attribute, key)
        return self._wrap(attribute, key)

    def _wrap(self, method: Callable[..., Any], key: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self._timings.add(key, time.perf_counter() - began)
        return call

    def _wrap_async(self, method: Callable[..., Any], key: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                self._timings.add(key, time.perf_counter() - began)
        return call


async def _profile(bd: BenchDeployment, spark: SparkSession, scenario: Scenario) -> dict[str, Any]:
    config, timings = bd.dep.config, Timings()
    state = bd.dep.state
    recorder = AdminRecorder(admin_from_config(spark, config), "bench-profile")
    await asyncio.to_thread(recorder.admin.ensure_tables)
    broker = make_broker(config.kafka, "bench-profile")
    model_id = bd.model_id(MODEL)
    async with broker:
        await broker.start()
        ports = WorkerPorts(
            coverage=Timed(state.coverage, "redis.coverage", timings),
            bounds=Timed(state.bounds, "redis.bounds", timings),
            ledger=Timed(state.ledger, "redis.ledger", timings),
            leases=Timed(state.leases, "redis.leases", timings),
            publisher=Timed(BrokerPublisher(broker), "kafka", timings),
            recorder=Timed(recorder, "admin", timings),
        )
        sessions = SessionPool(config.spark.remote or "")
        executor = SparkExecutor(sessions, RenderSettings.from_config(config), 600, str(config.base_dir))
        runner = TaskRunner(bd.dep.models, ports, Timed(executor, "spark", timings),
                            bd.topics, "bench-profile")
        outcomes: list[str] = []
        began = time.perf_counter()
        for start, end in scenario.ranges():
            task = TaskRequested(task_id=incremental_task_id(model_id, start, end - start), model=model_id,
                                 position=start, interval=end - start, direction="backfill")
            handle_began = time.perf_counter()
            outcomes.append(await runner.handle(task))
            timings.add("handle (total)", time.perf_counter() - handle_began)
        elapsed_s = time.perf_counter() - began
    await recorder.close()
    sessions.close()
    tasks = len(outcomes)
    steps = timings.per_task_ms(tasks)
    accounted = sum(v["ms_per_task"] for k, v in steps.items() if k != "handle (total)")
    return {"tasks": tasks, "outcomes": sorted(set(outcomes)), "per_task_ms": round(elapsed_s * 1000 / tasks, 1),
            "steps": steps, "other_ms_per_task": round(steps["handle (total)"]["ms_per_task"] - accounted, 1)}


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    scenario = Scenario(intervals)
    bd = deploy(spark, endpoints, "pf", [MODEL])
    try:
        ensure_topics(endpoints.kafka, bd.topics.all(bd.pools))
        write_blocks(spark, SourceTables(bd.dep.source_db), T0, scenario.end)
        bd.seed_bounds(T0, scenario.end)
        return asyncio.run(_profile(bd, spark, scenario))
    finally:
        bd.teardown()

