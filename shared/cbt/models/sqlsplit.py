"""Split a Spark SQL script into statements on top-level semicolons.

Semicolons inside '…' and "…" strings (backslash escapes and doubled quotes), `backtick` identifiers, ``--`` line
comments and ``/* … */`` block comments (nested, as Spark allows) do not split. Statements holding only whitespace
and comments are dropped, since Spark rejects an empty statement.
"""

from __future__ import annotations

from dataclasses import dataclass

from cbt.base.errors import CbtError


class SqlSplitError(CbtError):
    """The script ends inside a string, identifier or comment; ``line`` is where that began (1-based)."""

    def __init__(self, message: str, line: int) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}")


@dataclass(frozen=True)
class Statement:
    sql: str
    line: int
    """1-based line of the statement's first character within the script."""


def split_sql(script: str) -> list[str]:
    """The statements of ``script``, stripped, without trailing semicolons."""
    return [s.sql for s in split_statements(script)]


def split_statements(script: str) -> list[Statement]:
    """Like split_sql, with each statement's starting line (for error messages)."""
    out: list[Statement] = []
    start = 0
    has_code = False
    i = 0
    n = len(script)
    while i < n:
        ch = script[i]
        if ch in "'\"`":
            i = _skip_quoted(script, i, ch)
            has_code = True
        elif script.startswith("--", i):
            end = script.find("\n", i)
            i = n if end == -1 else end + 1
        elif script.startswith("/*", i):
            i = _skip_block_comment(script, i)
        elif ch == ";":
            _emit(script, start, i, has_code, out)
            start, has_code, i = i + 1, False, i + 1
        else:
            has_code = has_code or not ch.isspace()
            i += 1
    _emit(script, start, n, has_code, out)
    return out


def _emit(script: str, start: int, end: int, has_code: bool, out: list[Statement]) -> None:
    if not has_code:
        return
    chunk = script[start:end]
    stripped = chunk.strip()
    leading = len(chunk) - len(chunk.lstrip())
    out.append(Statement(stripped, script.count("\n", 0, start + leading) + 1))


def _line_at(script: str, index: int) -> int:
    return script.count("\n", 0, index) + 1


def _skip_quoted(script: str, i: int, quote: str) -> int:
    """Index just past the closing quote; backslash escapes apply to strings, not to backtick identifiers."""
    j = i + 1
    n = len(script)
    while j < n:
        ch = script[j]
        if ch == "\\" and quote != "`":
            j += 2
            continue
        if ch == quote:
            if j + 1 < n and script[j + 1] == quote:  # doubled quote: an escaped quote
                j += 2
                continue
            return j + 1
        j += 1
    what = "identifier" if quote == "`" else "string"
    raise SqlSplitError(f"unterminated {what} starting with {quote}", _line_at(script, i))


def _skip_block_comment(script: str, i: int) -> int:
    depth = 0
    j = i
    n = len(script)
    while j < n:
        if script.startswith("/*", j):
            depth += 1
            j += 2
        elif script.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    raise SqlSplitError("unterminated /* comment", _line_at(script, i))
