"""Target tables the product owns: created from the model's query before its first task, and given the columns a
non-breaking change adds (docs/changing-models.md#tables-the-product-owns); how else its columns differ from the
query's is reported, never altered.

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
from cbt.models.templates import RenderSettings, TaskContext, quote_part, sql_string

Columns = Sequence[tuple[str, str]]
"""``(name, Spark SQL type)`` in order, e.g. ``("slot", "BIGINT")``."""


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


def create_statements(model: Transformation, columns: Columns, location: str | None = None) -> list[str]:
    """The database, then the table with ``columns`` (Delta); with ``location``, an external table there (a
    build's: its files outlive its catalog entry, ``cbt.adapters.switch``)."""
    listed = ",\n  ".join(f"{quote_part(name)} {kind}" for name, kind in columns)
    at = "" if location is None else f" LOCATION {sql_string(location)}"
    return [f"CREATE DATABASE IF NOT EXISTS {quote_part(model.database)}",
            f"CREATE TABLE IF NOT EXISTS {target_name(model)} (\n  {listed}\n) USING DELTA{at}"]


@dataclass(frozen=True)
class Migration:
    added: tuple[tuple[str, str], ...] = ()
    """Columns the query adds at its end: added to the table."""
    differences: tuple[str, ...] = ()
    """How else the query's columns differ from the table's. Nothing is altered for them: rows are written by
    position, and Spark accepts or refuses them as before (a table created by hand may name or type its columns
    its own way)."""

    def statements(self, model: Transformation) -> list[str]:
        if not self.added:
            return []
        listed = ", ".join(f"{quote_part(name)} {kind}" for name, kind in self.added)
        return [f"ALTER TABLE {target_name(model)} ADD COLUMNS ({listed})"]


def migration(table: Columns, query: Columns) -> Migration:
    """What the existing ``table`` gets for the query's rows: the columns the query adds at its end, when every
    column before them has the table's name there. A column dropped, renamed, moved or retyped is never altered
    (a breaking change needs a table of its own, never an ``ALTER`` that loses data): it is reported."""
    have = [(n.lower(), t.lower()) for n, t in table]
    want = [(n.lower(), t.lower()) for n, t in query]
    differences = [f"column {name}: not in the query" for name, _ in have[len(want):]]
    for i, ((name, kind), (wanted, wanted_kind)) in enumerate(zip(have, want, strict=False)):
        if wanted != name:
            differences.append(f"column {i + 1}: the table has {name}, the query {wanted}")
        elif wanted_kind != kind:
            differences.append(f"column {name}: the table has {kind}, the query {wanted_kind}")
    names_fit = len(want) >= len(have) and all(w[0] == h[0] for w, h in zip(want, have, strict=False))
    added = tuple(query[len(have):]) if names_fit else ()
    return Migration(added, tuple(differences))
