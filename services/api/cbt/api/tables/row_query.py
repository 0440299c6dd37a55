"""A read of an exposed table's rows, from the query string to DataFusion SQL: typed filters on its columns
(``<column>_<operator>``), the order, the page, and the opaque page token. Pure: values in, values out.

Every value is parsed by its column's Delta type before it reaches SQL, and rendered back as a literal of that type
(numbers from parsed numbers, strings quoted with ``'`` doubled, timestamps as microseconds): no text of the request
is pasted into a statement. A bad value, an unknown column or an operator the column's type has not is a
``QueryError`` naming the parameter and the reason (a 400).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import hashlib
import hmac
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["integer", "float", "decimal", "string", "boolean", "timestamp", "date", "other"]
Value = int | float | decimal.Decimal | str | bool | dt.datetime | dt.date

_INTEGER_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_KINDS: dict[str, Kind] = {"float": "float", "double": "float", "string": "string", "boolean": "boolean",
                           "timestamp": "timestamp", "timestamp_ntz": "timestamp", "date": "date",
                           **{name: "integer" for name in _INTEGER_BITS}}

COMPARISONS = ("eq", "ne", "lt", "lte", "gt", "gte")
LISTS = ("in_values", "not_in_values")
TEXT = ("contains", "starts_with", "like")
OPERATORS = (*COMPARISONS, *LISTS, *TEXT, "is_null")
_ORDERED: frozenset[Kind] = frozenset({"integer", "float", "decimal", "string", "timestamp", "date"})
RESERVED = frozenset({"page_size", "page_token", "order_by", "covered_only"})
"""Query parameters that are not filters."""
MAX_LIST_VALUES = 1000
DECIMAL_DIGITS = 38
"""The most digits a Delta decimal holds (DECIMAL(38, s))."""


class QueryError(ValueError):
    """A request the read API refuses: which parameter, and why."""


@dataclass(frozen=True)
class Column:
    name: str
    delta_type: str
    """The Delta type as the table's schema names it: ``long``, ``string``, ``timestamp``, ``decimal(38,0)``…"""
    nullable: bool = True

    @property
    def kind(self) -> Kind:
        if self.delta_type.startswith("decimal"):
            return "decimal"
        return _KINDS.get(self.delta_type, "other")

    def operators(self) -> tuple[str, ...]:
        """The filters this column takes: comparisons and lists on ordered and boolean types, text matches on
        strings, ``is_null`` on every column."""
        kind = self.kind
        if kind == "other":
            return ("is_null",)
        if kind == "boolean":
            return ("eq", "ne", "is_null")
        text = TEXT if kind == "string" else ()
        return (*COMPARISONS, *LISTS, *text, "is_null")


@dataclass(frozen=True)
class Filter:
    column: Column
    operator: str
    values: tuple[Value, ...]


@dataclass(frozen=True)
class OrderKey:
    column: str
    is_descending: bool = False


def parse_filters(params: Sequence[tuple[str, str]], columns: Sequence[Column]) -> list[Filter]:
    """The filters among the query parameters (every one but ``RESERVED``), in the order given."""
    by_name = {c.name: c for c in columns}
    found = []
    for name, raw in params:
        if name in RESERVED:
            continue
        column, operator = _split(name, by_name)
        if operator not in column.operators():
            raise QueryError(f"{name}: column {column.name} ({column.delta_type}) takes "
                             f"{', '.join(column.operators())}, not {operator}")
        found.append(Filter(column, operator, _values(name, raw, column, operator)))
    return found


def _split(name: str, by_name: Mapping[str, Column]) -> tuple[Column, str]:
    for operator in sorted(OPERATORS, key=len, reverse=True):  # not_in_values before in_values
        suffix = f"_{operator}"
        if name.endswith(suffix) and name[:-len(suffix)] in by_name:
            return by_name[name[:-len(suffix)]], operator
    known = ", ".join(sorted(by_name))
    raise QueryError(f"{name}: not a filter; a filter is <column>_<operator> with a column of the table ({known}) "
                     f"and an operator of {', '.join(OPERATORS)}")


