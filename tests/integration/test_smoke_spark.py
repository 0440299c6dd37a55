"""Spark Connect with Delta behaves as the workers rely on: idempotent REPLACE WHERE and a shared catalog."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.connect.client.reattach import ExecutePlanResponseReattachableIterator

from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def _write_interval(spark: SparkSession, table: str, start: int, end: int) -> None:
    spark.sql(
        f"INSERT INTO {table} REPLACE WHERE position >= {start} AND position < {end} "
        f"SELECT id AS position, id * 10 AS value FROM range({start}, {end})"
    )


def test_replace_where_twice_for_one_interval_holds_the_rows_once(spark: SparkSession, spark_database: str) -> None:
    table = f"{spark_database}.minute"
    spark.sql(f"CREATE TABLE {table} (position BIGINT, value BIGINT) USING DELTA")
    _write_interval(spark, table, 0, 60)
    _write_interval(spark, table, 60, 120)
    _write_interval(spark, table, 0, 60)

    rows = spark.sql(f"SELECT position, count(*) AS n FROM {table} GROUP BY position").collect()
    assert len(rows) == 120
    assert {r["n"] for r in rows} == {1}
    assert spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["format"] == "delta"


def test_a_second_client_process_sees_the_table(
    spark: SparkSession, spark_database: str, endpoints: Endpoints
) -> None:
    table = f"{spark_database}.shared_view"
    spark.sql(f"CREATE TABLE {table} (position BIGINT) USING DELTA")
    spark.sql(f"INSERT INTO {table} SELECT id FROM range(0, 5)")
    script = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        session = SparkSession.builder.remote({endpoints.spark_remote!r}).create()
        print(session.sql("SELECT count(*) AS n FROM {table}").collect()[0]["n"])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "5"


def test_a_session_done_with_never_shuts_down_the_pool_every_session_shares(endpoints: Endpoints) -> None:
    """pyspark's ``__del__`` closes a session's client, which shuts down the process-wide pool for ``ReleaseExecute``
    calls: run by the garbage collector inside another thread's submit, it failed that statement (seen in CI)."""
    from cbt.adapters.spark import connect

    stopped = connect(endpoints.spark_remote)
    stopped.stop()
    current = connect(endpoints.spark_remote)
    current.sql("SELECT 1").collect()
    shared_pool = ExecutePlanResponseReattachableIterator._release_thread_pool_instance
    assert shared_pool is not None

    del stopped
    gc.collect()

    assert ExecutePlanResponseReattachableIterator._release_thread_pool_instance is shared_pool, "the pool was shut"
    assert current.sql("SELECT 2 AS n").collect()[0]["n"] == 2
