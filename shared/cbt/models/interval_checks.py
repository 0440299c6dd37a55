"""Interval checks (``checks:`` in the frontmatter, docs/checks.md): what an interval's rows must satisfy before they
are published, and the SQL that finds the rows that do not.

A worker computes the interval's rows once into a cached relation (``cbt_interval_rows``, ``STAGED``: a name of
the task's own in the session, ``staged_name``), judges the row-by-row checks in one pass over it
(``check_queries``), and publishes only the intervals no ``error`` check failed. Each check finds *violating*
rows:

- ``not_null: [a, b]``: rows where any of the columns is NULL;
- ``unique: [a, b]``: rows whose key occurs more than once in their interval — for an ``append`` model also rows
  whose key is already in the table (keys compared null-safe, as ``MERGE`` does);
- ``accepted_values: {col: [v, …]}``: rows whose value is not listed (NULL passes: ``not_null`` says otherwise);
- ``expression: <boolean SQL>``: rows for which it is false or NULL;
- ``row_count: {min, max}``: the interval's row count outside the bounds (one violation); ``{within: F, of_last:
  N}``: outside [median / F, median * F] of the row counts of the model's last N published intervals (judged
  once at least ``MIN_HISTORY`` of them are known);
- ``sql: <query>``: the rows the author's query returns: rows of ``cbt_interval_rows`` (with its columns; a
  query of its own).

A check fails when it finds more violations than its ``threshold`` (default 0); a failed ``warn`` check publishes
anyway and is recorded as warned. Pure: the SQL only; the worker runs it (``cbt.adapters.interval_checks``).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

CheckKind = Literal["not_null", "unique", "accepted_values", "row_count", "expression", "sql"]
Severity = Literal["error", "warn"]
CheckStatus = Literal["passed", "warned", "failed", "accepted"]
"""``accepted``: failed, and published anyway because an operator accepted the interval (``cbt checks accept``)."""

STAGED = "cbt_interval_rows"
"""The name an interval's computed rows have while they are checked (custom ``sql`` checks read it)."""
SAMPLE_ROWS = 5
MIN_HISTORY = 3
"""Published intervals a relative ``row_count`` needs before it judges (a fresh model passes until then)."""
"""Violating rows kept with a result, as JSON."""
INTERVAL, CHECK, VIOLATIONS, SAMPLE = "cbt_interval", "cbt_check", "cbt_violations", "cbt_sample"


@dataclass(frozen=True)
class IntervalCheck:
    """One check of a model's intervals (its parsed ``checks:`` item)."""

    name: str
    kind: CheckKind
    severity: Severity = "error"
    threshold: int = 0
    """Violations allowed before the check fails."""
    columns: tuple[str, ...] = ()
    """``not_null``, ``unique``: the columns."""
    accepted: Mapping[str, tuple[str | int | float | bool, ...]] = field(default_factory=dict)
    """``accepted_values``: per column, its values."""
    min_rows: int | None = None
    max_rows: int | None = None
    within: float | None = None
    """``row_count``: a factor of the median row count of the last ``of_last`` published intervals."""
    of_last: int = 10
    sql: str | None = None
    """``expression``: the boolean; ``sql``: the query of violating rows."""


def default_name(kind: CheckKind, columns: Sequence[str] = ()) -> str:
    """``not_null_slot_root``, ``unique_slot``, ``accepted_values_client``, ``row_count``…"""
    return "_".join([kind, *columns]) if columns else kind


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def staged_name(task_id: str) -> str:
    """The name a task's staged rows have in the Spark session (tasks of many models share one session); a custom
    ``sql`` check's ``cbt_interval_rows`` is read as this name (``custom_sql``)."""
    return f"{STAGED}_{hashlib.sha256(task_id.encode()).hexdigest()[:16]}"


FAILED_SUFFIX = "__cbt_failed"
"""The table beside a model's where the rows of its intervals that failed a check are kept (``keep_failed``)."""


