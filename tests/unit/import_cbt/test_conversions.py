"""The pieces of ``cbt import-cbt``, case by case: Go template actions as Jinja, ClickHouse SQL as Spark SQL, and
what is reported instead of converted."""

from __future__ import annotations

import pytest

from cbt.import_cbt.clickhouse import transpile
from cbt.import_cbt.gotemplate import Scope, convert, to_jinja


def _scope(kind: str = "incremental") -> Scope:
    return Scope("m.sql", 10, kind, frozenset({"NETWORK"}), {"{{external}}": "raw"}, ("raw.blocks",))


@pytest.mark.parametrize(
    ("go", "jinja"),
    [
        pytest.param("{{ .self.database }}.{{ .self.table }}", "{{ self.database }}.{{ self.table }}", id="self"),
        pytest.param("{{ .bounds.start }}-{{ .bounds.end }}", "{{ bounds.start }}-{{ bounds.end }}", id="bounds"),
        pytest.param("{{ .task.start }}", "{{ task.start }}", id="task-start"),
        pytest.param(
            '{{ index .dep "{{external}}" "blocks" "helpers" "from" }}',
            '{{ dep["raw"]["blocks"].from }}',
            id="dep-placeholder-from",
        ),
        pytest.param(
            "{{ .env.NETWORK }} {{ .env.OTHER }}",
            '{{ env.NETWORK }} {{ env.get("OTHER", "") }}',
            id="env-known-and-unset",
        ),
        pytest.param(
            "{{ if .clickhouse.cluster }}ON CLUSTER x{{ else }}local{{ end }}", "local", id="cluster-branch-never-taken"
        ),
        pytest.param(
            '{{ if eq .env.NETWORK "a" "b" }}y{{ else if not .env.NETWORK }}n{{ end }}',
            '{% if (env.NETWORK == "a" or env.NETWORK == "b") %}y{% elif (not env.NETWORK) %}n{% endif %}',
            id="if-elif-eq",
        ),
        pytest.param(
            '{{ .env.NETWORK | upper | printf "%s!" }}', '{{ ("%s!"|format((env.NETWORK|upper))) }}', id="pipeline"
        ),
        pytest.param(
            '{{ $x := default "d" .env.NETWORK }}{{ $x }}',
            '{% set x = (env.NETWORK|default("d", true)) %}{{ x }}',
            id="variable-default",
        ),
        pytest.param("a  {{- .bounds.start -}}  b{{/* a comment */}}", "a{{ bounds.start }}b", id="trim-comment"),
    ],
)
def test_go_template_actions_become_jinja(go: str, jinja: str) -> None:
    scope = _scope()
    assert to_jinja(convert(go, scope)) == jinja
    assert scope.notes == []


@pytest.mark.parametrize(
    ("go", "what"),
    [
        pytest.param("{{ now }}", "template function now", id="unknown-function"),
        pytest.param(
            "{{ .bounds.start }}",
            "{{ .bounds.start }} is not a template variable of a scheduled model",
            id="no-bounds-when-scheduled",
        ),
        pytest.param('{{ template "x" }}', "{{ template }}", id="named-template"),
        pytest.param(
            "-- uses {{ .self.table }}\nSELECT 1", "SQL comments holding template actions", id="action-in-comment"
        ),
    ],
)
def test_what_has_no_equivalent_is_reported_at_its_line(go: str, what: str) -> None:
    scope = _scope("scheduled")
    convert(go, scope)
    assert [(n.line, n.what) for n in scope.notes] == [(10, what)]


@pytest.mark.parametrize(
    ("clickhouse", "spark"),
    [
        pytest.param("fromUnixTimestamp(x)", "TIMESTAMP_SECONDS(x)", id="fromUnixTimestamp"),
        pytest.param("toUnixTimestamp(x)", "UNIX_TIMESTAMP(x)", id="toUnixTimestamp"),
        pytest.param(
            "toStartOfInterval(t, INTERVAL 2 MINUTE)",
            "TIMESTAMP_SECONDS(FLOOR(UNIX_TIMESTAMP(t) / 120) * 120)",
            id="toStartOfInterval",
        ),
        pytest.param("toStartOfHour(t)", "DATE_TRUNC('HOUR', t)", id="toStartOfHour"),
        pytest.param("count()", "COUNT(*)", id="count"),
        pytest.param("countDistinct(v)", "COUNT(DISTINCT v)", id="countDistinct"),
        pytest.param("argMax(v, t)", "MAX_BY(v, t)", id="argMax"),
        pytest.param("quantile(0.9)(v)", "PERCENTILE(v, 0.9)", id="quantile"),
        pytest.param("toDecimal128(v, 8)", "CAST(v AS DECIMAL(38, 8))", id="toDecimal128"),
        pytest.param("now64(3)", "CURRENT_TIMESTAMP()", id="now64"),
        pytest.param("yesterday()", "DATE_SUB(CURRENT_DATE(), 1)", id="yesterday"),
        pytest.param("toDate(toDateTime(x))", "TO_DATE(CAST(x AS TIMESTAMP))", id="nested"),
    ],
)
def test_clickhouse_functions_become_spark_sql(clickhouse: str, spark: str) -> None:
    scope = _scope()
    statements, _ = transpile(convert(f"SELECT {clickhouse} AS c FROM t", scope), scope)
    assert [s.sql for s in statements] == [f"SELECT\n  {spark} AS c\nFROM t"]
    assert scope.notes == []


def test_an_if_block_is_transpiled_branch_by_branch() -> None:
    scope = _scope("external")
    go = (
        "SELECT min(p) AS min, max(p) AS max FROM {{ .self.helpers.from }} FINAL\n"
        "{{ if .cache.is_incremental_scan }}WHERE p > {{ .cache.previous_max }}{{ end }}"
    )
    statements, _ = transpile(convert(go, scope), scope)
    assert statements[0].sql == (
        "SELECT\n  MIN(p) AS min,\n  MAX(p) AS max\nFROM {{ self.from }}\n"
        "{% if cache.is_incremental_scan %}\nWHERE\n  p > {{ cache.previous_max }}\n"
        "{% endif %}"
    )
    assert [n.what for n in scope.notes] == ["FINAL"]


def test_jinja_delimiters_in_cbts_literal_sql_stay_literal() -> None:
    """``{#`` and ``{%`` are text to Go's templates: in a converted model they must not open a Jinja comment or tag
    (the comment swallowed the rest of the query; a tag ran as code). Rendered, the SQL holds the same characters."""
    import jinja2

    go = "SELECT '{# x' AS a, '{% raw %}' AS b, {{ .bounds.start }} AS c FROM t"
    scope = _scope()
    parts = convert(go, scope)
    rendered = jinja2.Environment().from_string(to_jinja(parts)).render(bounds={"start": 7})
    assert rendered == "SELECT '{# x' AS a, '{% raw %}' AS b, 7 AS c FROM t"
    statements, _ = transpile(parts, scope)
    sql = "\n".join(s.sql for s in statements)
    assert jinja2.Environment().from_string(sql).render(bounds={"start": 7}) == (
        "SELECT\n  '{# x' AS a,\n  '{% raw %}' AS b,\n  7 AS c\nFROM t")
