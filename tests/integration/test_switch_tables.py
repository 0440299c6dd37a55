"""The switch on the real Spark Connect server (``cbt.adapters.switch``): a build is an external table, the model's
name moves to its files in one catalog change whatever their schema, the old files stay readable as the kept
table, a switch repeated after a crash changes nothing, dropping the build leaves the model's rows, and a rollback
points the name back. A build made before builds were external is copied instead."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.switch import (
    catalog_entry,
    delete_build,
    delete_files,
    drop_build,
    is_external,
    location,
    point_back,
    switch_to_build,
)
from cbt.adapters.target_tables import TargetTables
from cbt.models.spec import IncrementalModel, Interval, Write
from cbt.models.templates import RenderSettings
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration

OLD = "SELECT id AS slot, CAST(id * 2 AS DOUBLE) AS total FROM range({{ bounds.start }}, {{ bounds.end }}) AS r"
NEW = "SELECT id AS slot, CAST(id * 3 AS STRING) AS total FROM range({{ bounds.start }}, {{ bounds.end }}) AS r"


def model(database: str, table: str, sql: str) -> IncrementalModel:
    base = replace(inc(f"{database}.{table}"), interval=Interval(60, 60, "timestamp"), sql=sql,
                   write=Write("replace", replace_where="slot >= {{ bounds.start }} AND slot < {{ bounds.end }}"))
    return replace(base, database=database, table=table)


def filled(spark: SparkSession, owned: IncrementalModel, rows: str) -> None:
    TargetTables().ensure(spark, owned, RenderSettings())
    spark.sql(f"INSERT INTO `{owned.database}`.`{owned.table}` {rows}").collect()


def totals(spark: SparkSession, table: str) -> list[str]:
    return [str(r["total"]) for r in spark.sql(f"SELECT total FROM {table} ORDER BY slot").collect()]


def test_the_name_moves_to_the_build_s_files_and_back_without_copying_a_row(
        spark: SparkSession, spark_database: str) -> None:
    name, build, kept = (f"{spark_database}.{t}" for t in ("m", "m__cbt_v2", "m__cbt_kept_v1"))
    filled(spark, model(spark_database, "m", OLD), "SELECT id, CAST(id * 2 AS DOUBLE) FROM range(3)")
    filled(spark, model(spark_database, "m__cbt_v2", NEW), "SELECT id, CAST(id * 3 AS STRING) FROM range(3)")
    build_entry, name_entry = catalog_entry(spark, build), catalog_entry(spark, name)
    assert build_entry is not None and name_entry is not None
    assert is_external(build_entry) and not is_external(name_entry), "only a build outlives its entry"
    before = location(spark, name)
    assert before is not None and before.endswith("/m") and location(spark, build) != before

    switched = switch_to_build(spark, name, build, kept)
    assert (switched.old_location, switched.new_location) == (before, location(spark, build))
    assert switched.table_version is None, "nothing copied"
    assert totals(spark, name) == ["0", "3", "6"], "the new definition's rows, and its column type"
    assert totals(spark, kept) == ["0.0", "2.0", "4.0"], "the old rows stay readable as the kept table"
    assert switch_to_build(spark, name, build, kept) == switched, "a switch repeated after a crash changes nothing"

    drop_build(spark, build)
    assert not spark.catalog.tableExists(build)
    assert totals(spark, name) == ["0", "3", "6"], "the build's files are the model's now"
    spark.sql(f"INSERT INTO {name} SELECT 3, '9'").collect()
    assert totals(spark, name)[-1] == "9", "writes by name land in the switched table"

    assert switched.old_location is not None
    point_back(spark, name, switched.old_location, kept)
    assert totals(spark, name) == ["0.0", "2.0", "4.0"], "a rollback: the old files again, nothing recomputed"
    assert not spark.catalog.tableExists(kept), "the kept entry named the files the model names again"


def test_the_old_files_past_their_retention_are_deleted_never_the_live_ones(
        spark: SparkSession, spark_database: str) -> None:
    name, build, kept = (f"{spark_database}.{t}" for t in ("r", "r__cbt_v2", "r__cbt_kept_v1"))
    filled(spark, model(spark_database, "r", OLD), "SELECT id, CAST(id * 2 AS DOUBLE) FROM range(3)")
    filled(spark, model(spark_database, "r__cbt_v2", NEW), "SELECT id, CAST(id * 3 AS STRING) FROM range(3)")
    switched = switch_to_build(spark, name, build, kept)
    assert switched.old_location is not None and switched.new_location is not None

    with pytest.raises(RuntimeError, match="not deleted"):
        delete_files(spark, name, switched.new_location, kept)
    assert delete_files(spark, name, switched.old_location, kept)
    assert not spark.catalog.tableExists(kept)
    folder = Path(switched.old_location.removeprefix("file:"))  # (the stack's warehouse is on this machine)
    assert folder.is_dir() and not list(folder.rglob("*.parquet")), "no data file left, only the log"
    assert totals(spark, name) == ["0", "3", "6"]
    assert delete_files(spark, name, switched.old_location, kept) in (True, False), "again: nothing breaks"

    superseded = f"{spark_database}.r__cbt_v3"
    filled(spark, model(spark_database, "r__cbt_v3", NEW), "SELECT id, CAST(id AS STRING) FROM range(2)")
    build_files = location(spark, superseded)
    assert build_files is not None and delete_build(spark, name, superseded)
    assert not spark.catalog.tableExists(superseded), "a superseded build's entry goes with its files"
    assert not list(Path(build_files.removeprefix("file:")).rglob("*.parquet"))


def test_a_managed_build_made_before_builds_were_external_is_copied(spark: SparkSession, spark_database: str) -> None:
    name, build = f"{spark_database}.c", f"{spark_database}.c__cbt_v2"
    filled(spark, model(spark_database, "c", OLD), "SELECT id, CAST(id * 2 AS DOUBLE) FROM range(2)")
    spark.sql(f"CREATE TABLE {build} USING DELTA AS SELECT id AS slot, CAST(id * 5 AS DOUBLE) AS total "
              "FROM range(2)").collect()
    before = location(spark, name)

    switched = switch_to_build(spark, name, build, f"{spark_database}.c__cbt_kept_v1")
    assert switched.table_version is not None and switched.old_location is None
    assert location(spark, name) == before and totals(spark, name) == ["0.0", "5.0"]


def test_a_column_named_location_is_not_where_the_files_are(spark: SparkSession, spark_database: str) -> None:
    """``location`` reads the catalog's entry for the table, not its column list (``DESCRIBE TABLE EXTENDED`` lists
    both, the columns first)."""
    table = f"{spark_database}.with_location_column"
    spark.sql(f"CREATE TABLE {table} (Location STRING, Type STRING) USING DELTA").collect()
    found = location(spark, table)
    assert found is not None and found.endswith("/with_location_column"), found
    assert location(spark, f"{spark_database}.no_such_table") is None
