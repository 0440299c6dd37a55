"""Rules that tie a model's fields together (docs/design/models.md#field-rules), checked on the raw fields.

They run on the raw YAML values, not on the validated schema, so they are reported even when another field of the
same file is broken: one run lists every problem. A rule only compares values that are individually well-formed;
the schema reports the malformed ones.
"""

from __future__ import annotations

import re
from typing import Any

from cbt.base.cron import ScheduleError, parse_duration_s
from cbt.base.errors import Problem
from cbt.base.reserved_env import reserved_env_problem
from cbt.base.yamldoc import Loc
from cbt.models.discovery import RawDoc
from cbt.models.schema import CHECK_KINDS
from cbt.models.spec import Dependency

_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*\.[A-Za-z0-9_][A-Za-z0-9_-]*")
Found = list[tuple[Loc, str]]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_dependencies(raw: Any, doc: RawDoc) -> tuple[tuple[Dependency, ...], list[Problem]]:
    """Strings are required (AND); a list is an OR group of ids. Each id is ``database.table``, listed once."""
    if not isinstance(raw, list):
        return (), []  # absent or not a list: the schema reports it
    problems: list[Problem] = []
    seen: set[str] = set()
    out: list[Dependency] = []

    def check(value: Any, loc: Loc) -> str | None:
        if not isinstance(value, str) or not _ID.fullmatch(value):
            expected = "expected 'database.table' (or '{{external}}.table')"
            problems.append(doc.smap.problem(loc, f"{expected}, got {value!r}"))
            return None
        if value in seen:
            problems.append(doc.smap.problem(loc, f"{value} is listed more than once"))
        seen.add(value)
        return value

    for index, item in enumerate(raw):
        if isinstance(item, list):
            if not item:
                problems.append(doc.smap.problem(("dependencies", index), "an OR group needs at least one member"))
            members = [check(m, ("dependencies", index, j)) for j, m in enumerate(item)]
            out.append(tuple(m for m in members if m is not None))
        else:
            dep = check(item, ("dependencies", index))
            if dep is not None:
                out.append(dep)
    return tuple(out), problems


def body_rules(doc: RawDoc) -> list[Problem]:
    """Exactly one of: an ``exec`` command, or a SQL body (``.sql`` files only)."""
    has_exec = (doc.data or {}).get("exec") is not None
    has_body = doc.body is not None and doc.body.strip() != ""
    if not doc.is_sql_file and not has_exec:
        message = "required field is missing: a .yml model runs a command; SQL models are .sql files"
        return [doc.smap.problem(("exec",), message)]
    if has_exec and has_body:
        return [doc.smap.problem(("exec",), "set either exec or a SQL body after the frontmatter, not both")]
    if doc.is_sql_file and not has_exec and not has_body:
        return [Problem(doc.path, doc.body_line, "sql", "the SQL body after the frontmatter is empty")]
    return []


def field_rules(doc: RawDoc, kind: str) -> list[Problem]:
    """Every cross-field rule for a model of ``kind`` (external, incremental or scheduled)."""
    data = doc.data or {}
    found: Found = [
        (("env", name), message)
        for name in _dict(data.get("env"))
        if isinstance(name, str) and (message := reserved_env_problem(name)) is not None
    ]
    if kind == "external":
        found += _cache_rules(_dict(data.get("cache")))
    elif kind == "incremental":
        found += (_interval_rules(data) + _schedule_rules(data) + _write_rules(data) + _batch_rules(data)
                  + _check_rules(data))
        if data.get("dependencies") == []:
            found.append((("dependencies",), "an incremental model needs at least one dependency"))
    return [doc.smap.problem(loc, message) for loc, message in found]


def _cache_rules(cache: dict[str, Any]) -> Found:
    try:
        incremental = parse_duration_s(cache.get("incremental_scan_interval", 60))
        full = parse_duration_s(cache.get("full_scan_interval", 3600))
    except (ScheduleError, TypeError):
        return []
    if full < incremental:
        message = f"full_scan_interval ({full}s) must be >= incremental_scan_interval ({incremental}s)"
        return [(("cache", "full_scan_interval"), message)]
    return []


def _interval_rules(data: dict[str, Any]) -> Found:
    found: Found = []
    interval = _dict(data.get("interval"))
    top, low = _int(interval.get("max")), _int(interval.get("min", 0))
    if top is not None and low is not None and top > 0 and low > top:
        found.append((("interval", "min"), f"interval.min ({low}) must be <= interval.max ({top})"))
    limits = _dict(data.get("limits"))
    first, last = _int(limits.get("min")), _int(limits.get("max"))
    if first is not None and last and first > last:  # limits.max 0 means "no upper limit"
        found.append((("limits", "min"), f"limits.min ({first}) must be <= limits.max ({last})"))
    return found


