"""A batch on a real Spark Connect server (SPEC §5.6): a backlog's intervals run as one job and one Delta commit,
and the table equals running them one by one — for a model whose SQL aggregates over its whole bounds, where
simply widening the bounds would not."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from cbt.models.spec import Batch, IncrementalModel, Write
from cbt.models.templates import RenderSettings, TaskContext
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
STEP, INTERVALS = 60, 10


def per_bounds_total(database: str, table: str, mode: str = "auto") -> IncrementalModel:
    """One row per run: the run's start, how many source rows its bounds hold and their sum."""
    sql = (f"SELECT {{{{ bounds.start }}}} AS interval_start, count(*) AS n, sum(v) AS total FROM {database}.source "
           "WHERE pos >= {{ bounds.start }} AND pos < {{ bounds.end }}")
    model = replace(inc(f"{database}.{table}", imax=STEP), sql=sql, batch=Batch(mode))  # type: ignore[arg-type]
    return replace(model, write=Write("replace", replace_where=(
        "interval_start >= {{ bounds.start }} AND interval_start < {{ bounds.end }}")))


def run(executor: SparkExecutor, model: IncrementalModel, start: int, end: int, step: int | None = None) -> None:
    asyncio.run(executor.run(model, TaskContext(model.id, int(time.time()), start, end, step=step)))


def rows(spark: SparkSession, table: str) -> list[tuple[int, int, int]]:
    return sorted((r["interval_start"], r["n"], r["total"]) for r in spark.sql(f"SELECT * FROM {table}").collect())


def commits(spark: SparkSession, table: str) -> int:
    return sum(1 for r in spark.sql(f"DESCRIBE HISTORY {table}").collect() if r["operation"] == "WRITE")


def test_a_batch_writes_what_the_runs_one_by_one_write_in_one_commit(spark: SparkSession, spark_database: str,
                                                                     endpoints: Endpoints) -> None:
    spark.sql(f"CREATE TABLE {spark_database}.source USING DELTA AS SELECT id AS pos, id * 2 AS v "
              f"FROM range(0, {STEP * INTERVALS})")
    for table in ("one_by_one", "batched", "widened"):
        spark.sql(f"CREATE TABLE {spark_database}.{table} (interval_start BIGINT, n BIGINT, total BIGINT) "
                  "USING DELTA")
    sessions = SessionPool(endpoints.spark_remote)
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60)
    end = STEP * INTERVALS

    for start in range(0, end, STEP):
        run(executor, per_bounds_total(spark_database, "one_by_one"), start, start + STEP)
    run(executor, per_bounds_total(spark_database, "batched"), 0, end, step=STEP)
    run(executor, per_bounds_total(spark_database, "widened", mode="bounds"), 0, end, step=STEP)

    expected = rows(spark, f"{spark_database}.one_by_one")
    assert len(expected) == INTERVALS
    assert rows(spark, f"{spark_database}.batched") == expected
    assert commits(spark, f"{spark_database}.batched") == 1, "a batch is one Delta commit"
    assert rows(spark, f"{spark_database}.widened") != expected, "this model's SQL must not be run widened"

    run(executor, per_bounds_total(spark_database, "batched"), 0, end, step=STEP)  # a crash mid-batch re-runs it
    assert rows(spark, f"{spark_database}.batched") == expected
