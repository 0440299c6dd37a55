"""The bounds-cache skips an incremental scan while the one Delta table its query reads has not changed, on the real
Spark Connect server: a scan of an unchanged source runs no query, a commit makes the next one run and find the new
data, full scans always run, and a source without Delta state (a Parquet table) is scanned every time."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from cbt.bounds_cache.query import SparkBoundsQuery
from cbt.models.spec import ExternalModel
from cbt.models.templates import RenderSettings, ScanContext
from cbt.scheduling.scanning import ScanResult
from tests.unit.scheduling.factories import ext

pytestmark = pytest.mark.integration

BOUNDS_SQL = """SELECT min(slot) AS min, max(slot) + 1 AS max FROM {table}
{{% if cache.is_incremental_scan %}}
WHERE slot < {{{{ cache.previous_min }}}} OR slot >= {{{{ cache.previous_max }}}}
{{% endif %}}"""


@pytest.fixture
def database(spark: SparkSession) -> Iterator[str]:
    name = f"tskip_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def source(spark: SparkSession, table: str, fmt: str) -> ExternalModel:
    spark.sql(f"CREATE TABLE {table} (slot BIGINT) USING {fmt}")
    spark.sql(f"INSERT INTO {table} VALUES (10), (19)")
    return replace(ext(table), sql=BOUNDS_SQL.format(table=table))


def incremental(low: int, high: int) -> ScanContext:
    return ScanContext(is_incremental_scan=True, previous_min=low, previous_max=high)


def scan(query: SparkBoundsQuery, model: ExternalModel, context: ScanContext) -> ScanResult:
    return asyncio.run(query.scan(model, context))


def test_an_unchanged_delta_source_is_not_scanned_again_until_it_changes(
        spark: SparkSession, spark_sessions: SessionPool, database: str) -> None:
    model = source(spark, f"{database}.blocks", "delta")
    query = SparkBoundsQuery(spark_sessions, RenderSettings())

    assert scan(query, model, ScanContext()) == ScanResult(10, 20)
    assert scan(query, model, incremental(10, 20)).is_skipped, "the source did not change: no query should run"
    assert scan(query, model, incremental(10, 20)).is_skipped

    spark.sql(f"INSERT INTO {database}.blocks VALUES (25)")
    found = scan(query, model, incremental(10, 20))
    assert not found.is_skipped and (found.min, found.max) == (25, 26), "a commit must make the next scan run"
    assert scan(query, model, incremental(10, 26)).is_skipped

    assert scan(query, model, ScanContext()) == ScanResult(10, 26), "a full scan runs whatever the source's state"


def test_a_source_without_delta_state_is_scanned_every_time(
        spark: SparkSession, spark_sessions: SessionPool, database: str) -> None:
    model = source(spark, f"{database}.blocks_parquet", "parquet")
    query = SparkBoundsQuery(spark_sessions, RenderSettings())

    assert scan(query, model, ScanContext()) == ScanResult(10, 20)
    assert scan(query, model, incremental(10, 20)) == ScanResult(None, None), "nothing outside, found by a query"

    # through the scan's own session: another one would not see a Parquet table's new files before a REFRESH
    spark_sessions.session(model.id).sql(f"INSERT INTO {database}.blocks_parquet VALUES (30)")
    assert scan(query, model, incremental(10, 20)) == ScanResult(30, 31)


def test_a_query_over_two_tables_is_scanned_every_time(
        spark: SparkSession, spark_sessions: SessionPool, database: str) -> None:
    model = source(spark, f"{database}.blocks", "delta")
    spark.sql(f"CREATE TABLE {database}.extra (slot BIGINT) USING delta")
    two = replace(model, sql=f"SELECT min(b.slot) AS min, max(b.slot) + 1 AS max FROM {database}.blocks b "
                              f"LEFT JOIN {database}.extra e ON e.slot = b.slot")
    query = SparkBoundsQuery(spark_sessions, RenderSettings())

    scan(query, two, ScanContext())
    assert not scan(query, two, incremental(10, 20)).is_skipped