def _schedule_rules(data: dict[str, Any]) -> Found:
    schedules = data.get("schedules")
    if not isinstance(schedules, dict):
        return []
    forward, back = schedules.get("forwardfill", ""), schedules.get("backfill", "")
    if forward == "" and back == "":
        return [(("schedules",), "at least one of forwardfill or backfill must be set ('' disables one)")]
    return []


def _check_rules(data: dict[str, Any]) -> Found:
    """Checks need rows the worker computes before writing them (a SELECT under write strategy ``replace`` or
    ``append``); each has a name of its own; an ``expression`` or ``sql`` parses as Spark SQL."""
    checks = data.get("checks")
    if not isinstance(checks, list) or not checks:
        return []
    write = _dict(data.get("write"))
    if data.get("exec") is not None or write.get("strategy", "sql") not in ("replace", "append"):
        return [(("checks",), "checks apply to SQL models whose rows the worker writes (write.strategy replace or "
                              "append): the rows are computed, checked, then published")]
    found: Found = []
    seen: set[str] = set()
    for index, item in enumerate(checks):
        if not isinstance(item, dict):
            continue
        kinds = [k for k in CHECK_KINDS if k in item]
        if len(kinds) != 1:
            continue  # (the schema reports it)
        columns = item.get(kinds[0]) if kinds[0] in ("not_null", "unique") else item.get("accepted_values")
        listed = [columns] if isinstance(columns, str) else list(columns or []) if isinstance(columns, list | dict) \
            else []
        name = item.get("name") or "_".join([kinds[0], *map(str, listed)])
        if name in seen:
            found.append((("checks", index, "name"), f"another check is named {name!r}: give this one a name"))
        seen.add(name)
        text = item.get(kinds[0])
        if kinds[0] in ("expression", "sql") and isinstance(text, str) and text.strip():
            wrapped = f"SELECT * FROM t WHERE {text}" if kinds[0] == "expression" else text
            why = sql_problem(wrapped)
            if why is not None:
                found.append((("checks", index, kinds[0]), f"does not parse as Spark SQL: {why}"))
    return found


def _write_rules(data: dict[str, Any]) -> Found:
    write = data.get("write")
    if not isinstance(write, dict):
        return []
    if data.get("exec") is not None:
        return [(("write",), "write applies to SQL models; an exec model writes its own output")]
    strategy = write.get("strategy", "sql")
    if strategy not in ("sql", "replace", "append"):
        return []
    found: Found = []
    if strategy == "append" and not write.get("unique_key"):
        message = "write strategy append requires unique_key (the columns identifying a row, so a re-run does not "
        found.append((("write", "unique_key"), message + "insert it twice)"))
    if strategy != "append" and write.get("unique_key"):
        found.append((("write", "unique_key"), f"unique_key is only used by write strategy append, not {strategy}"))
    if strategy == "replace" and write.get("replace_where") is None:
        message = (
            "write strategy replace requires replace_where: the predicate selecting the interval's rows, e.g. "
            "ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }})"
        )
        found.append((("write", "replace_where"), message))
    if strategy != "replace" and write.get("replace_where") is not None:
        message = f"replace_where is only used by write strategy replace, not {strategy}"
        found.append((("write", "replace_where"), message))
    return found


def _batch_rules(data: dict[str, Any]) -> Found:
    mode = _dict(data.get("batch")).get("mode")
    strategy = _dict(data.get("write")).get("strategy", "sql")
    if mode == "union" and (data.get("exec") is not None or strategy != "replace"):
        what = "an exec model" if data.get("exec") is not None else f"write strategy {strategy}"
        message = (f"batch mode union needs write strategy replace (it combines one SELECT per interval under one "
                   f"REPLACE WHERE), not {what}; use mode bounds if one run over the whole range gives the same rows")
        return [(("batch", "mode"), message)]
    return []


def sql_problem(sql: str) -> str | None:
    """Why ``sql`` does not parse as Spark SQL (the parser's first complaint), or None."""
    import sqlglot  # (imported here: parsing is needed only for models with checks)
    from sqlglot.errors import ParseError, TokenError

    try:
        sqlglot.parse_one(sql, dialect="spark")
    except (ParseError, TokenError) as e:
        return str(e).splitlines()[0][:200]
    return None
