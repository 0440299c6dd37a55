"""Target tables the product owns: created from the model's query before its first task, and given the columns a
non-breaking change adds (docs/changing-models.md#tables-the-product-owns).

A model whose rows come from a SELECT the worker wraps (``write.strategy`` ``replace`` or ``append``) owns its table:
its columns are the SELECT's, as Spark analyses it for a probe task (``probe_task``). The author's own statements
(``sql``, scheduled and exec models) say nothing the product can read, so their tables are still created by hand
(``models/ddl``). Pure: the statements only; ``cbt.adapters.target_tables`` asks Spark and runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cbt.models.render import render_statements
from cbt.models.spec import IncrementalModel, Transformation
from cbt.models.templates import RenderSettings, TaskContext, quote_part

Columns = Sequence[tuple[str, str]]
"""``(name, Spark SQL type)`` in order, e.g. ``("slot", "BIGINT")``."""


class SchemaConflict(ValueError):
    """The query's columns cannot be written into the existing table without losing data."""


def owns_table(model: Transformation) -> bool:
    """Whether the product creates the model's table (its rows are a SELECT the worker wraps)."""
    return isinstance(model, IncrementalModel) and model.sql is not None and model.write.strategy != "sql"


def probe_task(model: IncrementalModel) -> TaskContext:
    """The task whose SQL is analysed for the table's columns (analysed, never run)."""
    return TaskContext(model_id=model.id, task_start_unix=0, start=0, end=model.interval.max)


def probe_statements(model: IncrementalModel, settings: RenderSettings) -> list[str]:
    """The probe task's statements: the earlier ones to run (temporary views), then the SELECT to analyse."""
    return render_statements(model, probe_task(model), settings)


def target_name(model: Transformation) -> str:
    return f"{quote_part(model.database)}.{quote_part(model.table)}"


def create_statements(model: Transformation, columns: Columns) -> list[str]:
    """The database, then the table with ``columns`` (Delta)."""
    listed = ",\n  ".join(f"{quote_part(name)} {kind}" for name, kind in columns)
    return [f"CREATE DATABASE IF NOT EXISTS {quote_part(model.database)}",
            f"CREATE TABLE IF NOT EXISTS {target_name(model)} (\n  {listed}\n) USING DELTA"]


@dataclass(frozen=True)
class Migration:
    added: tuple[tuple[str, str], ...] = ()

    def statements(self, model: Transformation) -> list[str]:
        if not self.added:
            return []
        listed = ", ".join(f"{quote_part(name)} {kind}" for name, kind in self.added)
        return [f"ALTER TABLE {target_name(model)} ADD COLUMNS ({listed})"]


def migration(model: Transformation, table: Columns, query: Columns) -> Migration:
    """What the existing ``table`` needs for the query's rows: the columns the query adds at its end. A column the
    query dropped, renamed, moved or retyped is a ``SchemaConflict`` (a breaking change needs a new table, never an
    ``ALTER`` that loses data); rows are written by position."""
    have = [(n.lower(), t.upper()) for n, t in table]
    want = [(n.lower(), t.upper()) for n, t in query]
    if want[:len(have)] == have:
        return Migration(tuple(query[len(have):]))
    problems = []
    for i, (name, kind) in enumerate(have):
        if i >= len(want):
            problems.append(f"column {name}: not in the query")
        elif want[i][0] != name:
            problems.append(f"column {i + 1}: the table has {name}, the query {want[i][0]}")
        elif want[i][1] != kind:
            problems.append(f"column {name}: the table has {kind}, the query {want[i][1]}")
    raise SchemaConflict(f"{model.id}: the query's columns do not fit its table: {'; '.join(problems)}")
