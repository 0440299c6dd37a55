"""``checks:`` in the frontmatter: each field rule at its line, the parsed checks, and the verdicts the worker draws
from the check query's rows (the SQL itself runs on Spark in tests/integration/test_interval_checks_spark.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Project

from cbt.models.interval_checks import (
    IntervalCheck,
    check_queries,
    checks_in_the_write,
    guarded,
    interval_index,
    judge,
    keep_failed,
    row_counts,
    verdict_rows,
)
from cbt.models.spec import IncrementalModel

REPLACE = {"strategy": "replace", "replace_where": "p >= {{ bounds.start }} AND p < {{ bounds.end }}"}

CHECK_CASES = [
    pytest.param({"checks": [{"not_null": ["a"]}]}, "checks: checks apply to SQL models whose rows the worker writes",
                 id="checks-need-a-written-select"),
    pytest.param({"write": REPLACE, "checks": [{"not_null": []}]}, "checks[0].not_null: ", id="not-null-no-columns"),
    pytest.param({"write": REPLACE, "checks": [{"not_null": "a", "unique": "a"}]},
                 "checks[0]: a check has exactly one of", id="two-kinds"),
    pytest.param({"write": REPLACE, "checks": [{"severity": "warn"}]}, "checks[0]: a check has exactly one of",
                 id="no-kind"),
    pytest.param({"write": REPLACE, "checks": [{"not_null": "a", "severity": "fatal"}]},
                 "checks[0].severity: expected 'error' or 'warn'", id="severity-unknown"),
    pytest.param({"write": REPLACE, "checks": [{"not_null": "a", "threshold": -1}]},
                 "checks[0].threshold: expected greater than or equal to 0", id="threshold-negative"),
    pytest.param({"write": REPLACE, "checks": [{"row_count": {}}]}, "checks[0].row_count: give min, max, within",
                 id="row-count-no-bound"),
    pytest.param({"write": REPLACE, "checks": [{"row_count": {"within": 1}}]},
                 "checks[0].row_count.within: expected greater than 1", id="row-count-within-not-a-factor"),
    pytest.param({"write": REPLACE, "checks": [{"row_count": {"min": 5, "max": 1}}]},
                 "checks[0].row_count: min (5) must be <= max (1)", id="row-count-min-above-max"),
    pytest.param({"write": REPLACE, "checks": [{"not_null": "a"}, {"not_null": "a"}]},
                 "checks[1].name: another check is named 'not_null_a'", id="same-name-twice"),
    pytest.param({"write": REPLACE, "checks": [{"expression": "a >= 0 AND"}]},
                 "checks[0].expression: does not parse as Spark SQL", id="expression-broken"),
    pytest.param({"write": REPLACE, "checks": [{"accepted_values": {"client": []}}]},
                 "checks[0].accepted_values.client: ", id="accepted-values-empty"),
    pytest.param({"write": REPLACE, "checks": [{"nul": "a"}]}, "checks[0].nul: unknown field", id="unknown-kind"),
]


@pytest.mark.parametrize(("changes", "expected"), CHECK_CASES)
def test_a_bad_check_is_reported_at_its_line(project_with_blocks: Project, changes: dict[str, Any],
                                             expected: str) -> None:
    project_with_blocks.incremental(**changes)
    problems = project_with_blocks.problems()
    assert len(problems) == 1, problems
    assert expected in problems[0]
    assert problems[0].startswith("models/transformations/hourly.sql:")


def test_the_checks_are_parsed_with_their_default_names(project_with_blocks: Project) -> None:
    project_with_blocks.incremental(write=REPLACE, checks=[
        {"not_null": ["a", "b"]},
        {"unique": "a", "severity": "warn", "threshold": 2},
        {"accepted_values": {"client": ["x", 1]}},
        {"row_count": {"min": 1}},
        {"expression": "a >= 0", "name": "non_negative"},
        {"sql": "SELECT * FROM cbt_interval_rows WHERE a > b", "name": "ordered"},
    ])
    model = project_with_blocks.load().models["analytics.hourly"]
    assert isinstance(model, IncrementalModel)
    assert [(c.name, c.kind, c.severity, c.threshold) for c in model.checks] == [
        ("not_null_a_b", "not_null", "error", 0), ("unique_a", "unique", "warn", 2),
        ("accepted_values_client", "accepted_values", "error", 0), ("row_count", "row_count", "error", 0),
        ("non_negative", "expression", "error", 0), ("ordered", "sql", "error", 0)]
    assert model.checks[2].accepted == {"client": ("x", 1)}
    assert model.checks[3].min_rows == 1 and model.checks[3].max_rows is None


NOT_NULL = IntervalCheck("not_null_a", "not_null", columns=("a",))
WARN = IntervalCheck("unique_a", "unique", "warn", columns=("a",))
ROWS = IntervalCheck("row_count", "row_count", min_rows=2, max_rows=10)
LENIENT = IntervalCheck("lenient", "expression", threshold=1, sql="a > 0")


def test_an_interval_fails_only_by_an_error_check_past_its_threshold() -> None:
    rows = [(0, "", 5, []), (0, "not_null_a", 1, ['{"a":null}']), (0, "unique_a", 2, []), (0, "lenient", 1, []),
            (1, "", 5, []), (1, "lenient", 2, ['{"a":-1}', '{"a":-2}'])]
    first, second = judge([NOT_NULL, WARN, ROWS, LENIENT], 2, rows)
    assert [(r.check, r.status, r.violations) for r in first] == [
        ("not_null_a", "failed", 1), ("unique_a", "warned", 2), ("row_count", "passed", 0), ("lenient", "passed", 1)]
    assert first[0].sample == ('{"a":null}',)
    assert [r.status for r in second] == ["passed", "passed", "passed", "failed"]
    assert row_counts(2, rows) == [5, 5]


def test_row_count_judges_each_interval_on_its_own_count_and_an_interval_without_rows_counts_zero() -> None:
    few, many, none = judge([ROWS], 3, [(0, "", 1, []), (1, "", 11, [])])
    assert (few[0].status, json.loads(few[0].sample[0])) == ("failed", {"rows": 1, "min": 2, "max": 10})
    assert many[0].status == "failed"
    assert none[0].status == "failed" and json.loads(none[0].sample[0])["rows"] == 0


RELATIVE = IntervalCheck("steady", "row_count", within=2.0, of_last=4)


def test_a_relative_row_count_compares_with_the_median_of_the_latest_published_intervals() -> None:
    rows = [(0, "", 45, []), (1, "", 210, []), (2, "", 100, [])]
    recent = [100, 90, 110, 95, 1]  # newest first; the fifth is older than of_last
    judged = judge([RELATIVE], 3, rows, recent)
    assert [r[0].status for r in judged] == ["failed", "failed", "passed"], "median 97.5: [48.75, 195]"
    assert json.loads(judged[0][0].sample[0]) == {"rows": 45, "min": 48.75, "max": 195.0}
    assert [r[0].status for r in judge([RELATIVE], 3, rows, [100, 90])] == ["passed"] * 3, "too little history"
    both = IntervalCheck("both", "row_count", min_rows=60, within=2.0)
    assert [r[0].status for r in judge([both], 3, rows, recent)] == ["failed", "failed", "passed"]


def test_a_row_of_no_interval_is_every_intervals_and_of_interval_minus_one_nobodys() -> None:
    custom = IntervalCheck("custom", "sql", sql="SELECT 1 FROM cbt_interval_rows")
    results = judge([custom], 2, [(None, "custom", 1, []), (-1, "custom", 5, [])])
    assert [r[0].violations for r in results] == [1, 1]


def span(lo: int, hi: int) -> str:
    return f"p >= {lo * 10} AND p < {hi * 10}"


def test_a_row_s_interval_is_found_by_a_binary_search_over_joined_ranges() -> None:
    assert interval_index(1, span) == "0"
    assert interval_index(3, span) == (
        "IF(p >= 0 AND p < 30, IF(p >= 0 AND p < 10, 0, IF(p >= 10 AND p < 20, 1, 2)), -1)")
    nested = interval_index(300, span)
    assert nested.count("IF(") == 300 and max(_depths(nested)) <= 10, "about log2(300) tests per row"


def _depths(sql: str) -> list[int]:
    depth, out = 0, []
    for ch in sql:
        depth += ch == "("
        depth -= ch == ")"
        out.append(depth)
    return out


def test_the_query_assigns_rows_to_intervals_by_their_index() -> None:
    queries = check_queries([NOT_NULL, ROWS, LENIENT], interval_index(2, span), "staged_1")
    assert queries.passed_checks == (NOT_NULL, LENIENT) and queries.apart is None, "row_count counts rows"
    assert "`a` IS NULL" in queries.one_pass and "FROM staged_1" in queries.one_pass


def test_custom_sql_and_unique_on_an_append_model_get_a_query_of_their_own() -> None:
    custom = IntervalCheck("custom", "sql", sql="SELECT * FROM cbt_interval_rows AS r WHERE r.a > 1;")
    queries = check_queries([custom, WARN], "0", "cbt_interval_rows_9", target="`an`.`t`")
    assert queries.passed_checks == (WARN,)
    assert queries.apart is not None and "FROM cbt_interval_rows_9 AS r" in queries.apart
    assert "LEFT SEMI JOIN `an`.`t`" in queries.apart


def test_the_one_pass_row_becomes_a_row_count_and_a_verdict_row_per_check() -> None:
    queries = check_queries([NOT_NULL, LENIENT])
    rows = verdict_rows(queries, [{"cbt_interval": 0, "cbt_rows": 4, "cbt_v0": 1, "cbt_s0": ['{"a":null}'],
                                   "cbt_v1": 0, "cbt_s1": []}], [(0, "custom", 2, [])])
    assert rows == [(0, "custom", 2, []), (0, "", 4, ()), (0, "not_null_a", 1, ['{"a":null}']), (0, "lenient", 0, [])]


def test_only_row_wise_error_checks_without_a_threshold_run_inside_the_write() -> None:
    not_null = IntervalCheck("n", "not_null", columns=("a",))
    assert checks_in_the_write([not_null, IntervalCheck("e", "expression", sql="a > 0")])
    assert not checks_in_the_write([])
    assert not checks_in_the_write([not_null, IntervalCheck("w", "not_null", "warn", columns=("b",))]), \
        "a warn check needs its count"
    assert not checks_in_the_write([IntervalCheck("t", "not_null", threshold=2, columns=("a",))])
    assert not checks_in_the_write([IntervalCheck("r", "row_count", min_rows=1)])
    assert not checks_in_the_write([IntervalCheck("s", "sql", sql="SELECT * FROM cbt_interval_rows")])
    assert checks_in_the_write([IntervalCheck("u", "unique", columns=("a",))])
    assert not checks_in_the_write([IntervalCheck("u", "unique", columns=("a",))], appends=True), \
        "unique on an append model reads the table too"


def test_a_guarded_select_raises_on_a_violating_row_and_keeps_the_selects_columns() -> None:
    sql = guarded([IntervalCheck("n", "not_null", columns=("a",)), IntervalCheck("e", "expression", sql="b > 0")],
                  "SELECT a, b FROM t")
    assert sql.startswith("SELECT * EXCEPT (cbt_interval, `cbt_f0`, `cbt_f1`) FROM (")
    assert "coalesce((`a` IS NULL), false) AS `cbt_f0`" in sql and "NOT coalesce((b > 0), false)" in sql
    assert sql.endswith("WHERE CASE WHEN `cbt_f0` OR `cbt_f1` THEN raise_error('cbt-check-failed') ELSE true END")


def test_the_rows_of_failed_intervals_are_kept_beside_the_table_replacing_an_earlier_failure_s_and_expired() -> None:
    create, first, second, expire = keep_failed("`an`.`minute`", "staged", [(0, 60, "p >= 0 AND p < 60"),
                                                                           (120, 180, "p >= 120 AND p < 180")],
                                                "an.minute:0:180", 3600)
    assert create.startswith("CREATE TABLE IF NOT EXISTS `an`.`minute__cbt_failed` USING DELTA AS SELECT *, ")
    assert create.endswith("FROM staged WHERE false")
    assert first.startswith("INSERT INTO `an`.`minute__cbt_failed` REPLACE WHERE cbt_start = 0 AND cbt_end = 60\n")
    assert "'an.minute:0:180' AS cbt_task_id" in first and first.endswith("FROM staged WHERE p >= 0 AND p < 60")
    assert "cbt_start = 120 AND cbt_end = 180" in second
    assert expire == ("DELETE FROM `an`.`minute__cbt_failed` WHERE cbt_kept_at < current_timestamp() - "
                      "make_dt_interval(0, 0, 0, 3600)")
