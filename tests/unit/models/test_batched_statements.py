"""What a worker runs for a batch (SPEC §5.6), by the model's batch mode — the same functions ``cbt render`` prints."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.spec import Batch, IncrementalModel, Write
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import only_writes, task_statements
from tests.unit.models.test_model_cmds import EXAMPLE_CONFIG, run
from tests.unit.scheduling.factories import inc

SELECT = "SELECT {{ bounds.start }} AS s, count(*) AS n FROM src WHERE p >= {{ bounds.start }} AND p < {{ bounds.end }}"
WHERE = "s >= {{ bounds.start }} AND s < {{ bounds.end }}"


def model(sql: str = SELECT, mode: str = "auto") -> IncrementalModel:
    built = replace(inc("an.out", imax=60), sql=sql, write=Write("replace", replace_where=WHERE))
    return replace(built, batch=Batch(mode))  # type: ignore[arg-type]


def batch(start: int = 0, end: int = 180) -> TaskContext:
    return TaskContext("an.out", 1, start, end, step=60)


def test_union_is_one_write_of_every_intervals_select_replacing_exactly_their_rows() -> None:
    (statement,) = task_statements(model(), batch(), RenderSettings())
    assert statement.startswith("INSERT INTO `an`.`out` REPLACE WHERE (s >= 0 AND s < 60) OR (s >= 60 AND s < 120) "
                                "OR (s >= 120 AND s < 180)\n(SELECT 0 AS s")
    assert statement.count("UNION ALL") == 2 and "p >= 120 AND p < 180)" in statement


def test_bounds_is_one_run_over_the_whole_range() -> None:
    (statement,) = task_statements(model(mode="bounds"), batch(), RenderSettings())
    assert "REPLACE WHERE s >= 0 AND s < 180\nSELECT 0 AS s" in statement and "UNION" not in statement


@pytest.mark.parametrize("mode", ["union", "off"])
def test_intervals_that_cannot_share_one_statement_run_in_turn(mode: str) -> None:
    """A temporary view of the bounds cannot be one view for three intervals; mode off never combines."""
    sql = "CREATE OR REPLACE TEMP VIEW v AS SELECT * FROM src WHERE p >= {{ bounds.start }};\n" + SELECT
    statements = task_statements(model(sql, mode), batch(), RenderSettings())
    assert len(statements) == 6
    assert [s.split("REPLACE WHERE ")[1][:16] for s in statements[1::2]] == ["s >= 0 AND s < 6", "s >= 60 AND s < ",
                                                                            "s >= 120 AND s <"]


def test_a_single_interval_is_unchanged() -> None:
    assert task_statements(model(), TaskContext("an.out", 1, 0, 60, step=60), RenderSettings()) == task_statements(
        model(), TaskContext("an.out", 1, 0, 60), RenderSettings())


def test_cbt_render_prints_a_batch(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["render", "analytics.block_propagation_minute", "--start", "0", "--end", "180", "--step", "60"]
    assert run(*argv, "--config", EXAMPLE_CONFIG) == 0
    out = capsys.readouterr().out
    assert "a batch of 3 intervals of 60, batch mode union" in out and out.count("UNION ALL") == 2


def test_only_a_model_whose_statements_are_our_writes_may_share_a_spark_session() -> None:
    """A statement before the SELECT (here a temporary view) or the author's own statements could change the session
    for the next model; the worker gives those models a session of their own."""
    view = "CREATE OR REPLACE TEMP VIEW v AS SELECT 1;\n" + SELECT
    assert only_writes(model(), batch(), RenderSettings())
    assert not only_writes(model(view), batch(), RenderSettings())
    own = replace(model(), write=Write("sql"))
    assert not only_writes(own, batch(), RenderSettings())
