"""Switching a model's name to its build, and back, on Spark (``cbt.coordinator.switch``, ``cbt rollback``).

A build is its own Delta table, registered as an *external* table (``cbt.adapters.target_tables``), so its files
outlive its catalog entry. The switch points the model's name at the build's files — ``ALTER TABLE … SET LOCATION``,
one catalog change that moves no rows, whatever the table's size: a reader sees the old version or the new one,
never both. The old version's files stay where they were, registered as ``<table>__cbt_kept_v<N>`` (readable by
name; the same id keeps its completion rows, ``cbt.models.builds.kept_rows_id``), and ``cbt rollback`` points the
name back at them until the model's ``change.retention`` has passed; then the coordinator deletes them
(``delete_files``). The old files are registered before the name moves, so a switch repeated after a crash finds
where they are.

A build table made before builds were external is a managed table (dropping it deletes its files), so its model is
switched as before: its table replaced with the build's rows in one Delta commit (``CREATE OR REPLACE TABLE … AS
SELECT``), and a rollback restores the table's Delta version (``RESTORE TABLE``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from pyspark.sql import SparkSession

from cbt.models.builds import Switched
from cbt.models.spec import ModelId
from cbt.models.templates import quote_id, quote_part, sql_string

BYPASS_SCHEMA_CHECK = "spark.databricks.delta.alterLocation.bypassSchemaCheck"
"""Delta refuses to point a table at files of another schema unless told: a breaking change may retype a column."""
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
"""Delta refuses ``VACUUM … RETAIN 0 HOURS`` unless told: the files of a version past its retention go at once."""


@contextmanager
def session_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` on the session for the statements inside only (the session is shared)."""
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key)


def table_version(spark: SparkSession, model_id: ModelId) -> int | None:
    """The table's latest Delta version; None when it does not exist."""
    if not spark.catalog.tableExists(model_id):
        return None
    row = spark.sql(f"DESCRIBE HISTORY {quote_id(model_id)} LIMIT 1").first()
    return None if row is None else int(row["version"])


DETAILED = "# Detailed Table Information"
"""Where ``DESCRIBE TABLE EXTENDED``'s rows about the table itself begin (before it: its columns, which a column
named ``Location`` would be one of)."""


def catalog_entry(spark: SparkSession, table: ModelId) -> dict[str, str] | None:
    """The catalog's entry for the table (``Type``, ``Location``, …); None when there is none. Read from the catalog
    only: ``DESCRIBE DETAIL`` also reads the table's Delta log, a third of a second on a table new to the server —
    twice on the switch's path."""
    if not spark.catalog.tableExists(table):
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quote_id(table)}").collect()
    detailed = itertools.dropwhile(lambda row: row["col_name"] != DETAILED, rows)
    return {str(row["col_name"]): str(row["data_type"] or "") for row in detailed}


def location(spark: SparkSession, table: ModelId) -> str | None:
    """Where the table's files are; None when the catalog has no such table."""
    entry = catalog_entry(spark, table)
    return (entry or {}).get("Location") or None


def is_external(entry: dict[str, str]) -> bool:
    """Whether dropping the table leaves its files (an external table)."""
    return entry.get("Type", "").upper() == "EXTERNAL"


def point_at(spark: SparkSession, table: ModelId, files: str) -> None:
    """Point ``table``'s name at the Delta table at ``files`` (one catalog change), or register it there."""
    if not spark.catalog.tableExists(table):
        spark.sql(f"CREATE TABLE {quote_id(table)} USING DELTA LOCATION {sql_string(files)}").collect()
        return
    with session_conf(spark, BYPASS_SCHEMA_CHECK, "true"):
        spark.sql(f"ALTER TABLE {quote_id(table)} SET LOCATION {sql_string(files)}").collect()


def switch_to_build(spark: SparkSession, model_id: ModelId, build: ModelId, kept: ModelId) -> Switched:
    """Point ``model_id``'s name at ``build``'s files, its old files registered as ``kept`` first; a managed build
    (made before builds were external) is copied instead."""
    entry = catalog_entry(spark, build)
    if entry is None:
        raise RuntimeError(f"{build}: the build has no table")
    if not is_external(entry):
        return _copy_build(spark, model_id, build)
    new = entry.get("Location")
    if not new:
        raise RuntimeError(f"{build}: the build's table has no location")
    old = location(spark, model_id)
    if old == new:  # switched before the leader stopped; the kept table says where the old files are
        return Switched(location(spark, kept), new)
    if old is not None and location(spark, kept) != old:
        spark.sql(f"DROP TABLE IF EXISTS {quote_id(kept)}").collect()  # (an entry left by an earlier switch)
        point_at(spark, kept, old)
    point_at(spark, model_id, new)
    return Switched(old, new)


