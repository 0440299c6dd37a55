"""How ``cbt rows`` prints: aligned columns with numbers to the right and ``null`` for a missing value, CSV with an
empty field for it, values that are not text as JSON, the tables' listing with each column's filters, and the next
page's command after a table (on stderr after CSV, so the file holds only rows)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from cbt.cli.rows_view import csv_text, print_rows, render_row, render_tables, table_text

ROWS: list[dict[str, Any]] = [
    {"slot": 7, "root": "0x0007", "is_late": False, "ms": None, "at": "1970-01-01T00:00:07+00:00"},
    {"slot": 12, "root": "0x000C", "is_late": True, "ms": 18.0, "at": "1970-01-01T00:00:12+00:00"},
    {"slot": 100, "root": "a\tb\nc", "is_late": None, "ms": 150.5, "at": None, "tags": ["x", "y"]},
]


def test_a_table_aligns_its_columns_with_numbers_to_the_right() -> None:
    assert table_text(ROWS) == (
        "slot  root     is_late     ms  at                         tags\n"
        "----  -------  -------  -----  -------------------------  ---------\n"
        "   7  0x0007   false     null  1970-01-01T00:00:07+00:00  null\n"
        "  12  0x000C   true      18.0  1970-01-01T00:00:12+00:00  null\n"
        ' 100  a\\tb\\nc  null     150.5  null                       ["x","y"]\n'
    )


def test_no_rows_says_so() -> None:
    assert table_text([]) == "no rows\n"


def test_csv_round_trips_text_and_leaves_a_missing_value_empty() -> None:
    text = csv_text(ROWS)
    read = list(csv.reader(io.StringIO(text)))
    assert read[0] == ["slot", "root", "is_late", "ms", "at", "tags"]
    assert read[1] == ["7", "0x0007", "false", "", "1970-01-01T00:00:07+00:00", ""]
    assert read[3] == ["100", "a\tb\nc", "", "150.5", "", '["x","y"]']
    assert len(read) == 4


PAGE = {"model": "db.t", "version": 4, "rows": ROWS[:2], "next_page_token": "tok"}


def test_a_table_page_ends_with_the_next_page_s_command(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(PAGE, "table", "cbt rows db.t --page-token tok")
    out, err = capsys.readouterr()
    assert out == table_text(ROWS[:2]) + "next page: cbt rows db.t --page-token tok\n" and err == ""


def test_a_csv_page_keeps_the_hint_out_of_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(PAGE, "csv", "cbt rows db.t --format csv --page-token tok")
    out, err = capsys.readouterr()
    assert out == csv_text(ROWS[:2]) and err == "next page: cbt rows db.t --format csv --page-token tok\n"


def test_a_json_page_is_the_api_s_answer(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(PAGE, "json", "ignored: the token is in the answer")
    assert json.loads(capsys.readouterr().out) == PAGE


def test_one_row_by_its_key_reads_down_the_page() -> None:
    answer = {"model": "db.t", "version": 4, "row": ROWS[1]}
    assert render_row(answer, "table") == (
        "slot     12\nroot     0x000C\nis_late  true\nms       18.0\nat       1970-01-01T00:00:12+00:00\n"
    )
    assert render_row(answer, "csv") == "slot,root,is_late,ms,at\n12,0x000C,true,18.0,1970-01-01T00:00:12+00:00\n"
    assert json.loads(render_row(answer, "json")) == answer


TABLES = {
    "tables": [
        {
            "model": "db.blocks",
            "key": ["slot", "root"],
            "position": "slot",
            "readable": True,
            "columns": [
                {"name": "slot", "type": "long", "filters": ["eq", "lt", "is_null"]},
                {"name": "is_late", "type": "boolean", "filters": ["eq", "ne", "is_null"]},
            ],
        },
        {"model": "db.daily", "key": [], "position": None, "readable": False, "columns": []},
    ]
}


def test_the_listing_shows_each_table_s_key_position_columns_and_filters() -> None:
    assert render_tables(TABLES, "table") == (
        "db.blocks  key: slot, root  position: slot\n"
        "  slot     long     eq lt is_null\n"
        "  is_late  boolean  eq ne is_null\n"
        "db.daily  key: none (no get by key)  position: none\n"
        "  (not readable yet: its model has not written the table, or api.tables.warehouse is unset)\n"
    )
    assert render_tables(TABLES, "csv") == (
        "model,key,position,column,type,filters\n"
        'db.blocks,"slot,root",slot,slot,long,eq lt is_null\n'
        'db.blocks,"slot,root",slot,is_late,boolean,eq ne is_null\n'
    )
    assert json.loads(render_tables(TABLES, "json")) == TABLES
    assert render_tables({"tables": []}, "table") == "no exposed tables (a model's expose field serves its table)\n"
