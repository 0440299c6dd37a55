"""Which table alone decides a bounds query's answer (``cbt.models.scan_source``): the bounds-cache skips an
incremental scan while that table is unchanged, so anything that could change the answer otherwise must give None."""

from __future__ import annotations

import pytest

from cbt.models.scan_source import sole_source_table

INCREMENTAL = """SELECT unix_seconds(min(ts)) AS min, unix_seconds(max(ts)) + 1 AS max FROM `src`.`blocks`
WHERE ts < timestamp_seconds(100) OR ts >= timestamp_seconds(200)"""


@pytest.mark.parametrize("sql", [
    INCREMENTAL,
    "SELECT min(slot) AS min, max(slot) + 1 AS max FROM src.Blocks",
    "WITH recent AS (SELECT slot FROM src.blocks WHERE slot > 5) SELECT min(slot) AS min, max(slot) AS max FROM recent",
    "SELECT (SELECT min(slot) FROM src.blocks) AS min, (SELECT max(slot) FROM src.blocks) AS max",
])
def test_a_query_over_one_table_is_decided_by_that_table(sql: str) -> None:
    assert sole_source_table([sql]) == "src.blocks"


@pytest.mark.parametrize(("sql", "why"), [
    ("SELECT min(b.slot) AS min, max(t.slot) AS max FROM src.blocks b JOIN src.txs t ON b.slot = t.slot",
     "two tables"),
    ("SELECT min(slot) AS min, max(slot) AS max FROM blocks", "no database: the session's current one"),
    ("SELECT 10 AS min, 20 AS max", "no table"),
    ("SELECT min(ts) AS min, unix_seconds(current_timestamp()) AS max FROM src.blocks", "the time now"),
    ("SELECT min(ts) AS min, unix_timestamp() AS max FROM src.blocks", "the time now"),
    ("SELECT min(ts) AS min, unix_seconds(now()) AS max FROM src.blocks", "the time now"),
    ("SELECT min(ts) AS min, max(ts) AS max FROM src.blocks WHERE rand() < 0.5", "random"),
    ("SELECT min(ts) AS min, max(ts) AS max FROM src.blocks WHERE input_file_name() LIKE '%x%'", "file names"),
    ("SELECT min(ts) AS min, max(ts) AS max FROM cat.src.blocks", "another catalog"),
    ("SELEC min(ts)", "does not parse"),
])
def test_anything_else_may_change_the_answer_so_the_query_always_runs(sql: str, why: str) -> None:
    assert sole_source_table([sql]) is None, why


def test_a_statement_before_the_query_may_change_what_it_reads() -> None:
    assert sole_source_table(["SET spark.sql.ansi.enabled=false", INCREMENTAL]) is None
