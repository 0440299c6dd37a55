"""How a converted transformation writes its interval (docs/coming-from-cbt.md#idempotency).

CBT's models make a re-run harmless with ClickHouse's tools: ``INSERT`` the interval's rows stamped with the run's
``task.start``, then ``DELETE`` the interval's rows of other runs (``updated_date_time != task.start``), on a
``ReplacingMergeTree`` that also collapses duplicates of a key in the background. Here one Delta commit does it:

- INSERT + DELETE of the model's own table → write strategy ``replace``: the SELECT, written over the rows the DELETE's
  interval predicate selects (``write.replace_where``), without the run-stamp condition;
- INSERT alone into a table the project's DDL makes a ``ReplacingMergeTree`` → ``append`` with ``unique_key`` = its
  ``ORDER BY`` columns (reported: ClickHouse kept a key's newest row, append keeps its first);
- anything else stays write strategy ``sql`` (the statements as written), reported when a re-run would duplicate rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from cbt.import_cbt.clickhouse import Placeholders, Statement
from cbt.import_cbt.report import Note

if TYPE_CHECKING:
    from cbt.import_cbt.ddl import Table


@dataclass
class WriteChoice:
    statements: list[str]
    write: dict[str, Any] | None = None
    notes: list[Note] = field(default_factory=list)


def _is_self(table: exp.Expr | None, held: Placeholders) -> bool:
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table):
        return False
    return held.jinja_of(table.name) == "self.table" and held.jinja_of(table.db) == "self.database"


def _spark(node: exp.Expr, held: Placeholders, pretty: bool = True) -> str:
    return held.restore(node.sql(dialect="spark", pretty=pretty))


def _uses_run_stamp(node: exp.Expr, held: Placeholders) -> bool:
    return any(held.jinja_of(c.name) == "task.start" for c in node.find_all(exp.Column))


def choose_write(
    kind: str, statements: list[Statement], held: Placeholders, table: Table | None, path: str
) -> WriteChoice:
    """The statements to write and the ``write`` fields for a model of ``kind`` (``external`` models: unchanged)."""
    texts = [s.sql for s in statements]
    if kind == "external":
        return WriteChoice(texts)
    if any(s.tree is None for s in statements):
        return WriteChoice(
            texts,
            notes=[
                Note(
                    path,
                    statements[0].line,
                    "{% if %} blocks around statements",
                    "kept as write strategy sql: check that a re-run replaces the interval's rows",
                )
            ],
        )
    inserts = [s for s in statements if isinstance(s.tree, exp.Insert) and _is_self(s.tree.this, held)]
    deletes = [s for s in statements if isinstance(s.tree, exp.Delete) and _is_self(s.tree.this, held)]
    if kind == "scheduled":
        if inserts and table is not None and table.engine.startswith("REPLACINGMERGETREE"):
            keys = ", ".join(table.order_by)
            return WriteChoice(
                texts,
                notes=[
                    Note(
                        path,
                        inserts[0].line,
                        "INSERT into a ReplacingMergeTree",
                        f"each run appends: ClickHouse collapsed rows of one ({keys}), "
                        "Delta keeps them all; read the newest or write a MERGE INTO",
                    )
                ],
            )
        return WriteChoice(texts)
    if len(inserts) == 1 and len(deletes) == 1:
        replaced = _replace(inserts[0], deletes[0], statements, held, path)
        if replaced is not None:
            return replaced
    if len(inserts) == 1 and not deletes and table is not None and table.engine.startswith("REPLACINGMERGETREE"):
        insert = inserts[0]
        tree = insert.tree
        if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Table) and tree.expression is not None:
            others = [s.sql for s in statements if s is not insert]
            return WriteChoice(
                [*others, _spark(tree.expression, held)],
                {"strategy": "append", "unique_key": list(table.order_by)},
                [
                    Note(
                        path,
                        insert.line,
                        "INSERT into a ReplacingMergeTree",
                        f"converted to write.strategy append on unique_key ({', '.join(table.order_by)}): a key's "
                        "first row is kept where ClickHouse kept its newest; use replace if a re-run changes rows",
                    )
                ],
            )
    line = (inserts or statements)[0].line
    return WriteChoice(
        texts,
        notes=[
            Note(
                path,
                line,
                "no DELETE of the interval's earlier rows",
                "kept as write strategy sql: a re-run adds the interval's rows again; set "
                "write.strategy replace with write.replace_where",
            )
        ],
    )


def _replace(
    insert: Statement, delete: Statement, statements: list[Statement], held: Placeholders, path: str
) -> WriteChoice | None:
    if not isinstance(delete.tree, exp.Delete) or not isinstance(insert.tree, exp.Insert):
        return None
    where = delete.tree.args.get("where")
    select = insert.tree.expression
    if where is None or select is None or not isinstance(insert.tree.this, exp.Table):
        return None
    condition = where.this
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    kept = [c for c in conjuncts if not _uses_run_stamp(c, held)]
    deletes_first = statements.index(delete) < statements.index(insert)
    if not kept or (len(kept) == len(conjuncts) and not deletes_first):
        return None
    others = [s.sql for s in statements if s is not insert and s is not delete]
    predicate = _spark(exp.and_(*kept), held, pretty=False)
    return WriteChoice([*others, _spark(select, held)], {"strategy": "replace", "replace_where": predicate})
