"""Which table an external model's bounds query reads, when that alone decides its answer: the bounds-cache then
skips an incremental scan while that table has not changed since the last scan (``cbt.bounds_cache.query``).

Pure: the rendered statements are parsed with sqlglot (Spark dialect), never run. The answer is a table only when
the query provably depends on nothing else — one table read (any number of times), no other statement before the
last (a ``SET`` or a temporary view could change what it reads), and no function whose value changes between two
runs over the same data (the time, random numbers, the session's user). Anything else, or SQL that does not
parse, gives ``None``: the query runs every time.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

VOLATILE_EXPRESSIONS: tuple[type[exp.Expression], ...] = (
    exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.CurrentTimezone, exp.Localtimestamp,
    exp.CurrentUser, exp.Rand, exp.Randn, exp.Uuid,
)
"""Functions whose value changes between two runs over unchanged data, as sqlglot parses them (``now()`` and
``unix_timestamp()`` without an argument hold a ``CurrentTimestamp``)."""

VOLATILE_NAMES = frozenset({"now", "random", "shuffle", "user", "session_user", "input_file_name",
                            "monotonically_increasing_id", "spark_partition_id"})
"""The same, among the functions sqlglot does not know by type."""


def sole_source_table(statements: list[str]) -> str | None:
    """The one table ``statements`` read, as ``database.table`` (lower-case, unquoted), or ``None`` when more than
    one statement runs, more than one table (or none) is read, a volatile function is called, or it does not
    parse."""
    if len(statements) != 1:
        return None
    try:
        tree = sqlglot.parse_one(statements[0], read="spark")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Query) or _is_volatile(tree):
        return None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = {_name(t) for t in tree.find_all(exp.Table) if not (not t.db and t.name.lower() in ctes)}
    return tables.pop() if len(tables) == 1 and None not in tables else None


def _is_volatile(tree: exp.Query) -> bool:
    return any(isinstance(node, VOLATILE_EXPRESSIONS)
               or (isinstance(node, exp.Anonymous) and node.name.lower() in VOLATILE_NAMES)
               for node in tree.find_all(exp.Func))


def _name(table: exp.Table) -> str | None:
    """``db.table`` of a table reference; ``None`` for a table function or a reference without a database (it
    resolves against the session's current database, which the scan cannot see)."""
    if not table.name or not table.db or table.catalog:
        return None
    return f"{table.db.lower()}.{table.name.lower()}"
