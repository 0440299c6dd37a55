"""One column spec per admin table: the table's DDL, the schema of the rows appended to it and the columns read from
it all derive from the one list, so they cannot drift apart. Names are quoted (``database``, ``table``, ``interval``
are keywords); values are always bound as named parameters, never spliced into the text."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pyspark.sql.types import BooleanType, DataType, LongType, StringType, StructField, StructType, TimestampType

from cbt.models.spec import ModelId
from cbt.models.templates import sql_string
from cbt.state.admin_records import split_model_id

Params = dict[str, object]


class ReadRow(Protocol):
    """A row as read: a Spark ``Row`` or a mapping, indexed by column name (timestamps under ``read_as``)."""

    def __getitem__(self, key: str, /) -> Any: ...

_TYPES: dict[str, DataType] = {"TIMESTAMP": TimestampType(), "STRING": StringType(), "BIGINT": LongType(),
                               "BOOLEAN": BooleanType()}


@dataclass(frozen=True)
class Column:
    """One column: its name, Spark SQL type and comment. A ``TIMESTAMP`` column names ``read_as``: it is read as
    unix milliseconds under that name."""

    name: str
    type: str
    comment: str = ""
    read_as: str | None = None

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"column {self.name}: expected one of {', '.join(_TYPES)}, got {self.type!r}")

    @property
    def quoted(self) -> str:
        return f"`{self.name}`"

    def ddl(self) -> str:
        """The column as ``CREATE TABLE`` and ``ADD COLUMNS`` write it."""
        return f"{self.quoted} {self.type}" + (f" COMMENT {sql_string(self.comment)}" if self.comment else "")

    def read(self) -> str:
        return f"unix_millis({self.quoted}) AS {self.read_as}" if self.read_as else self.quoted


@dataclass(frozen=True)
class TableSpec:
    """An admin table's columns in table order, its comment and its partition columns."""

    columns: tuple[Column, ...]
    comment: str
    partitioned_by: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def create(self, table: str) -> str:
        """``CREATE TABLE IF NOT EXISTS`` for ``table`` (back-quoted)."""
        columns = ",\n  ".join(c.ddl() for c in self.columns)
        partitioned = ", ".join(f"`{p}`" for p in self.partitioned_by)
        return (f"CREATE TABLE IF NOT EXISTS {table} (\n  {columns}\n) USING DELTA"
                + (f" PARTITIONED BY ({partitioned})" if partitioned else "")
                + f"\nCOMMENT {sql_string(self.comment)}")

    def schema(self) -> StructType:
        """The schema of the rows appended (every column nullable, as in the table)."""
        return StructType([StructField(c.name, _TYPES[c.type], nullable=True) for c in self.columns])

    def row(self, values: Mapping[str, object]) -> tuple[object, ...]:
        """One appended row, in table order; ``values`` names every column, no more."""
        if set(values) != set(self.names):
            raise ValueError(f"row: expected the columns {', '.join(self.names)}, got {', '.join(values)}")
        return tuple(values[name] for name in self.names)

    def select(self) -> str:
        """Every column as read (timestamps as unix milliseconds), in table order."""
        return ", ".join(c.read() for c in self.columns)


def timestamp(ms: int) -> datetime:
    """A ``TIMESTAMP`` column's value for a time in unix milliseconds."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def select_as(names: Sequence[str], expressions: Mapping[str, str]) -> str:
    """``expression AS column`` for each of ``names`` in order (a statement that inserts by position); the
    expressions name every column, no more."""
    if set(expressions) != set(names):
        raise ValueError(f"select: expected the columns {', '.join(names)}, got {', '.join(expressions)}")
    return ", ".join(f"{expressions[name]} AS `{name}`" for name in names)


def model_filter(models: Collection[ModelId] | None, prefix: str = "m") -> tuple[str, Params]:
    """A predicate on ``database``/``table`` (every admin table has them) selecting ``models`` (all when ``None``),
    with its parameters."""
    if models is None:
        return "TRUE", {}
    if not models:
        return "FALSE", {}
    terms: list[str] = []
    params: Params = {}
    for i, model in enumerate(sorted(models)):
        params[f"{prefix}d{i}"], params[f"{prefix}t{i}"] = split_model_id(model)
        terms.append(f"(`database` = :{prefix}d{i} AND `table` = :{prefix}t{i})")
    return "(" + " OR ".join(terms) + ")", params
