"""Which bounds queries the Delta log can answer (cbt.models.log_bounds): exactly a min and a max of one column of the
model's own table, converted by unix_seconds / unix_millis and shifted; anything else names why Spark must scan."""

from __future__ import annotations

import pytest

from cbt.models.log_bounds import Bound, LogBoundsPlan, SparkOnly, log_bounds_plan

EXAMPLE = ("SELECT\n  unix_seconds(min(slot_start_date_time)) AS min,\n"
           "  unix_seconds(max(slot_start_date_time)) + 1 AS max\nFROM `ethereum`.`beacon_blocks`")


def test_the_examples_bounds_query_reads_the_log() -> None:
    assert log_bounds_plan([EXAMPLE], "ethereum", "beacon_blocks") == LogBoundsPlan(
        "slot_start_date_time", Bound("min", "unix_seconds", 0), Bound("max", "unix_seconds", 1))


@pytest.mark.parametrize(("sql", "plan"), [
    ("SELECT min(block_number) AS min, max(block_number) + 1 AS max FROM ethereum.blocks",
     LogBoundsPlan("block_number", Bound("min", "none", 0), Bound("max", "none", 1))),
    ("select MAX(n) - 2 as MAX, min(n) as Min from blocks",
     LogBoundsPlan("n", Bound("min", "none", 0), Bound("max", "none", -2))),
    ("SELECT unix_millis(min(t)) AS min, unix_millis(max(t)) AS max FROM `ethereum`.blocks",
     LogBoundsPlan("t", Bound("min", "unix_millis", 0), Bound("max", "unix_millis", 0))),
])
def test_plain_min_and_max_of_one_column_read_the_log(sql: str, plan: LogBoundsPlan) -> None:
    assert log_bounds_plan([sql], "ethereum", "blocks") == plan


@pytest.mark.parametrize(("sql", "why"), [
    ("SELECT min(n) AS min, max(n) AS max FROM ethereum.blocks WHERE n > 10", "WHERE"),
    ("SELECT min(n) AS min, max(n) AS max FROM ethereum.blocks GROUP BY shard", "GROUP"),
    ("SELECT min(n) AS min, max(m) AS max FROM ethereum.blocks", "different columns"),
    ("SELECT min(n) AS min, max(n) AS max FROM ethereum.other", "its own table"),
    ("SELECT min(n) AS min, max(n) AS max FROM ethereum.blocks b JOIN ethereum.x ON b.n = x.n", "JOIN"),
    ("SELECT min(n + 1) AS min, max(n) AS max FROM ethereum.blocks", "not min or max of a column"),
    ("SELECT min(n) AS low, max(n) AS max FROM ethereum.blocks", "other than min and max"),
    ("SELECT min(n) AS min FROM ethereum.blocks", "both min and max"),
    ("SELECT min(n) AS min, max(n) AS max FROM (SELECT * FROM ethereum.blocks)", "its own table"),
    ("SELECT min(n) AS min, max(n) AS max FROM ethereum.blocks LIMIT 3", "LIMIT"),
])
def test_anything_else_is_scanned_by_spark_and_says_why(sql: str, why: str) -> None:
    plan = log_bounds_plan([sql], "ethereum", "blocks")
    assert isinstance(plan, SparkOnly)
    assert why in plan.reason


def test_several_statements_or_unparsable_sql_are_scanned_by_spark() -> None:
    assert isinstance(log_bounds_plan(["SET x = 1", EXAMPLE], "ethereum", "beacon_blocks"), SparkOnly)
    assert isinstance(log_bounds_plan(["SELECT min(( AS min"], "ethereum", "beacon_blocks"), SparkOnly)
