"""ClickHouse functions sqlglot does not translate to Spark SQL, and their Spark forms
(docs/coming-from-cbt.md#sql)."""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp


def _fn(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(value: exp.Expr, to: str) -> exp.Expr:
    return exp.Cast(this=value, to=exp.DataType.build(to))


_UNITS_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def _start_of_interval(args: list[exp.Expr]) -> exp.Expr | None:
    if len(args) != 2 or not isinstance(args[1], exp.Interval):
        return None
    interval = args[1]
    unit_node = interval.args.get("unit")
    unit = (unit_node.name if isinstance(unit_node, exp.Expr) else "").lower().rstrip("s")
    amount = interval.this
    if unit not in _UNITS_S or not isinstance(amount, exp.Literal):
        return None
    seconds = int(float(amount.name)) * _UNITS_S[unit]
    return _bucket(args[0], seconds)


def _bucket(value: exp.Expr, seconds: int) -> exp.Expr:
    unix = _fn("unix_timestamp", value)
    return _fn(
        "timestamp_seconds",
        sqlglot.parse_one(f"floor(x / {seconds}) * {seconds}", read="spark").transform(
            lambda n: unix.copy() if isinstance(n, exp.Column) and n.name == "x" else n
        ),
    )


def _decimal(precision: int) -> Callable[[list[exp.Expr]], exp.Expr | None]:
    def build(args: list[exp.Expr]) -> exp.Expr | None:
        if len(args) != 2:
            return None
        return _cast(args[0], f"DECIMAL({precision}, {args[1].sql()})")

    return build


def _one(build: Callable[[exp.Expr], exp.Expr]) -> Callable[[list[exp.Expr]], exp.Expr | None]:
    return lambda args: build(args[0]) if len(args) == 1 else None


FUNCTIONS: dict[str, Callable[[list[exp.Expr]], exp.Expr | None]] = {
    "fromunixtimestamp": _one(lambda x: _fn("timestamp_seconds", x)),
    "tounixtimestamp": _one(lambda x: _fn("unix_timestamp", x)),
    "now64": lambda args: _fn("current_timestamp"),
    "now": lambda args: None if args else _fn("current_timestamp"),
    "tostartofinterval": _start_of_interval,
    "tostartoffiveminutes": _one(lambda x: _bucket(x, 300)),
    "tostartoffifteenminutes": _one(lambda x: _bucket(x, 900)),
    "tostartofday": _one(lambda x: _fn("date_trunc", exp.Literal.string("DAY"), x)),
    "todate": _one(lambda x: _fn("to_date", x)),
    "todatetime": _one(lambda x: _cast(x, "TIMESTAMP")),
    "yesterday": lambda args: None if args else _fn("date_sub", _fn("current_date"), exp.Literal.number(1)),
    "today": lambda args: None if args else _fn("current_date"),
    "stddevpop": _one(lambda x: _fn("stddev_pop", x)),
    "stddevsamp": _one(lambda x: _fn("stddev_samp", x)),
    "varpop": _one(lambda x: _fn("var_pop", x)),
    "varsamp": _one(lambda x: _fn("var_samp", x)),
    "todecimal128": _decimal(38),
    "todecimal64": _decimal(18),
    "todecimal32": _decimal(9),
    "touint64": _one(lambda x: _cast(x, "BIGINT")),
    "toint64": _one(lambda x: _cast(x, "BIGINT")),
    "touint32": _one(lambda x: _cast(x, "BIGINT")),
    "toint32": _one(lambda x: _cast(x, "INT")),
    "tofloat64": _one(lambda x: _cast(x, "DOUBLE")),
    "tostring": _one(lambda x: _cast(x, "STRING")),
    "uniqexact": _one(lambda x: exp.Count(this=exp.Distinct(expressions=[x]))),
    "uniq": _one(lambda x: _fn("approx_count_distinct", x)),
    "countdistinct": lambda args: exp.Count(this=exp.Distinct(expressions=args)) if args else None,
    "any": _one(lambda x: _fn("first", x)),
    "anylast": _one(lambda x: _fn("last", x)),
    "grouparray": _one(lambda x: _fn("collect_list", x)),
    "groupuniqarray": _one(lambda x: _fn("collect_set", x)),
    "countif": _one(lambda x: _fn("count_if", x)),
}


SPARK_FUNCTIONS = frozenset(
    {
        "timestamp_seconds",
        "unix_timestamp",
        "current_timestamp",
        "date_trunc",
        "to_date",
        "date_sub",
        "current_date",
        "stddev_pop",
        "stddev_samp",
        "var_pop",
        "var_samp",
        "approx_count_distinct",
        "first",
        "last",
        "collect_list",
        "collect_set",
        "count_if",
    }
)
"""The Spark functions the rewrites produce (sqlglot knows them only by name)."""