def _values(name: str, raw: str, column: Column, operator: str) -> tuple[Value, ...]:
    if operator == "is_null":
        return (parse_value(name, raw, Column(column.name, "boolean")),)
    if operator in TEXT:
        if raw == "":
            raise QueryError(f"{name}: expected some text, got an empty value")
        return (raw,)
    if operator in LISTS:
        items = raw.split(",")
        if len(items) > MAX_LIST_VALUES:
            raise QueryError(f"{name}: at most {MAX_LIST_VALUES} values, got {len(items)}")
        return tuple(parse_value(name, item, column) for item in items)
    return (parse_value(name, raw, column),)


def parse_value(name: str, raw: str, column: Column) -> Value:
    """``raw`` as a value of ``column``'s type, or a ``QueryError`` saying what was expected."""
    kind = column.kind
    try:
        if kind == "integer":
            return _integer(raw, _INTEGER_BITS[column.delta_type])
        if kind == "float":
            number = float(raw)
            if not math.isfinite(number):
                raise ValueError
            return number
        if kind == "decimal":
            return _decimal(raw)
        if kind == "boolean":
            return {"true": True, "false": False}[raw.strip().lower()]
        if kind == "timestamp":
            return _timestamp(raw)
        if kind == "date":
            return dt.date.fromisoformat(raw.strip())
    except (ValueError, KeyError, OverflowError, decimal.InvalidOperation):
        raise QueryError(f"{name}: expected {_EXPECTED[kind]} for column {column.name} ({column.delta_type}), "
                         f"got {raw!r}") from None
    return raw


_EXPECTED: dict[Kind, str] = {
    "integer": "an integer", "float": "a finite number", "decimal": "a decimal number", "string": "text",
    "boolean": "true or false", "timestamp": "an ISO 8601 time (2024-05-01T12:00:00Z) or unix seconds",
    "date": "an ISO 8601 date (2024-05-01)", "other": "a value",
}


def _integer(raw: str, bits: int) -> int:
    text = raw.strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError
    return value


def _decimal(raw: str) -> decimal.Decimal:
    """A value a DECIMAL(38, s) can hold: at most 38 digits in all, 38 after the point (``1E+999999999`` is finite,
    and written out it is a billion digits)."""
    value = decimal.Decimal(raw.strip())
    if not value.is_finite():
        raise ValueError
    scale = max(0, -int(value.as_tuple().exponent))
    if scale > DECIMAL_DIGITS or max(value.adjusted() + 1, 1) + scale > DECIMAL_DIGITS:
        raise ValueError
    return value


def _timestamp(raw: str) -> dt.datetime:
    text = raw.strip()
    if re.fullmatch(r"\d{1,12}", text):
        return dt.datetime.fromtimestamp(int(text), dt.UTC)
    value = dt.datetime.fromisoformat(text)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def parse_order(raw: str | None, columns: Sequence[Column], tie_breakers: Sequence[str]) -> list[OrderKey]:
    """``order_by``: columns separated by commas, each ``name``, ``name asc``, ``name desc`` or ``-name``; then
    ``tie_breakers`` and every other ordered column, ascending, so the order is total (a page is the same each
    time it is read from the same snapshot)."""
    by_name = {c.name: c for c in columns}
    keys: list[OrderKey] = []
    for part in (raw or "").split(","):
        text = part.strip()
        if not text:
            continue
        name, _, direction = text.removeprefix("-").partition(" ")
        direction = direction.strip().lower() or ("desc" if text.startswith("-") else "asc")
        column = by_name.get(name)
        if column is None or column.kind not in _ORDERED | {"boolean"} or direction not in ("asc", "desc"):
            raise QueryError(f"order_by: {text!r}: expected a column of the table ({', '.join(sorted(by_name))}), "
                             "optionally followed by asc or desc, or preceded by '-'")
        keys.append(OrderKey(name, direction == "desc"))
    named = {k.column for k in keys}
    rest = [*tie_breakers, *(c.name for c in columns if c.kind in _ORDERED | {"boolean"})]
    return keys + [OrderKey(name) for name in dict.fromkeys(rest) if name not in named]


