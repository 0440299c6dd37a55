"""The worker's Spark executor on a real Spark Connect server: a statement that outlives its timeout, or whose run
is cancelled (lease lost, shutdown), is interrupted on the server — it never writes afterwards; each model's session
state stays its own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.worker.executor import SparkExecutor, TaskExecutionError
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
SLEEP_MS = 8000
"""How long the slow statement sleeps on the server before it writes its row."""


def slow_insert(table: str) -> IncrementalModel:
    """A model whose statement sleeps on an executor, then appends one row to ``table``."""
    sql = f"INSERT INTO {table} SELECT coalesce(reflect('java.lang.Thread', 'sleep', {SLEEP_MS}L), 'late') AS v"
    return replace(inc("an.slow", imax=60), sql=sql)


def task() -> TaskContext:
    return TaskContext(model_id="an.slow", task_start_unix=int(time.time()), start=0, end=60)


def rows_after_the_sleep(spark: SparkSession, table: str) -> int:
    time.sleep(SLEEP_MS / 1000 + 4)  # long past the moment the statement would have written
    return int(spark.sql(f"SELECT count(*) AS n FROM {table}").collect()[0]["n"])


@pytest.fixture
def sessions(endpoints: Endpoints) -> Iterator[SessionPool]:
    pool = SessionPool(endpoints.spark_remote)
    yield pool
    pool.close()


@pytest.fixture
def table(spark: SparkSession, spark_database: str) -> str:
    name = f"{spark_database}.out"
    spark.sql(f"CREATE TABLE {name} (v STRING) USING DELTA")
    return name


def test_a_statement_past_the_query_timeout_fails_the_attempt_and_is_stopped_on_the_server(
    spark: SparkSession, sessions: SessionPool, table: str
) -> None:
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, query_timeout_s=2)

    with pytest.raises(TaskExecutionError, match=r"query timeout: .*spark.query_timeout \(2 s\)"):
        asyncio.run(executor.run(slow_insert(table), task()))

    assert rows_after_the_sleep(spark, table) == 0, "the timed-out statement still wrote"
    spark.sql(f"INSERT INTO {table} VALUES ('next')")  # the session is usable again
    assert spark.sql(f"SELECT v FROM {table}").collect()[0]["v"] == "next"


def test_the_models_own_timeout_wins_over_the_global_one(
    spark: SparkSession, sessions: SessionPool, table: str
) -> None:
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, query_timeout_s=600)

    expected = r"query timeout: a statement ran longer than an.slow's timeout \(2 s\)"
    with pytest.raises(TaskExecutionError, match=expected):
        asyncio.run(executor.run(replace(slow_insert(table), timeout_s=2), task()))

    assert rows_after_the_sleep(spark, table) == 0, "the timed-out statement still wrote"


def test_a_cancelled_run_stops_its_statement_on_the_server(
    spark: SparkSession, sessions: SessionPool, table: str
) -> None:
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, query_timeout_s=600)

    async def scenario() -> None:
        run = asyncio.create_task(executor.run(slow_insert(table), task()))
        await asyncio.sleep(2)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(scenario())
    assert rows_after_the_sleep(spark, table) == 0, "the cancelled run's statement still wrote"


def test_a_models_set_and_temp_views_do_not_reach_another_models_session(
    sessions: SessionPool, spark: SparkSession
) -> None:
    leaky = replace(inc("an.leaky", imax=60), sql=(
        "SET spark.sql.ansi.enabled=false;\n"
        "CREATE OR REPLACE TEMP VIEW shared_name AS SELECT 'leaked' AS v"
    ))
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, query_timeout_s=60)
    context = TaskContext(model_id="an.x", task_start_unix=int(time.time()), start=0, end=60)

    asyncio.run(executor.run(leaky, context))

    assert sessions.session("an.leaky").sql("SELECT v FROM shared_name").collect()[0]["v"] == "leaked"
    assert not sessions.session("an.reader").catalog.tableExists("shared_name"), "a temp view reached another model"
    value = sessions.session("an.reader").conf.get("spark.sql.ansi.enabled")
    assert value == spark.conf.get("spark.sql.ansi.enabled"), "a SET reached another model's session"


def test_a_hung_model_does_not_slow_a_healthy_one(sessions: SessionPool, spark: SparkSession, table: str) -> None:
    """A healthy model's completion rate alone, then (on a fresh table of its own, so both runs start alike) next to
    a model whose tasks hang — three of them queued, more than the one slot it may take; printed, and every healthy
    task must end while the hung one still runs. (The hung model is a script: a hung SQL statement would also hold
    one of the Spark server's cores, which is the cluster's capacity rather than the worker's isolation.)"""
    hung = replace(inc("an.hung", imax=60), exec="sleep 40", timeout_s=40)
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60, query_timeout_s=60, slots=2)
    tasks = 8

    async def healthy_rate(name: str) -> float:
        spark.sql(f"CREATE TABLE {table}_{name} (v STRING) USING DELTA")
        healthy = replace(inc(f"an.{name}", imax=60), sql=f"INSERT INTO {table}_{name} VALUES ('ok')")
        await executor.run(healthy, task())  # its session warmed up
        began = time.monotonic()
        for _ in range(tasks):
            await executor.run(healthy, task())
        return tasks / (time.monotonic() - began)

    async def scenario() -> tuple[float, float]:
        alone = await healthy_rate("alone")
        hanging = [asyncio.create_task(executor.run(hung, task())) for _ in range(3)]
        await asyncio.sleep(0.5)
        beside = await healthy_rate("beside")
        assert not any(run.done() for run in hanging), "the hung model ended before the healthy one finished"
        for run in hanging:
            run.cancel()
        await asyncio.gather(*hanging, return_exceptions=True)
        return alone, beside

    alone, beside = asyncio.run(scenario())
    print(f"\nhealthy model: {alone:.2f} tasks/s alone, {beside:.2f} tasks/s beside a hung model "
          f"({beside / alone:.0%})")
    for name in ("alone", "beside"):
        assert int(spark.sql(f"SELECT count(*) AS n FROM {table}_{name}").collect()[0]["n"]) == tasks + 1
