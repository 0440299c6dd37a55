"""How ``cbt rows`` prints the read API's answers: an aligned table (numbers right-aligned, ``null`` for a missing
value), the API's JSON as it came, or CSV (an empty field for a missing value). A value that is not text — a number,
``true``/``false``, a struct or an array — is written as JSON, so a table and a CSV show what the API sent."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]
CONTROL = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})
"""A line break or tab in a value would break a table's alignment: shown escaped."""


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def columns_of(rows: Sequence[Row]) -> list[str]:
    """The columns in the order the rows hold them (the table's), any a later row adds after them."""
    return list(dict.fromkeys(name for row in rows for name in row))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def aligned(header: Sequence[str], lines: Sequence[Sequence[str]], is_right: Sequence[bool]) -> str:
    """Columns separated by two spaces, each as wide as its widest cell; a rule under the header."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, is_right, strict=True)]
        return "  ".join(padded).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(cells) for cells in lines)]) + "\n"


def table_text(rows: Sequence[Row]) -> str:
    if not rows:
        return "no rows\n"
    names = columns_of(rows)
    lines = [[text_of(row.get(name)).translate(CONTROL) for name in names] for row in rows]
    is_right = [all(_is_number(row.get(name)) for row in rows if row.get(name) is not None) for name in names]
    return aligned(names, lines, is_right)


def csv_text(rows: Sequence[Row], names: Sequence[str] | None = None) -> str:
    """A header row, then one line per row (RFC 4180 quoting; ``\\n`` line ends)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = columns_of(rows) if names is None else names
    writer.writerow(names)
    writer.writerows([["" if row.get(name) is None else text_of(row.get(name)) for name in names] for row in rows])
    return out.getvalue()


def json_text(answer: Any) -> str:
    return json.dumps(answer, indent=2, ensure_ascii=False) + "\n"


def print_rows(answer: Mapping[str, Any], output: str, next_page: str | None) -> None:
    """A page (or the pages joined): the rows, then, when more follow, the command that prints the next page — on
    stderr for CSV, so the file holds only the rows (JSON carries its ``next_page_token``)."""
    rows = answer["rows"]
    if output == "json":
        sys.stdout.write(json_text(answer))
        return
    sys.stdout.write(csv_text(rows) if output == "csv" else table_text(rows))
    if next_page is not None:
        print(f"next page: {next_page}", file=sys.stderr if output == "csv" else sys.stdout)


def render_row(answer: Mapping[str, Any], output: str) -> str:
    """One row by its key: in a table one line per column (a row is often wider than a terminal)."""
    row = answer["row"]
    if output == "json":
        return json_text(answer)
    if output == "csv":
        return csv_text([row])
    names = list(row)
    width = max((len(name) for name in names), default=0)
    return "".join(f"{name.ljust(width)}  {text_of(row[name]).translate(CONTROL)}\n" for name in names)


TABLE_COLUMNS = ("model", "key", "position", "column", "type", "filters")


def render_tables(answer: Mapping[str, Any], output: str) -> str:
    """The exposed tables: each with its key and position column, then each column, its type and its filters (a
    parameter ``<column>_<filter>``)."""
    if output == "json":
        return json_text(answer)
    tables: Sequence[Mapping[str, Any]] = answer["tables"]
    if output == "csv":
        lines = [
            dict(
                zip(
                    TABLE_COLUMNS,
                    (t["model"], ",".join(t["key"]), t["position"], c["name"], c["type"], " ".join(c["filters"])),
                    strict=True,
                )
            )
            for t in tables
            for c in t["columns"]
        ]
        return csv_text(lines, TABLE_COLUMNS)
    if not tables:
        return "no exposed tables (a model's expose field serves its table)\n"
    return "".join(_table_entry(t) for t in tables)


def _table_entry(table: Mapping[str, Any]) -> str:
    key = ", ".join(table["key"]) or "none (no get by key)"
    head = f"{table['model']}  key: {key}  position: {table['position'] or 'none'}\n"
    columns = table["columns"]
    if not columns:
        return head + "  (not readable yet: its model has not written the table, or api.tables.warehouse is unset)\n"
    width = max(len(c["name"]) for c in columns)
    type_width = max(len(c["type"]) for c in columns)
    return head + "".join(
        f"  {c['name'].ljust(width)}  {c['type'].ljust(type_width)}  {' '.join(c['filters'])}\n" for c in columns
    )
