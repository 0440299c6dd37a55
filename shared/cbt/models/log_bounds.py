"""Which external models' bounds can be read from the Delta log instead of a Spark scan. Pure (sqlglot).

A SQL external's full-scan bounds query (its ``cache.is_incremental_scan`` branch is not rendered) qualifies when it
is exactly ``SELECT <bound> AS min, <bound> AS max FROM <its own table>`` where each bound is ``min(column)`` or
``max(column)`` of one column, optionally converted by ``unix_seconds`` or ``unix_millis`` and shifted by an integer
(``unix_seconds(max(ts)) + 1``): the Delta log's file statistics then give the same numbers (``cbt.adapters
.delta_log_bounds`` checks at each scan that every file has them). Anything else — a filter, a join, an expression
the log cannot answer — is scanned by Spark, and ``reason`` says why (``cbt validate`` prints it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

Convert = Literal["none", "unix_seconds", "unix_millis"]


@dataclass(frozen=True)
class Bound:
    """``convert(function(column)) + offset``."""

    function: Literal["min", "max"]
    convert: Convert
    offset: int


@dataclass(frozen=True)
class LogBoundsPlan:
    column: str
    low: Bound
    high: Bound


@dataclass(frozen=True)
class SparkOnly:
    """The bounds query needs Spark: ``reason`` says why."""

    reason: str


_CONVERTS: dict[type[exp.Expression], Convert] = {exp.UnixSeconds: "unix_seconds", exp.UnixMillis: "unix_millis"}


def log_bounds_plan(statements: list[str], database: str, table: str) -> LogBoundsPlan | SparkOnly:
    """The plan for a model's rendered full-scan bounds query (``statements``, the last one returns the bounds), or
    why it needs Spark."""
    if len(statements) != 1:
        return SparkOnly("the bounds query has more than one statement")
    try:
        tree = sqlglot.parse_one(statements[0], dialect="spark")
    except SqlglotError as e:
        return SparkOnly(f"the bounds query could not be parsed ({str(e).splitlines()[0][:120]})")
    if not isinstance(tree, exp.Select):
        return SparkOnly("the bounds query is not a single SELECT")
    extra = [name for name in ("where", "group", "having", "joins", "distinct", "limit", "qualify", "with", "order")
             if tree.args.get(name)]
    if extra:
        return SparkOnly(f"the bounds query has {', '.join(extra).upper()} (the Delta log holds only whole-table "
                         "statistics)")
    source = tree.find(exp.From)
    read = source.this if source is not None else None
    if not isinstance(read, exp.Table) or read.name != table or (read.db and read.db != database):
        return SparkOnly("the bounds query does not read its own table alone")
    bounds: dict[str, tuple[str, Bound]] = {}
    for projection in tree.expressions:
        if not isinstance(projection, exp.Alias) or projection.alias.lower() not in ("min", "max"):
            return SparkOnly("the bounds query returns something other than min and max")
        found = _bound(projection.this)
        if isinstance(found, SparkOnly):
            return found
        bounds[projection.alias.lower()] = found
    if set(bounds) != {"min", "max"}:
        return SparkOnly("the bounds query does not return both min and max")
    (low_column, low), (high_column, high) = bounds["min"], bounds["max"]
    if low_column != high_column:
        return SparkOnly("min and max come from different columns")
    return LogBoundsPlan(low_column, low, high)


def _bound(node: exp.Expression) -> tuple[str, Bound] | SparkOnly:
    offset = 0
    if isinstance(node, exp.Add | exp.Sub) and _integer(node.expression) is not None:
        shift = _integer(node.expression)
        assert shift is not None
        offset = shift if isinstance(node, exp.Add) else -shift
        node = node.this
    convert: Convert = "none"
    if type(node) in _CONVERTS:
        convert, node = _CONVERTS[type(node)], node.this
    elif isinstance(node, exp.Anonymous) and node.name.lower() in ("unix_seconds", "unix_millis") \
            and len(node.expressions) == 1:
        convert = "unix_seconds" if node.name.lower() == "unix_seconds" else "unix_millis"
        node = node.expressions[0]
    if not isinstance(node, exp.Min | exp.Max) or not isinstance(node.this, exp.Column) or node.expressions:
        return SparkOnly(f"a bound is not min or max of a column ({node.sql(dialect='spark')[:80]})")
    return node.this.name, Bound("min" if isinstance(node, exp.Min) else "max", convert, offset)


def _integer(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None
