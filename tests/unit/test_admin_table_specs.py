"""Each admin table's columns are written once, in its spec: the DDL, the schema and rows of its appends, its reads
and the statements that write whole rows (consolidation, recording an invalidation) all follow that one list."""

from __future__ import annotations

import dataclasses
import re

import pytest

from cbt.adapters.admin_tables import protocol_sql as q
from cbt.adapters.admin_tables.audit import AUDIT
from cbt.adapters.admin_tables.columns import Column, TableSpec, select_as
from cbt.adapters.admin_tables.completions import COMPLETIONS
from cbt.adapters.admin_tables.failures import FAILURES
from cbt.adapters.admin_tables.invalidations import INVALIDATIONS
from cbt.adapters.admin_tables.retries import RETRIES
from cbt.adapters.admin_tables.scheduled import SCHEDULED

SPECS = [
    pytest.param(COMPLETIONS, id="cbt_incremental"),
    pytest.param(SCHEDULED, id="cbt_scheduled"),
    pytest.param(INVALIDATIONS, id="cbt_invalidations"),
    pytest.param(FAILURES, id="cbt_failures"),
    pytest.param(RETRIES, id="cbt_retries"),
    pytest.param(AUDIT, id="cbt_api_actions"),
]
EXTRA = Column("added_later", "BIGINT", "a column added to the spec")


def ddl_columns(statement: str) -> list[tuple[str, str]]:
    """Name and type of each column a ``CREATE TABLE`` declares, in order."""
    return re.findall(r"^  `(\w+)` (\w+)", statement, flags=re.MULTILINE)


def schema_columns(spec: TableSpec) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString().upper()) for f in spec.schema().fields]


@pytest.mark.parametrize("spec", SPECS)
def test_the_ddl_and_the_insert_schema_are_the_spec_s_columns(spec: TableSpec) -> None:
    declared = [(c.name, c.type) for c in spec.columns]
    spark_names = {"BIGINT": "BIGINT", "STRING": "STRING", "TIMESTAMP": "TIMESTAMP", "BOOLEAN": "BOOLEAN"}

    assert ddl_columns(spec.create("`db`.`t`")) == declared
    assert schema_columns(spec) == [(name, spark_names[kind]) for name, kind in declared]
    assert spec.row({name: name for name in spec.names}) == tuple(spec.names)


@pytest.mark.parametrize("spec", SPECS)
def test_a_column_added_to_the_spec_shows_in_the_ddl_the_schema_the_rows_and_the_reads(spec: TableSpec) -> None:
    grown = dataclasses.replace(spec, columns=(*spec.columns, EXTRA))

    assert ddl_columns(grown.create("`db`.`t`"))[-1] == ("added_later", "BIGINT")
    assert "`added_later` BIGINT COMMENT 'a column added to the spec'" in grown.create("`db`.`t`")
    assert grown.schema().fieldNames()[-1] == "added_later"
    assert grown.row({name: 1 for name in grown.names})[-1] == 1
    assert grown.select().endswith("`added_later`")
    with pytest.raises(ValueError, match="added_later"):
        grown.row({name: 1 for name in spec.names})


def test_a_row_names_every_column_and_no_other() -> None:
    with pytest.raises(ValueError, match="expected the columns"):
        FAILURES.row({name: None for name in [*FAILURES.names, "unknown"]})


def test_timestamps_are_read_as_unix_milliseconds_under_their_own_name() -> None:
    assert FAILURES.select().startswith("unix_millis(`failed_date_time`) AS failed_ms, `database`, `table`")


def test_a_comment_with_a_quote_stays_one_literal() -> None:
    spec = TableSpec((Column("note", "STRING", "it's \\ here"),), comment="cbt: 'quoted'")

    assert spec.create("`t`") == ("CREATE TABLE IF NOT EXISTS `t` (\n  `note` STRING COMMENT 'it\\'s \\\\ here'\n) "
                                  "USING DELTA\nCOMMENT 'cbt: \\'quoted\\''")


def written_columns(statement: str) -> list[str]:
    """The columns of the select list that writes the row (the one line with ``SELECT`` ending in a quoted alias),
    in order."""
    (line,) = [line for line in statement.splitlines() if "SELECT " in line and line.endswith("`")]
    return re.findall(r" AS `(\w+)`", line)


def test_consolidation_writes_the_completion_spec_s_columns_in_table_order() -> None:
    statement = q.consolidate_statement("`db`.`inc`", "`db`.`inv`", COMPLETIONS.names)

    assert written_columns(statement) == COMPLETIONS.names
    with pytest.raises(ValueError, match="added_later"):
        q.consolidate_statement("`db`.`inc`", "`db`.`inv`", [*COMPLETIONS.names, "added_later"])


def test_recording_an_invalidation_writes_the_spec_s_columns_each_from_its_parameter() -> None:
    statement = q.insert_invalidation_statement("`db`.`inv`", INVALIDATIONS.names)

    assert written_columns(statement) == INVALIDATIONS.names
    assert ":reason AS `reason`" in statement
    grown = q.insert_invalidation_statement("`db`.`inv`", [*INVALIDATIONS.names, "added_later"])
    assert ":added_later AS `added_later`" in grown


def test_select_as_refuses_a_column_without_a_value() -> None:
    with pytest.raises(ValueError, match="expected the columns a, b, got a"):
        select_as(["a", "b"], {"a": "1"})
