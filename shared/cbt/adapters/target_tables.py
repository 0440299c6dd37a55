"""Creating and migrating the target tables the product owns (``cbt.models.target_tables``) on Spark: the query of a
probe task is analysed (never run) for its columns, then the table is created, or given the columns the query added.
Once per model per process: a worker does it before the model's first task."""

from __future__ import annotations

import threading

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from cbt.models.builds import built_model
from cbt.models.spec import IncrementalModel, ModelId, Transformation
from cbt.models.target_tables import Columns, Migration, create_statements, migration, owns_table, probe_statements
from cbt.models.templates import RenderSettings, quote_part


def columns_of(schema: StructType) -> Columns:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def query_columns(spark: SparkSession, model: IncrementalModel, settings: RenderSettings) -> Columns:
    """The columns the model's SELECT gives, as Spark analyses it for the probe task (earlier statements — temporary
    views — are run first, as the task runs them)."""
    *prelude, select = probe_statements(model, settings)
    for statement in prelude:
        spark.sql(statement).collect()
    return columns_of(spark.sql(select).schema)


def table_columns(spark: SparkSession, model: Transformation) -> Columns | None:
    """The table's columns, ``None`` when it does not exist."""
    if not spark.catalog.tableExists(f"{model.database}.{model.table}"):
        return None
    return columns_of(spark.table(f"`{model.database}`.`{model.table}`").schema)


def build_location(spark: SparkSession, model: Transformation) -> str | None:
    """Where a build's table goes: in its database's folder, where Spark would put a managed table of that name — but
    created there as an external table, so that dropping the build's entry at the switch leaves its files, which the
    model's name then points at (``cbt.adapters.switch``). None for any other model (a managed table)."""
    if built_model(model.id) is None:
        return None
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_part(model.database)}").collect()
    folder = str(spark.catalog.getDatabase(model.database).locationUri).rstrip("/")
    return f"{folder}/{model.table.lower()}"


def statements_for(spark: SparkSession, model: IncrementalModel,
                   settings: RenderSettings) -> tuple[list[str], tuple[str, ...]]:
    """What makes the table fit the query now — its creation, the columns to add, or nothing — and how else the
    table's columns differ from the query's (``Migration.differences``)."""
    query = query_columns(spark, model, settings)
    table = table_columns(spark, model)
    if table is None:
        return create_statements(model, query, build_location(spark, model)), ()
    needed: Migration = migration(table, query)
    return needed.statements(model), needed.differences


class TargetTables:
    """The tables this process has made sure of (``ensure``), so each model is checked once."""

    def __init__(self) -> None:
        self._ready: set[ModelId] = set()
        self._lock = threading.Lock()

    def ensure(self, spark: SparkSession, model: Transformation,
               settings: RenderSettings) -> tuple[list[str], tuple[str, ...]]:
        """Create the model's table or add the columns its query added, once per process; returns what was run and
        how else the table differs from the query (reported, not altered)."""
        if not owns_table(model) or not isinstance(model, IncrementalModel):
            return [], ()
        with self._lock:
            if model.id in self._ready:
                return [], ()
        statements, differences = statements_for(spark, model, settings)
        try:
            for statement in statements:
                spark.sql(statement).collect()
        except Exception:  # another worker created or migrated it at the same moment: what is left to do now?
            statements, differences = statements_for(spark, model, settings)
            for statement in statements:
                spark.sql(statement).collect()
        with self._lock:
            self._ready.add(model.id)
        return statements, differences