def keep_failed(target: str, staged: str, failed: Sequence[tuple[int, int, str]], task_id: str,
                retention_s: int) -> list[str]:
    """The statements that keep the staged rows of the ``failed`` intervals (``(start, end, replace_where)``) in
    ``<target>__cbt_failed``, with the interval, the task and when, replacing what an earlier failure of the same
    interval kept; and delete what is older than ``retention_s``."""
    kept = f"{target[:-1]}{FAILED_SUFFIX}`" if target.endswith("`") else f"{target}{FAILED_SUFFIX}"
    extra = ("cbt_start", "cbt_end", "cbt_task_id", "cbt_kept_at")
    statements = [f"CREATE TABLE IF NOT EXISTS {kept} USING DELTA AS SELECT *, CAST(NULL AS BIGINT) AS cbt_start, "
                  f"CAST(NULL AS BIGINT) AS cbt_end, CAST(NULL AS STRING) AS cbt_task_id, CAST(NULL AS TIMESTAMP) "
                  f"AS cbt_kept_at FROM {staged} WHERE false"]
    for start, end, predicate in failed:
        statements.append(f"INSERT INTO {kept} REPLACE WHERE cbt_start = {start} AND cbt_end = {end}\n"
                          f"SELECT *, {start} AS {extra[0]}, {end} AS {extra[1]}, {literal(task_id)} AS {extra[2]}, "
                          f"current_timestamp() AS {extra[3]} FROM {staged} WHERE {predicate}")
    statements.append(f"DELETE FROM {kept} WHERE cbt_kept_at < current_timestamp() - make_dt_interval(0, 0, 0, "
                      f"{int(retention_s)})")
    return statements


def custom_sql(check: IntervalCheck, staged: str) -> str:
    """A custom ``sql`` check's query, reading ``staged`` where it names ``cbt_interval_rows``."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(str(check.sql).strip().rstrip(";"), dialect="spark")
    for table in tree.find_all(exp.Table):
        if table.name.lower() == STAGED and not table.db:
            table.set("this", exp.to_identifier(staged))
    return tree.sql(dialect="spark")


def in_one_pass(check: IntervalCheck) -> bool:
    """Checks judged row by row in the one pass over the staged rows (``check_queries``)."""
    return check.kind in ("not_null", "unique", "accepted_values", "expression")


def row_flag(check: IntervalCheck) -> str:
    """Whether a staged row violates ``check``, as SQL over the row and its interval (``INTERVAL``)."""
    if check.kind == "not_null":
        return " OR ".join(f"{quote(c)} IS NULL" for c in check.columns)
    if check.kind == "unique":
        keys = ", ".join(quote(c) for c in check.columns)
        return f"count(*) OVER (PARTITION BY {INTERVAL}, {keys}) > 1"
    if check.kind == "accepted_values":
        return " OR ".join(f"{quote(c)} NOT IN ({', '.join(literal(v) for v in values)})"
                           for c, values in check.accepted.items())
    if check.kind == "expression":
        return f"NOT coalesce(({check.sql}), false)"
    raise ValueError(f"{check.kind} checks are not judged row by row")


CHECK_FAILED = "cbt-check-failed"
"""The error a row that fails a check raises inside a guarded write (``guarded``)."""


def checks_in_the_write(checks: Sequence[IntervalCheck], appends: bool = False) -> bool:
    """Whether ``checks`` can run inside the write itself (``guarded``): every one judged row by row, of severity
    ``error`` and no threshold — a single violating row fails it, so a passing run needs no count. Not ``unique``
    on an ``append`` model (``appends``): it also reads the table's rows."""
    return bool(checks) and all(in_one_pass(c) and c.severity == "error" and c.threshold == 0
                                and not (appends and c.kind == "unique") for c in checks)


def guarded(checks: Sequence[IntervalCheck], select: str) -> str:
    """``select`` with each row checked as the write computes it: a row that fails any of ``checks``
    (``checks_in_the_write``) raises ``CHECK_FAILED``, so the write's job fails and Delta commits nothing; the run
    is then staged (``check_queries``) to learn which interval failed, with samples. ``unique`` is judged over the
    whole run here — stricter than per interval in a batch, so a key in two intervals only sends the run to
    staging, which judges it exactly."""
    flags = [f"coalesce(({row_flag(c)}), false) AS `cbt_f{i}`" for i, c in enumerate(checks)]
    names = [f"`cbt_f{i}`" for i in range(len(checks))]
    return (f"SELECT * EXCEPT ({INTERVAL}, {', '.join(names)}) FROM (\n"
            f"  SELECT *, {', '.join(flags)} FROM (SELECT 0 AS {INTERVAL}, * FROM (\n{select}\n) AS `cbt_run`))\n"
            f"WHERE CASE WHEN {' OR '.join(names)} THEN raise_error({literal(CHECK_FAILED)}) ELSE true END")


def passed_in_the_write(checks: Sequence[IntervalCheck]) -> tuple[CheckResult, ...]:
    """The results of a guarded write that committed: no row failed any check."""
    return tuple(CheckResult(c.name, c.severity, "passed", 0) for c in checks)


