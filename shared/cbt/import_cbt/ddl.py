"""The ClickHouse tables a CBT project's DDL files create (``CREATE TABLE … ENGINE = … ORDER BY …``): which targets
are ``ReplacingMergeTree`` and on which key, for the write strategy a model gets (``writes.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError


@dataclass(frozen=True)
class Table:
    """A ClickHouse table as its DDL declares it."""

    engine: str
    order_by: tuple[str, ...]


def tables_of(sql: str) -> dict[str, Table]:
    """``db.table`` → engine and ORDER BY columns of every ``CREATE TABLE`` in ``sql``; ``{}`` when it does not parse
    (a file of other statements is not DDL to learn from)."""
    try:
        trees = sqlglot.parse(sql, read="clickhouse")
    except SqlglotError:
        return {}
    out: dict[str, Table] = {}
    for tree in trees:
        if not isinstance(tree, exp.Create) or str(tree.kind).upper() != "TABLE":
            continue
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        properties = tree.args.get("properties")
        if not isinstance(target, exp.Table) or not target.db or properties is None:
            continue
        engine = next((p.this for p in properties.expressions if isinstance(p, exp.EngineProperty)), None)
        order = next((p for p in properties.expressions if isinstance(p, exp.Order)), None)
        engine_sql = engine.sql(dialect="clickhouse").upper() if isinstance(engine, exp.Expr) else str(engine)
        columns = tuple(c.name for c in order.find_all(exp.Column)) if order is not None else ()
        out[f"{target.db}.{target.name}"] = Table(engine_sql, columns)
    return out
