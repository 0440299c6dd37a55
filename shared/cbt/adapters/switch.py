"""Switching a model's name to its build, and back, on Spark (``cbt.coordinator.switch``, ``cbt rollback``).

The switch replaces the model's table with the build's rows in one Delta commit (``CREATE OR REPLACE TABLE … AS
SELECT``): a reader sees the old version or the new one, never both; the table keeps its name, its history and its
partitioning (the build's, which the product created from the same frontmatter). The old version stays in the
table's Delta history: a rollback restores the table version it was last live in (``RESTORE TABLE``), as long as
its files are kept (Delta keeps removed files 7 days by default, ``delta.deletedFileRetentionDuration``; ``VACUUM``
deletes them after that).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from pyspark.sql import SparkSession

from cbt.models.spec import ModelId
from cbt.models.templates import quote_id, quote_part


def table_version(spark: SparkSession, model_id: ModelId) -> int | None:
    """The table's latest Delta version; None when it does not exist."""
    if not spark.catalog.tableExists(model_id):
        return None
    row = spark.sql(f"DESCRIBE HISTORY {quote_id(model_id)} LIMIT 1").first()
    return None if row is None else int(row["version"])


def switch_to_build(spark: SparkSession, model_id: ModelId, build: ModelId) -> int | None:
    """Replace ``model_id``'s rows, schema and partitioning with ``build``'s in one commit; returns the table's
    version before (what a rollback restores), None when the table did not exist."""
    before = table_version(spark, model_id)
    detail = spark.sql(f"DESCRIBE DETAIL {quote_id(build)}").first()
    partitions = list(detail["partitionColumns"] or []) if detail is not None else []
    partitioned = f" PARTITIONED BY ({', '.join(map(quote_part, partitions))})" if partitions else ""
    spark.sql(f"CREATE OR REPLACE TABLE {quote_id(model_id)} USING DELTA{partitioned} "
              f"AS SELECT * FROM {quote_id(build)}").collect()
    return before


def drop_build(spark: SparkSession, build: ModelId) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {quote_id(build)}").collect()


def restore(spark: SparkSession, model_id: ModelId, version: int) -> None:
    """Put ``model_id``'s table back as it was at ``version`` (one commit)."""
    spark.sql(f"RESTORE TABLE {quote_id(model_id)} TO VERSION AS OF {int(version)}").collect()


class SparkSwitch:
    """The switch's statements on one session, each holding an admission permit when ``permit`` is given."""

    def __init__(self, spark: Callable[[], SparkSession],
                 permit: Callable[[], AbstractContextManager[None]] | None = None) -> None:
        self._spark, self._permit = spark, permit or nullcontext

    def switch_table(self, model_id: ModelId, build: ModelId) -> int | None:
        with self._permit():
            return switch_to_build(self._spark(), model_id, build)

    def drop_table(self, build: ModelId) -> None:
        with self._permit():
            drop_build(self._spark(), build)
