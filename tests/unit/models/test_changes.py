"""What a change means (``cbt.models.changes``): its category and reasons, and which descendants it reaches."""

from __future__ import annotations

from typing import Any

import pytest

from cbt.models.changes import classify, columns_read, impact
from cbt.models.versions import normalized

BASE = "SELECT slot, sum(amount) AS total, count(*) AS n FROM src.t WHERE slot >= 0 GROUP BY slot"


def definition(sql: str | None = BASE, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "incremental", "dependencies": ["src.t"],
                           "interval": {"max": 3600, "min": 3600, "type": "timestamp"},
                           "write": {"strategy": "replace", "unique_key": [], "replace_where": None}, **fields}
    if sql is not None:
        out["sql"] = [normalized(sql)]
    return out


@pytest.mark.parametrize(("sql", "category", "reasons", "changed"), [
    pytest.param(BASE.replace("sum(amount)", "round(sum(amount), 2)"), "breaking",
                 ("column total: expression changed",), {"total"}, id="expression"),
    pytest.param(BASE.replace("count(*) AS n", "count(*) AS n, max(amount) AS top"), "non-breaking",
                 ("column top: added",), set(), id="column-added"),
    pytest.param(BASE.replace(", count(*) AS n", ""), "breaking", ("column n: removed",), {"n"}, id="column-removed"),
    pytest.param(BASE.replace("slot >= 0", "slot >= 10"), "breaking", ("filter changed",), None, id="filter"),
    pytest.param(BASE.replace("FROM src.t", "FROM src.t JOIN src.u ON t.slot = u.slot"), "breaking",
                 ("join changed",), None, id="join"),
    pytest.param(BASE.replace("GROUP BY slot", "GROUP BY slot, amount"), "breaking", ("grouping changed",), None,
                 id="grouping"),
    pytest.param("SELECT * FROM src.t WHERE slot >= 1", "breaking", None, None, id="star"),
])
def test_a_sql_change_is_classified_with_its_reason(sql: str, category: str, reasons: tuple[str, ...] | None,
                                                     changed: set[str] | None) -> None:
    change = classify("an.m", definition(), definition(sql))
    assert change.category == category
    if reasons is not None:
        assert change.reasons == reasons
    assert change.changed_columns == (None if changed is None else frozenset(changed))


def test_formatting_is_no_change_and_metadata_is_only_metadata() -> None:
    reformatted = definition(BASE.lower().replace(" ", "  "))
    assert classify("an.m", definition(), reformatted).category == "unchanged"
    assert classify("an.m", definition(), reformatted, metadata_changed=True).category == "metadata"


@pytest.mark.parametrize(("fields", "reason"), [
    pytest.param({"interval": {"max": 7200, "min": 7200, "type": "timestamp"}}, "interval changed", id="interval"),
    pytest.param({"dependencies": ["src.t", "src.u"]}, "dependencies changed", id="dependencies"),
    pytest.param({"write": {"strategy": "append", "unique_key": [], "replace_where": None}}, "write changed",
                 id="write"),
])
def test_frontmatter_that_changes_rows_is_breaking_for_every_column(fields: dict[str, Any], reason: str) -> None:
    change = classify("an.m", definition(), definition(**fields))
    assert (change.category, change.reasons, change.changed_columns) == ("breaking", (reason,), None)


def test_an_exec_model_s_change_is_breaking_and_a_new_model_is_new() -> None:
    old = definition(None, exec={"command": "python a.py", "files": {"a.py": "1"}})
    new = definition(None, exec={"command": "python a.py", "files": {"a.py": "2"}})
    assert classify("an.m", old, new).category == "breaking"
    assert classify("an.m", None, new).category == "new"


@pytest.mark.parametrize(("sql", "expected"), [
    pytest.param("SELECT p.slot, p.total * 2 AS t2 FROM an.parent AS p", {"slot", "total"}, id="qualified"),
    pytest.param("SELECT slot, total FROM an.parent WHERE n > 1", {"slot", "total", "n"}, id="one-source-unqualified"),
    pytest.param("SELECT p.slot, x.v FROM an.parent p JOIN src.x x ON x.slot = p.slot", {"slot"}, id="join"),
    pytest.param("SELECT slot, v FROM an.parent p JOIN src.x x ON x.slot = p.slot", None, id="ambiguous"),
    pytest.param("SELECT * FROM an.parent", None, id="star"),
    pytest.param("SELECT s FROM (SELECT slot AS s FROM an.parent WHERE total > 0) AS q", {"slot", "total"},
                 id="subquery"),
    pytest.param("WITH c AS (SELECT slot FROM an.parent) SELECT c.slot FROM c", {"slot"}, id="cte"),
    pytest.param("SELECT count(*) AS n FROM an.parent", set(), id="no-column"),
])
def test_the_columns_a_model_reads_of_its_parent(sql: str, expected: set[str] | None) -> None:
    read = columns_read([normalized(sql)], "an.parent")
    assert read == (None if expected is None else frozenset(expected))


ORDER = ("an.parent", "an.reads_total", "an.reads_n", "an.counts", "an.exec", "an.grandchild")
PARENTS = {"an.reads_total": ["an.parent"], "an.reads_n": ["an.parent"], "an.counts": ["an.parent"],
           "an.exec": ["an.parent"], "an.grandchild": ["an.reads_total"]}
STATEMENTS: dict[str, list[str] | None] = {
    "an.reads_total": [normalized("SELECT slot, total FROM an.parent")],
    "an.reads_n": [normalized("SELECT slot, n FROM an.parent")],
    "an.counts": [normalized("SELECT count(*) AS rows FROM an.parent")],
    "an.exec": None,
    "an.grandchild": [normalized("SELECT slot FROM an.reads_total")]}
TABLES = {m: m for m in ORDER}


def test_a_column_change_reaches_the_descendants_that_read_it_and_theirs() -> None:
    change = classify("an.parent", definition(), definition(BASE.replace("sum(amount)", "round(sum(amount), 2)")))
    result = impact({"an.parent": change}, ORDER, PARENTS, STATEMENTS, TABLES)
    assert list(result.recompute) == ["an.parent", "an.reads_total", "an.exec", "an.grandchild"]
    assert result.recompute["an.reads_total"] == ("reads total of an.parent",)
    assert set(result.unaffected) == {"an.reads_n", "an.counts"}


def test_a_filter_change_reaches_every_reader_and_an_added_column_none() -> None:
    rows = classify("an.parent", definition(), definition(BASE.replace("slot >= 0", "slot >= 5")))
    assert set(impact({"an.parent": rows}, ORDER, PARENTS, STATEMENTS, TABLES).recompute) == set(ORDER)
    added = classify("an.parent", definition(), definition(BASE.replace("AS n", "AS n, 1 AS one")))
    assert list(impact({"an.parent": added}, ORDER, PARENTS, STATEMENTS, TABLES).recompute) == ["an.parent"]
