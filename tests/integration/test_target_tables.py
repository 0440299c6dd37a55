"""The target tables the product owns, on the real Spark Connect server: created from the model's query before its
first task, given the columns a non-breaking change adds, and never altered in a way that loses data."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.target_tables import TargetTables, table_columns
from cbt.models.spec import IncrementalModel, Interval, Write
from cbt.models.templates import RenderSettings
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration

SQL = """SELECT id AS slot, CAST(id * 2 AS DOUBLE) AS total, timestamp_seconds(id) AS at
FROM range({{ bounds.start }}, {{ bounds.end }}) AS r"""


def model(database: str, sql: str = SQL) -> IncrementalModel:
    base = replace(inc(f"{database}.owned"), interval=Interval(60, 60, "timestamp"), sql=sql,
                   write=Write("replace", replace_where="slot >= {{ bounds.start }} AND slot < {{ bounds.end }}"))
    return replace(base, database=database)


def test_a_table_is_created_from_the_query_then_given_added_columns_and_a_retype_is_refused(
        spark: SparkSession, spark_database: str) -> None:
    first = model(spark_database)
    assert table_columns(spark, first) is None
    created, _ = TargetTables().ensure(spark, first, RenderSettings())
    assert created[-1].startswith("CREATE TABLE")
    assert table_columns(spark, first) == [("slot", "bigint"), ("total", "double"), ("at", "timestamp")]
    assert TargetTables().ensure(spark, first, RenderSettings()) == ([], ()), "it fits: nothing to do"

    added = model(spark_database, SQL.replace("AS at", "AS at, id % 7 AS bucket"))
    assert TargetTables().ensure(spark, added, RenderSettings()) == (
        [f"ALTER TABLE `{spark_database}`.`owned` ADD COLUMNS (`bucket` bigint)"], ())
    assert table_columns(spark, added)[-1] == ("bucket", "bigint")  # type: ignore[index]

    retyped = model(spark_database, SQL.replace("CAST(id * 2 AS DOUBLE)", "CAST(id * 2 AS STRING)"))
    run, differences = TargetTables().ensure(spark, retyped, RenderSettings())
    assert run == [] and "column total: the table has double, the query string" in differences
    assert table_columns(spark, retyped)[1] == ("total", "double"), "never altered"  # type: ignore[index]