def _copy_build(spark: SparkSession, model_id: ModelId, build: ModelId) -> Switched:
    """Replace ``model_id``'s rows, schema and partitioning with ``build``'s in one commit."""
    before = table_version(spark, model_id)
    detail = spark.sql(f"DESCRIBE DETAIL {quote_id(build)}").first()
    partitions = list(detail["partitionColumns"] or []) if detail is not None else []
    partitioned = f" PARTITIONED BY ({', '.join(map(quote_part, partitions))})" if partitions else ""
    spark.sql(f"CREATE OR REPLACE TABLE {quote_id(model_id)} USING DELTA{partitioned} "
              f"AS SELECT * FROM {quote_id(build)}").collect()
    return Switched(table_version=before)


def drop_build(spark: SparkSession, build: ModelId) -> None:
    """Drop the build's catalog entry (an external build's files are the model's now and stay)."""
    spark.sql(f"DROP TABLE IF EXISTS {quote_id(build)}").collect()


def point_back(spark: SparkSession, model_id: ModelId, files: str, kept: ModelId) -> None:
    """``cbt rollback`` of a location switch: the model's name on the old version's files again (one catalog
    change); the kept table's entry, which named the same files, is dropped (the files stay)."""
    point_at(spark, model_id, files)
    if location(spark, kept) == files:
        spark.sql(f"DROP TABLE IF EXISTS {quote_id(kept)}").collect()


def delete_files(spark: SparkSession, model_id: ModelId, files: str, kept: ModelId) -> bool:
    """Delete the data files of a version a switch left behind, past its ``change.retention``: every row deleted,
    then vacuumed at once (its Delta log stays, a few KB); the kept table's entry is dropped when it names them.
    Never the files the model's name points at. False when there was no Delta table there any more."""
    if location(spark, model_id) == files:
        raise RuntimeError(f"{model_id}: its name points at {files}; they are not deleted")
    if location(spark, kept) == files:
        spark.sql(f"DROP TABLE IF EXISTS {quote_id(kept)}").collect()
    path = f"delta.{quote_part(files)}"
    try:
        spark.sql(f"DESCRIBE DETAIL {path}").collect()
    except Exception:  # (no Delta table there: deleted by hand)
        return False
    spark.sql(f"DELETE FROM {path}").collect()
    with session_conf(spark, RETENTION_CHECK, "false"):
        try:  # (LITE: the files the log says were removed — a second where a full VACUUM's listing takes twenty)
            spark.sql(f"VACUUM {path} RETAIN 0 HOURS LITE").collect()
        except Exception:  # (the log no longer says: list them)
            spark.sql(f"VACUUM {path} RETAIN 0 HOURS").collect()
    return True


def delete_build(spark: SparkSession, model_id: ModelId, build: ModelId) -> bool:
    """A superseded build's files deleted and its entry dropped (``delete_files``); False when it has none."""
    files = location(spark, build)
    return files is not None and delete_files(spark, model_id, files, build)


def restore(spark: SparkSession, model_id: ModelId, version: int) -> None:
    """``cbt rollback`` of a copy: ``model_id``'s table back as it was at ``version`` (one commit)."""
    spark.sql(f"RESTORE TABLE {quote_id(model_id)} TO VERSION AS OF {int(version)}").collect()


class SparkSwitch:
    """The switch's statements on one session, each holding an admission permit when ``permit`` is given."""

    def __init__(self, spark: Callable[[], SparkSession],
                 permit: Callable[[], AbstractContextManager[None]] | None = None) -> None:
        self._spark, self._permit = spark, permit or nullcontext

    def switch_table(self, model_id: ModelId, build: ModelId, kept: ModelId) -> Switched:
        with self._permit():
            return switch_to_build(self._spark(), model_id, build, kept)

    def drop_table(self, build: ModelId) -> None:
        with self._permit():
            drop_build(self._spark(), build)

    def delete_files(self, model_id: ModelId, files: str, kept: ModelId) -> bool:
        with self._permit():
            return delete_files(self._spark(), model_id, files, kept)

    def delete_build(self, model_id: ModelId, build: ModelId) -> bool:
        with self._permit():
            return delete_build(self._spark(), model_id, build)
