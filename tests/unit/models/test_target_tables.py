"""Target tables the product owns (``cbt.models.target_tables``): which models, the statements, what a change may
add and what it may not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.spec import Write
from cbt.models.target_tables import create_statements, migration, owns_table
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
    assert migration(TABLE, TABLE).statements(MODEL) == []
    added = migration(TABLE, [*TABLE, ("n", "bigint")])
    assert added.statements(MODEL) == ["ALTER TABLE `an`.`hourly` ADD COLUMNS (`n` bigint)"]
    assert added.differences == ()


@pytest.mark.parametrize(("query", "difference"), [
    pytest.param([("slot", "bigint"), ("total", "decimal(38,2)")], "column total: the table has double, the query "
                 "decimal(38,2)", id="retyped"),
    pytest.param([("slot", "bigint")], "column total: not in the query", id="dropped"),
    pytest.param([("slot", "bigint"), ("n", "bigint"), ("total", "double")], "column 2: the table has total, the "
                 "query n", id="inserted-in-the-middle"),
])
def test_what_would_lose_or_misplace_data_is_reported_and_never_altered(query: list[tuple[str, str]],
                                                                        difference: str) -> None:
    needed = migration(TABLE, query)
    assert difference in needed.differences
    assert needed.statements(MODEL) == [], "no ALTER: a breaking change needs a table of its own"


def test_a_table_created_by_hand_with_other_types_gets_added_columns_and_its_differences_reported() -> None:
    needed = migration([("slot", "int"), ("total", "double")], [*TABLE, ("n", "bigint")])
    assert needed.statements(MODEL) == ["ALTER TABLE `an`.`hourly` ADD COLUMNS (`n` bigint)"]
    assert needed.differences == ("column slot: the table has int, the query bigint",)
