"""(a) Per-interval overhead: the pipeline end to end versus the same statements run directly.

Direct: exactly the statements ``cbt.models.writes.task_statements`` gives for each interval (write strategy
applied), one after another through one Spark Connect session, into fresh tables of their own, after one untimed
run of the first interval — the same warm-up the worker gives its session at start. Ours: coordinator
and worker processes on Kafka and Redis, from the first task enqueued to the last ``interval-completed``, divided
by the number of intervals. With worker concurrency 1 that is the honest per-interval comparison; with the default
concurrency it is throughput.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from bench.events import EventRecorder
from bench.report import load_average, summary
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.adapters.target_tables import TargetTables
from cbt.config.settings import load_config
from cbt.dev.ddl import apply_ddl
from cbt.dev.generator import SourceTables, write_blocks
from cbt.models.loader import load_models
from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import task_statements
from tests.e2e.harness import CONFIG, PROJECT, T0

MODEL = "block_propagation_minute"
INTERVAL_S = 60


@dataclass(frozen=True)
class Scenario:
    intervals: int

    @property
    def timeout_s(self) -> float:
        """Generous: a busy machine (other test runs on the same Spark) can make tasks take tens of seconds."""
        return 120.0 + 20.0 * self.intervals

    @property
    def end(self) -> int:
        return T0 + self.intervals * INTERVAL_S

    def ranges(self) -> list[tuple[int, int]]:
        return [(T0 + i * INTERVAL_S, T0 + (i + 1) * INTERVAL_S) for i in range(self.intervals)]


def run_direct(bd: BenchDeployment, scenario: Scenario, suffix: str) -> list[float]:
    """Milliseconds per interval running the worker's statements directly, into databases of their own."""
    database = f"{bd.tag}_direct{suffix}"
    bd.scratch.append(database)
    env = {**os.environ, **bd.dep.overrides, "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": database}
    config = load_config(CONFIG, environ=env)
    model = load_models(config).models[f"{database}.{MODEL}"]
    assert isinstance(model, IncrementalModel)
    spark = bd.dep.spark
    apply_ddl(spark, PROJECT / "models" / "ddl", bd.dep.source_db, database)
    settings = RenderSettings.from_config(config)
    TargetTables().ensure(spark, model, settings)  # as the worker does before the model's first task

    def run(start: int, end: int) -> float:
        began = time.perf_counter()
        task = TaskContext(model_id=model.id, task_start_unix=int(time.time()), start=start, end=end,
                           direction="backfill")
        for statement in task_statements(model, task, settings):
            spark.sql(statement).collect()
        return round((time.perf_counter() - began) * 1000, 1)

    run(*scenario.ranges()[0])  # untimed, as the worker warms its session before its first task (a re-run: idempotent)
    return [run(start, end) for start, end in scenario.ranges()]


def run_pipeline(bd: BenchDeployment, scenario: Scenario, workers: int = 1) -> dict[str, Any]:
    """Start coordinator + worker(s), release the bounds, and time every interval to completion."""
    model_id = bd.model_id(MODEL)
    topics = bd.topics
    events = EventRecorder(bd.endpoints.kafka, [topics.task_requested(), topics.interval_completed], f"{bd.tag}.bench")
    bd.dep.start("coordinator")
    for i in range(workers):
        bd.dep.procs.start("worker", str(i))
    events.start()
    try:
        ready_s = bd.wait_ready(workers)
        load = load_average()
        released_ms = bd.release_bounds(T0, scenario.end)
        events.wait_completed(model_id, scenario.intervals, scenario.timeout_s)
        return {"consumers_ready_s": round(ready_s, 1), "load_at_start": load,
                **timings(events, model_id, scenario, released_ms)}
    finally:
        events.stop()
        bd.dep.stop()


def timings(events: EventRecorder, model_id: str, scenario: Scenario, released_ms: int) -> dict[str, Any]:
    done = {c.task_id: c for c in sorted(events.completions(model_id), key=lambda c: c.completed_at_ms)}
    completions = list(done.values())
    requests = events.requests(model_id)
    first_enqueued = min(r.message.enqueued_at_ms for r in requests)
    last_completed = max(c.completed_at_ms for c in completions)
    covered_s = sum(c.interval or 0 for c in completions)
    wall_ms = last_completed - first_enqueued
    return {
        "intervals": events.intervals_completed(model_id), "tasks": len(completions), "covered_s": covered_s,
        "tasks_requested": len(requests),
        "wall_ms": wall_ms, "per_interval_ms": round(wall_ms * INTERVAL_S / covered_s, 1),
        "release_to_first_enqueue_ms": first_enqueued - released_ms,
        "worker_statement_ms": summary([c.duration_ms for c in completions]),
        "enqueue_to_complete_ms": summary([c.completed_at_ms - c.enqueued_at_ms for c in completions]),
        "kafka_hop_ms": summary([s.received_ms - s.message.enqueued_at_ms for s in requests]),
        "workers_used": sorted({c.worker for c in completions}),
    }


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    scenario = Scenario(intervals)
    results: dict[str, Any] = {"model": MODEL, "interval_s": INTERVAL_S, "intervals": intervals}
    direct: list[float] = []
    for index, (name, concurrency) in enumerate((("sequential", "1"), ("concurrent", None)), start=1):
        extra = {"CBT__WORKER__CONCURRENCY": concurrency} if concurrency else {}
        bd = deploy(spark, endpoints, f"ov{name[:3]}", [MODEL], extra)
        try:
            write_blocks(spark, SourceTables(bd.dep.source_db), T0, scenario.end)
            passes = run_direct(bd, scenario, "")
            direct.extend(passes)
            results[f"direct_pass{index}_ms"] = summary(passes)
            ours = run_pipeline(bd, scenario)
            ours["worker_concurrency"] = bd.dep.config.worker.concurrency
            results[name] = ours
        finally:
            bd.teardown()
    baseline = sum(direct) / len(direct)
    results["direct_ms"] = summary(direct)
    results["direct_per_interval_ms"] = round(baseline, 1)
    for name in ("sequential", "concurrent"):
        results[name]["ratio"] = round(results[name]["per_interval_ms"] / baseline, 2)
    return results