def parse_key(raw: str, key: Sequence[str], columns: Sequence[Column]) -> list[Filter]:
    """Get by key: ``raw`` is the key columns' values in their order, separated by commas (a one-column key takes
    the whole text)."""
    by_name = {c.name: c for c in columns}
    parts = [raw] if len(key) == 1 else raw.split(",")
    if len(parts) != len(key):
        raise QueryError(f"key: expected {len(key)} values separated by commas ({', '.join(key)}), got {raw!r}")
    return [Filter(by_name[name], "eq", (parse_value(f"key.{name}", part, by_name[name]),))
            for name, part in zip(key, parts, strict=True)]


def quote(name: str) -> str:
    """An identifier for DataFusion: in double quotes, case kept."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: Value) -> str:
    """A SQL literal of a parsed value."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        scale = min(38, max(0, -value.as_tuple().exponent))  # type: ignore[operator]
        return f"CAST('{value:f}' AS DECIMAL(38, {scale}))"
    if isinstance(value, dt.datetime):
        micros = (value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
        return f"to_timestamp_micros({micros})"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return "'" + value.replace("'", "''") + "'"


_COMPARE = {"eq": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def condition(f: Filter) -> str:
    """One filter as a SQL condition."""
    col = quote(f.column.name)
    if f.operator in _COMPARE:
        return f"{col} {_COMPARE[f.operator]} {literal(f.values[0])}"
    if f.operator in LISTS:
        items = ", ".join(literal(v) for v in f.values)
        return f"{col} {'NOT IN' if f.operator == 'not_in_values' else 'IN'} ({items})"
    if f.operator == "contains":
        return f"strpos({col}, {literal(f.values[0])}) > 0"
    if f.operator == "starts_with":
        return f"starts_with({col}, {literal(f.values[0])})"
    if f.operator == "like":
        return f"{col} LIKE {literal(f.values[0])}"
    return f"{col} IS {'' if f.values[0] else 'NOT '}NULL"


def covered_condition(column: Column, ranges: Sequence[tuple[int, int]]) -> str:
    """Rows whose position lies in one of the half-open ``ranges`` (a timestamp column's position is unix seconds);
    no range: no row."""
    if column.kind not in ("integer", "timestamp"):
        raise QueryError(f"covered_only: the position column {column.name} is {column.delta_type}; expected an "
                         "integer or a timestamp")
    col = quote(column.name)

    def bound(position: int) -> str:
        return f"to_timestamp_seconds({position})" if column.kind == "timestamp" else str(position)

    parts = [f"({col} >= {bound(start)} AND {col} < {bound(end)})" for start, end in ranges]
    return "(" + " OR ".join(parts) + ")" if parts else "FALSE"


def statement(table: str, conditions: Sequence[str], order: Sequence[OrderKey], limit: int, ties: int = 0) -> str:
    """The read: filtered, ordered, ``limit`` rows after skipping ``ties`` (rows equal to the last page's last row,
    at most ``MAX_TIES``: never a deep ``OFFSET``)."""
    if not 0 <= ties <= MAX_TIES:
        raise QueryError("page_token: not a token this API made; pass next_page_token as it was returned")
    where = " WHERE " + " AND ".join(f"({c})" for c in conditions) if conditions else ""
    order_sql = ", ".join(f"{quote(k.column)} {'DESC NULLS LAST' if k.is_descending else 'ASC NULLS FIRST'}"
                          for k in order)
    return (f"SELECT * FROM {quote(table)}{where}" + (f" ORDER BY {order_sql}" if order_sql else "")
            + f" LIMIT {limit}" + (f" OFFSET {ties}" if ties else ""))


def parse_page_size(raw: str | None, default: int, maximum: int) -> int:
    """``page_size``: ASCII digits from 1 to ``maximum`` (``api.tables.max_page_size``); ``default`` when absent."""
    if raw is None:
        return min(default, maximum)
    text = raw.strip()
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 1 <= int(text) <= maximum:
        raise QueryError(f"page_size: expected an integer from 1 to {maximum} (api.tables.max_page_size), "
                         f"got {raw!r}")
    return int(text)


MAX_TIES = 10_000
"""The most rows identical in every ordered column a page may skip (rows of a tie on a page boundary): pages move
by the order's key, and only ties are counted; beyond this a filter is needed."""


class TokenExpired(QueryError):
    """A real token whose first page was read longer ago than ``api.tables.page_token_max_age_s`` (a 410)."""


@dataclass(frozen=True)
class PageToken:
    """Where the next page starts: the Delta version the first page read (every later page reads that snapshot, so
    rows appended meanwhile neither shift nor repeat a page) and when; the order's key of the last row returned
    (``after``, typed JSON values), how many rows equal to it in every ordered column were already returned
    (``ties``); and a digest of the query (a token is valid only for the query that made it).

    The page starts *at* ``after`` (the order's key, keyset paging: a read of page 1,000 costs what page 1 costs, an
    index-less sort of ``page_size + ties`` rows) and skips ``ties`` rows: no ``OFFSET`` a client could set."""

    version: int
    after: tuple[Any, ...]
    ties: int
    query: str
    first_read_unix: int
    folder: str | None = None
    """The table's folder the first page read (a switch may move the model's name meanwhile); None: the live one."""


class TokenSigner:
    """Page tokens signed with HMAC-SHA256 (``api.tables.page_token_secret``): a client can read a token but not
    make one, so the version, the position and the query it names are the API's."""

    def __init__(self, secret: bytes, max_age_s: int) -> None:
        self._secret = secret
        self.max_age_s = max_age_s

    def encode(self, token: PageToken) -> str:
        fields = {"v": token.version, "a": list(token.after), "n": token.ties, "q": token.query,
                  "t": token.first_read_unix, **({"f": token.folder} if token.folder else {})}
        body = json.dumps(fields, separators=(",", ":")).encode()
        return _b64(body) + "." + _b64(self._mac(body))

    def decode(self, raw: str, now_unix: int) -> PageToken:
        refused = QueryError("page_token: not a token this API made; pass next_page_token as it was returned")
        body_text, _, mac_text = raw.partition(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, binascii.Error):
            raise refused from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise refused
        try:
            fields = json.loads(body)
            folder = fields.get("f")
            token = PageToken(int(fields["v"]), tuple(fields["a"]), int(fields["n"]), str(fields["q"]),
                              int(fields["t"]), None if folder is None else str(folder))
        except (ValueError, KeyError, TypeError):
            raise refused from None
        if now_unix - token.first_read_unix > self.max_age_s:
            raise TokenExpired(f"page_token: its first page was read more than {self.max_age_s} s ago "
                               "(api.tables.page_token_max_age_s), so it names a version of the table that may hold "
                               "rows since re-run; start again without page_token")
        return token

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_token(token: PageToken, query: str) -> None:
    """Refuse the token for a query other than the one that made it."""
    if token.query != query:
        raise QueryError("page_token: made for another query; keep the filters, order_by and covered_only of "
                         "the first page")


def key_of(row: Mapping[str, Any], order: Sequence[OrderKey]) -> tuple[Any, ...]:
    """A row's values of the order's columns, as read (before they become JSON)."""
    return tuple(row[k.column] for k in order)


def same_key(left: Sequence[Any], right: Sequence[Any]) -> bool:
    """Equal in every ordered column, as the sort sees it (NaN equals NaN, NULL equals NULL)."""
    return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def next_token(page: Sequence[Mapping[str, Any]], order: Sequence[OrderKey], token: PageToken | None,
               version: int, query: str, now_unix: int, folder: str | None = None) -> PageToken:
    """The token of the page after ``page`` (its rows as read, in order): at the last row's key, skipping the rows
    of the page equal to it — and, when the whole page was one tie continuing the previous page's, those too."""
    last = key_of(page[-1], order)
    ties = 0
    for row in reversed(page):
        if not same_key(key_of(row, order), last):
            break
        ties += 1
    after = tuple(encode_key_value(v) for v in last)
    if token is not None and ties == len(page) and token.after == after:
        ties += token.ties
    if ties > MAX_TIES:
        raise QueryError(f"page_token: more than {MAX_TIES:,} rows are identical in every ordered column; add a "
                         "filter to page through them")
    first_read = token.first_read_unix if token is not None else now_unix
    return PageToken(version, after, ties, query, first_read, folder)


def encode_key_value(value: Any) -> Any:
    """A key value as JSON the token keeps exactly: floats and decimals as text (NaN, infinities, every digit),
    times as ISO 8601 with microseconds."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def keyset_condition(order: Sequence[OrderKey], columns: Sequence[Column], after: Sequence[Any]) -> str:
    """Rows at or after ``after`` in the order (``ASC NULLS FIRST`` / ``DESC NULLS LAST``, NaN above every number as
    DataFusion sorts): for some key, every key before it equal and it after; or every key equal."""
    by_name = {c.name: c for c in columns}
    if len(after) != len(order) or any(k.column not in by_name for k in order):
        raise QueryError("page_token: made for another query; keep the filters, order_by and covered_only of the "
                         "first page")
    typed = [_decoded(by_name[k.column], v) for k, v in zip(order, after, strict=True)]
    equal = [_equal(quote(k.column), v) for k, v in zip(order, typed, strict=True)]
    ways = []
    for index, (key, value) in enumerate(zip(order, typed, strict=True)):
        beyond = _beyond(quote(key.column), value, key.is_descending)
        if beyond != "FALSE":
            ways.append(" AND ".join([*equal[:index], beyond]))
    ways.append(" AND ".join(equal))
    return " OR ".join(f"({w})" for w in ways)


def _decoded(column: Column, value: Any) -> Value | None:
    if value is None:
        return None
    kind = column.kind
    try:
        if kind == "float":
            return float(value)
        if kind == "decimal":
            return decimal.Decimal(value)
        if kind == "timestamp":
            return dt.datetime.fromisoformat(value).astimezone(dt.UTC)
        if kind == "date":
            return dt.date.fromisoformat(value)
    except (TypeError, ValueError, decimal.InvalidOperation):
        pass
    else:
        if kind in ("integer", "boolean", "string") and isinstance(value, int | str | bool):
            return value
    raise QueryError("page_token: made for another query; keep the filters, order_by and covered_only of the first "
                     "page")


def _key_literal(value: Value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"CAST('{'NaN' if math.isnan(value) else ('Infinity' if value > 0 else '-Infinity')}' AS DOUBLE)"
    return literal(value)


def _equal(col: str, value: Value | None) -> str:
    if value is None:
        return f"{col} IS NULL"
    if isinstance(value, float) and math.isnan(value):
        return f"isnan({col})"
    return f"{col} = {_key_literal(value)}"


def _beyond(col: str, value: Value | None, is_descending: bool) -> str:
    """The rows after ``value`` in one column's order."""
    is_nan = isinstance(value, float) and math.isnan(value)
    if not is_descending:  # NULL first, NaN last
        if value is None:
            return f"{col} IS NOT NULL"
        return "FALSE" if is_nan else f"{col} > {_key_literal(value)}"
    if value is None:  # descending: NaN first, NULL last
        return "FALSE"
    if is_nan:
        return f"({col} IS NULL OR NOT isnan({col}))"
    return f"({col} < {_key_literal(value)} OR {col} IS NULL)"


def query_digest(model_id: str, filters: Sequence[Filter], order: Sequence[OrderKey], is_covered_only: bool) -> str:
    """What a page token is bound to: the model, the filters, the order and ``covered_only``."""
    text = repr((model_id, [(f.column.name, f.operator, [str(v) for v in f.values]) for f in filters],
                 [(k.column, k.is_descending) for k in order], is_covered_only))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
