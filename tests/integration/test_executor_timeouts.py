"""The worker's Spark executor on a real Spark Connect server: a statement that outlives ``spark.query_timeout``,
or whose run is cancelled (lease lost, shutdown), is interrupted on the server — it never writes afterwards."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.worker.executor import SparkExecutor, TaskExecutionError
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
def table(spark: SparkSession, spark_database: str) -> str:
    name = f"{spark_database}.out"
    spark.sql(f"CREATE TABLE {name} (v STRING) USING DELTA")
    return name


def test_a_statement_past_the_query_timeout_fails_the_attempt_and_is_stopped_on_the_server(
    spark: SparkSession, table: str
) -> None:
    executor = SparkExecutor(spark, RenderSettings(), exec_timeout_s=60, query_timeout_s=2)

    with pytest.raises(TaskExecutionError, match=r"query timeout: .*spark.query_timeout \(2 s\)"):
        asyncio.run(executor.run(slow_insert(table), task()))

    assert rows_after_the_sleep(spark, table) == 0, "the timed-out statement still wrote"
    spark.sql(f"INSERT INTO {table} VALUES ('next')")  # the session is usable again
    assert spark.sql(f"SELECT v FROM {table}").collect()[0]["v"] == "next"


def test_a_cancelled_run_stops_its_statement_on_the_server(spark: SparkSession, table: str) -> None:
    executor = SparkExecutor(spark, RenderSettings(), exec_timeout_s=60, query_timeout_s=600)

    async def scenario() -> None:
        run = asyncio.create_task(executor.run(slow_insert(table), task()))
        await asyncio.sleep(2)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(scenario())
    assert rows_after_the_sleep(spark, table) == 0, "the cancelled run's statement still wrote"