def interval_index(count: int, span: Callable[[int, int], str]) -> str:
    """The index of the interval a row belongs to among ``count`` adjacent intervals, as a binary search over
    ``span(lo, hi)`` — the predicate of intervals ``lo`` to ``hi - 1`` together (their ``write.replace_where`` over
    their joined range): a row is tested against about log2(count) predicates, not ``count`` (a ``CASE`` of 300
    branches took a second over 30,000 rows here). One interval: 0; a row of none: -1, which no interval counts —
    writing it would fail the ``REPLACE WHERE`` anyway."""
    if count <= 1:
        return "0"

    def node(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return str(lo)
        mid = (lo + hi) // 2
        return f"IF({span(lo, mid)}, {node(lo, mid)}, {node(mid, hi)})"

    return f"IF({span(0, count)}, {node(0, count)}, -1)"


@dataclass(frozen=True)
class CheckQueries:
    """What the worker runs on a task's staged rows: ``one_pass`` — every interval's row count and the row-by-row
    checks' violations and samples, one row per interval (``cbt_rows``, ``cbt_v<i>``, ``cbt_s<i>`` for the i-th of
    ``passed_checks``) — and ``apart``: the checks that need a query of their own (custom ``sql``, ``unique``
    against an ``append`` model's table), as rows of (interval, check, violations, sample); None when there are none."""

    one_pass: str
    passed_checks: tuple[IntervalCheck, ...]
    apart: str | None


def check_queries(checks: Sequence[IntervalCheck], by_interval: str = "0", staged: str = STAGED,
                  target: str | None = None) -> CheckQueries:
    """The queries of ``checks`` over ``staged``. ``by_interval``: the index of a row's interval
    (``interval_index``; "0": one verdict for every row). ``target``: an ``append`` model's table, whose keys a
    ``unique`` check's rows must not repeat."""
    row_wise = tuple(c for c in checks if in_one_pass(c))
    flags = [f"coalesce(({row_flag(c)}), false) AS `cbt_f{i}`" for i, c in enumerate(row_wise)]
    names = [f"`cbt_f{i}`" for i in range(len(row_wise))]
    sampled = (f"IF({' OR '.join(names)}, to_json(struct(* EXCEPT ({INTERVAL}, {', '.join(names)}))), NULL)"
               if names else "CAST(NULL AS STRING)")
    aggregates = [f"count_if(`cbt_f{i}`) AS `cbt_v{i}`, slice(collect_list(IF(`cbt_f{i}`, `cbt_row`, NULL)), 1, "
                  f"{SAMPLE_ROWS}) AS `cbt_s{i}`" for i in range(len(row_wise))]
    one_pass = (f"SELECT {INTERVAL}, count(*) AS `cbt_rows`{''.join(', ' + a for a in aggregates)} FROM (\n"
                f"  SELECT *, {sampled} AS `cbt_row` FROM (\n"
                f"    SELECT *{''.join(', ' + f for f in flags)} FROM (SELECT {by_interval} AS {INTERVAL}, * FROM "
                f"{staged})))\nGROUP BY {INTERVAL}")
    parts = []
    for check in checks:
        if check.kind == "sql":
            rows = custom_sql(check, staged)
        elif check.kind == "unique" and target is not None:
            on = " AND ".join(f"s.{quote(c)} <=> t.{quote(c)}" for c in check.columns)
            rows = f"SELECT s.* FROM {staged} AS s LEFT SEMI JOIN {target} AS t ON {on}"
        else:
            continue
        parts.append(f"SELECT {INTERVAL}, {literal(check.name)} AS {CHECK}, count(*) AS {VIOLATIONS}, "
                     f"slice(collect_list(`cbt_row`), 1, {SAMPLE_ROWS}) AS {SAMPLE} "
                     f"FROM (SELECT {by_interval} AS {INTERVAL}, to_json(struct(*)) AS `cbt_row` FROM (\n{rows}\n) "
                     f"AS {quote('cbt_' + check.name)}) GROUP BY {INTERVAL}")
    return CheckQueries(one_pass, row_wise, "\nUNION ALL\n".join(parts) if parts else None)


def verdict_rows(queries: CheckQueries, one_pass: Sequence[Mapping[str, object]],
                 apart: Sequence[tuple[int | None, str, int, Sequence[str]]] = ()) -> list[
                     tuple[int | None, str, int, Sequence[str]]]:
    """The queries' rows as ``judge`` reads them: (interval, check — ``''`` for the row count —, violations,
    sample)."""
    out: list[tuple[int | None, str, int, Sequence[str]]] = list(apart)
    for row in one_pass:
        index = row[INTERVAL]
        interval = None if index is None else int(str(index))
        out.append((interval, "", int(str(row["cbt_rows"])), ()))
        for i, check in enumerate(queries.passed_checks):
            sample = row[f"cbt_s{i}"]
            out.append((interval, check.name, int(str(row[f"cbt_v{i}"])),
                        [str(x) for x in sample] if isinstance(sample, list | tuple) else []))
    return out


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on one interval."""

    check: str
    severity: Severity
    status: CheckStatus
    violations: int
    sample: tuple[str, ...] = ()
    """Up to ``SAMPLE_ROWS`` violating rows, each as JSON."""

    @property
    def stops_publishing(self) -> bool:
        return self.status == "failed"

    def reason(self) -> str:
        return f"check {self.check} failed: {self.violations} violating row{'s' if self.violations != 1 else ''}"


def judge(checks: Sequence[IntervalCheck], intervals: int,
          rows: Sequence[tuple[int | None, str, int, Sequence[str]]],
          recent: Sequence[int] = ()) -> list[list[CheckResult]]:
    """Each interval's results from the check queries' rows ``(interval, check, violations, sample)``
    (``verdict_rows``); a row of interval NULL counts for every interval, of -1 for none; an interval without a row
    has no violations (and no rows). ``recent``: the row counts of the model's latest published intervals, newest
    first (what a relative ``row_count`` compares with)."""
    counted: list[dict[str, tuple[int, tuple[str, ...]]]] = [{} for _ in range(intervals)]
    for index, name, found_n, found_rows in rows:
        for i in range(intervals) if index is None else [index] if 0 <= index < intervals else []:
            before, kept = counted[i].get(name, (0, ()))
            counted[i][name] = (before + int(found_n), (*kept, *found_rows)[:SAMPLE_ROWS])
    results: list[list[CheckResult]] = []
    for found in counted:
        row_count = found.get("", (0, ()))[0]
        verdicts = []
        for check in checks:
            sample: tuple[str, ...]
            if check.kind == "row_count":
                bounds = row_bounds(check, recent)
                outside = (bounds[0] is not None and row_count < bounds[0]) or (
                    bounds[1] is not None and row_count > bounds[1])
                violations = int(outside)
                sample = (json.dumps({"rows": row_count, "min": bounds[0], "max": bounds[1]}),) if outside else ()
            else:
                violations, sample = found.get(check.name, (0, ()))
            failing = violations > check.threshold
            status: CheckStatus = "passed" if not failing else "failed" if check.severity == "error" else "warned"
            verdicts.append(CheckResult(check.name, check.severity, status, violations, tuple(sample)))
        results.append(verdicts)
    return results


def accepted_anyway(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The results of an interval an operator accepted (``cbt checks accept``): a failed check is recorded as
    ``accepted``, and no longer stops its publishing."""
    return [replace(r, status="accepted") if r.status == "failed" else r for r in results]


def row_bounds(check: IntervalCheck, recent: Sequence[int]) -> tuple[float | None, float | None]:
    """The row counts a ``row_count`` check allows: its ``min`` and ``max``, narrowed by ``within`` a factor of
    the median of the last ``of_last`` of ``recent`` (once ``MIN_HISTORY`` are known)."""
    low: float | None = check.min_rows
    high: float | None = check.max_rows
    history = list(recent[:check.of_last])
    if check.within is not None and len(history) >= MIN_HISTORY:
        median = statistics.median(history)
        low = median / check.within if low is None else max(low, median / check.within)
        high = median * check.within if high is None else min(high, median * check.within)
    return low, high


def row_counts(intervals: int, rows: Sequence[tuple[int | None, str, int, Sequence[str]]]) -> list[int]:
    """Each interval's row count, from the check queries' rows (``verdict_rows``)."""
    counts = [0] * intervals
    for index, name, violations, _ in rows:
        if name == "" and index is not None and 0 <= index < intervals:
            counts[index] += int(violations)
    return counts


@dataclass(frozen=True)
class IntervalVerdict:
    """Every check's result on one interval ``[start, end)`` of a task, and its row count."""

    start: int
    end: int
    results: tuple[CheckResult, ...]
    rows: int | None
    """None: not counted (the checks ran inside the write: ``guarded``)."""

    @property
    def is_published(self) -> bool:
        """No ``error`` check failed: its rows were written."""
        return not any(r.stops_publishing for r in self.results)

    def reason(self) -> str:
        """Why it was not published (the failed checks), or ''."""
        return "; ".join(r.reason() for r in self.results if r.stops_publishing)


@dataclass(frozen=True)
class CheckedRun:
    """What a worker's run of a model with checks did (``Executor.run``): the seconds its work took, each interval's
    verdict, and how long the checks' query took."""

    seconds: float
    intervals: tuple[IntervalVerdict, ...]
    check_s: float = 0.0

    @property
    def failed(self) -> tuple[IntervalVerdict, ...]:
        return tuple(v for v in self.intervals if not v.is_published)
