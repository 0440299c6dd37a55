"""(c) Backfill throughput: one model with every interval missing, caught up by one and by two worker processes.

All source data is released at once; the coordinator backfills the gap newest first, as many intervals at a time
as the model's concurrency limit allows (raised here so two workers can both be busy). Throughput is intervals
completed per second from the first task enqueued to the last completion.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from bench.overhead import MODEL, Scenario, run_pipeline
from bench.stack import Endpoints, deploy
from cbt.dev.generator import SourceTables, write_blocks
from tests.e2e.harness import T0

MODEL_CONCURRENCY = 8


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    scenario = Scenario(intervals)
    results: dict[str, Any] = {"model": MODEL, "intervals": intervals, "model_concurrency": MODEL_CONCURRENCY}
    for workers in (1, 2):
        bd = deploy(spark, endpoints, f"bf{workers}", [MODEL],
                    {"CBT__WORKER__MODEL_CONCURRENCY": str(MODEL_CONCURRENCY)})
        try:
            write_blocks(spark, SourceTables(bd.dep.source_db), T0, scenario.end)
            ours = run_pipeline(bd, scenario, workers=workers)
        finally:
            bd.teardown()
        ours["worker_concurrency"] = bd.dep.config.worker.concurrency
        ours["intervals_per_s"] = round(ours["intervals"] * 1000 / ours["wall_ms"], 2)
        results[f"workers_{workers}"] = ours
    results["speedup"] = round(results["workers_2"]["intervals_per_s"] / results["workers_1"]["intervals_per_s"], 2)
    return results
