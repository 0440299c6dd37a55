"""Target tables the product owns (``cbt.models.target_tables``): which models, the statements, what a change may
add and what it may not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.spec import Write
from cbt.models.target_tables import SchemaConflict, create_statements, migration, owns_table
from tests.unit.scheduling.factories import inc, sched

MODEL = replace(inc("an.hourly"), sql="SELECT 1 AS a", write=Write("replace", replace_where="TRUE"))
TABLE = [("slot", "bigint"), ("total", "double")]


def test_the_product_owns_the_table_of_a_select_it_wraps_only() -> None:
    assert owns_table(MODEL)
    assert owns_table(replace(MODEL, write=Write("append", unique_key=("a",))))
    assert not owns_table(replace(MODEL, write=Write("sql")))
    assert not owns_table(replace(MODEL, sql=None, exec="python x.py"))
    assert not owns_table(replace(sched("an.report"), sql="SELECT 1"))


def test_the_table_is_created_with_the_query_s_columns() -> None:
    assert create_statements(MODEL, TABLE) == [
        "CREATE DATABASE IF NOT EXISTS `an`",
        "CREATE TABLE IF NOT EXISTS `an`.`hourly` (\n  `slot` bigint,\n  `total` double\n) USING DELTA"]


def test_columns_added_at_the_end_are_added_to_the_table() -> None:
    assert migration(MODEL, TABLE, TABLE).statements(MODEL) == []
    added = migration(MODEL, TABLE, [*TABLE, ("n", "bigint")])
    assert added.statements(MODEL) == ["ALTER TABLE `an`.`hourly` ADD COLUMNS (`n` bigint)"]


@pytest.mark.parametrize(("query", "problem"), [
    pytest.param([("slot", "bigint"), ("total", "decimal(38,2)")], "column total: the table has DOUBLE, the query "
                 "DECIMAL(38,2)", id="retyped"),
    pytest.param([("slot", "bigint")], "column total: not in the query", id="dropped"),
    pytest.param([("slot", "bigint"), ("n", "bigint"), ("total", "double")], "column 2: the table has total, the "
                 "query n", id="inserted-in-the-middle"),
])
def test_a_change_that_would_lose_or_misplace_data_is_refused(query: list[tuple[str, str]], problem: str) -> None:
    with pytest.raises(SchemaConflict) as raised:
        migration(MODEL, TABLE, query)
    assert problem in str(raised.value)
