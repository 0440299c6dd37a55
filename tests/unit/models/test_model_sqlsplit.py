"""The SQL-aware statement splitter: semicolons in strings, identifiers and comments do not split."""

from __future__ import annotations

import pytest

from cbt.models.sqlsplit import SqlSplitError, split_sql, split_statements

CASES = [
    pytest.param("SELECT 1", ["SELECT 1"], id="single-no-semicolon"),
    pytest.param("SELECT 1;\nSELECT 2;", ["SELECT 1", "SELECT 2"], id="two-statements"),
    pytest.param("SELECT ';' AS s; SELECT 2", ["SELECT ';' AS s", "SELECT 2"], id="semicolon-in-single-quotes"),
    pytest.param('SELECT "a;b"; SELECT 2', ['SELECT "a;b"', "SELECT 2"], id="semicolon-in-double-quotes"),
    pytest.param("SELECT 'it''s;'; SELECT 2", ["SELECT 'it''s;'", "SELECT 2"], id="doubled-quote"),
    pytest.param("SELECT 'a\\';b'; SELECT 2", ["SELECT 'a\\';b'", "SELECT 2"], id="backslash-escape"),
    pytest.param("SELECT `a;b` FROM t; SELECT 2", ["SELECT `a;b` FROM t", "SELECT 2"], id="backtick-identifier"),
    pytest.param("SELECT `a``;b`; SELECT 2", ["SELECT `a``;b`", "SELECT 2"], id="doubled-backtick"),
    pytest.param("SELECT 1 -- no; split\n; SELECT 2", ["SELECT 1 -- no; split", "SELECT 2"], id="line-comment"),
    pytest.param("SELECT /* ; */ 1; SELECT 2", ["SELECT /* ; */ 1", "SELECT 2"], id="block-comment"),
    pytest.param(
        "SELECT /* a /* ; */ b */ 1; SELECT 2", ["SELECT /* a /* ; */ b */ 1", "SELECT 2"], id="nested-block-comment"
    ),
    pytest.param(";;SELECT 1;;\n;", ["SELECT 1"], id="empty-statements-dropped"),
    pytest.param("SELECT 1;\n-- trailing; comment\n/* only */", ["SELECT 1"], id="comment-only-dropped"),
    pytest.param("-- header\nSELECT 1", ["-- header\nSELECT 1"], id="leading-comment-kept"),
    pytest.param("", [], id="empty"),
]


@pytest.mark.parametrize(("script", "expected"), CASES)
def test_split(script: str, expected: list[str]) -> None:
    assert split_sql(script) == expected


@pytest.mark.parametrize(
    ("script", "line"),
    [
        pytest.param("SELECT 1;\nSELECT 'open", 2, id="unterminated-string"),
        pytest.param("SELECT `open", 1, id="unterminated-identifier"),
        pytest.param("SELECT 1;\n\n/* open", 3, id="unterminated-comment"),
    ],
)
def test_unterminated(script: str, line: int) -> None:
    with pytest.raises(SqlSplitError) as info:
        split_sql(script)
    assert info.value.line == line


def test_statement_lines() -> None:
    assert [s.line for s in split_statements("SELECT 1;\n\n  SELECT 2;\nSELECT\n3")] == [1, 3, 4]
