"""What a worker runs for a batch (docs/design/scheduling.md#batched-runs), by the model's batch mode — the same
functions ``cbt render`` prints."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.batch_choice import batch_choice, batch_mode
from cbt.models.spec import Batch, IncrementalModel, Write, is_whole_hour_zone
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


def test_cbt_render_prints_a_batch_with_its_mode_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["render", "analytics.block_propagation_minute", "--start", "0", "--end", "180", "--step", "60"]
    assert run(*argv, "--config", EXAMPLE_CONFIG) == 0
    out = capsys.readouterr().out
    assert "a batch of 3 intervals of 60, batch mode bounds: one run over the whole range" in out
    assert "-- why bounds: grouped by slot_start_date_time over rows filtered by the bounds" in out
    assert "timestamp_seconds(0) AND slot_start_date_time < timestamp_seconds(180)" in out and "UNION" not in out


def test_cbt_render_explains_every_models_batch_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("render", "--explain-batching", "--config", EXAMPLE_CONFIG) == 0
    lines = capsys.readouterr().out.splitlines()
    modes = {line.split(":")[0]: line.split(": ", 1)[1].split(" ")[0] for line in lines if not line.startswith(" ")}
    assert modes == {"analytics.block_gas": "bounds", "analytics.block_propagation_five_minute": "off",
                     "analytics.block_propagation_minute": "bounds", "analytics.block_propagation_two_minute": "bounds",
                     "analytics.transactions": "bounds"}
    declared = next(i for i, line in enumerate(lines) if line.startswith("analytics.transactions:"))
    assert lines[declared + 1].startswith("  (auto would choose union — every interval's SELECT in one MERGE")
    assert "PARTITION BY tx_hash: no pin of the position" in lines[declared + 1]


KEYED = ("SELECT k, v FROM src WHERE p >= {{ bounds.start }} AND p < {{ bounds.end }}")


def keyed(mode: str = "auto") -> IncrementalModel:
    built = replace(inc("an.out", imax=60), sql=KEYED, write=Write("append", unique_key=("k", "kind")))
    return replace(built, batch=Batch(mode))  # type: ignore[arg-type]


@pytest.mark.parametrize(("direction", "order"), [
    pytest.param("forward", [0, 60, 120], id="forward-ascending"),
    pytest.param("rerun", [0, 60, 120], id="rerun-ascending"),
    pytest.param("backfill", [120, 60, 0], id="backfill-newest-first"),
])
def test_an_append_batch_is_one_merge_of_each_keys_first_run(direction: str, order: list[int]) -> None:
    """A key that two intervals both have must be inserted once, from the run that comes first; every row of that
    run is kept (the runs one by one insert duplicates within one run), NULL keys are one key (``<=>``)."""
    assert batch_mode(keyed()) == "union", "auto batches an append model (the key holds no pin: not bounds)"
    task = TaskContext("an.out", 1, 0, 180, direction, step=60)  # type: ignore[arg-type]
    (statement,) = task_statements(keyed(), task, RenderSettings())
    assert statement.startswith("MERGE INTO `an`.`out` AS t USING (\nSELECT * EXCEPT (`cbt_batch_run`, "
                                "`cbt_batch_first_run`) FROM (")
    assert statement.endswith(") AS s ON t.`k` <=> s.`k` AND t.`kind` <=> s.`kind` WHEN NOT MATCHED THEN INSERT *")
    assert "min(`cbt_batch_run`) OVER (PARTITION BY `k`, `kind`) AS `cbt_batch_first_run`" in statement
    assert "WHERE `cbt_batch_run` = `cbt_batch_first_run`" in statement
    tagged = [statement.index(f"p >= {start} AND p < {start + 60}") for start in order]
    assert tagged == sorted(tagged), "the SELECTs are tagged 0, 1, 2 in run order"
    for run_order, start in enumerate(order):
        select = statement.split(f"SELECT *, {run_order} AS `cbt_batch_run` FROM (\n")[1]
        assert select.startswith(f"SELECT k, v FROM src WHERE p >= {start} AND")


def test_an_append_model_in_mode_bounds_merges_once_over_the_range() -> None:
    (statement,) = task_statements(keyed("bounds"), batch(), RenderSettings())
    assert "p >= 0 AND p < 180" in statement and "UNION" not in statement and "cbt_batch_run" not in statement


HOURLY = ("SELECT date_trunc('HOUR', ts) AS hour, count(*) AS n FROM src "
          "WHERE ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }}) GROUP BY 1")


@pytest.mark.parametrize(("start", "is_whole_hour_zone", "is_whole"), [
    pytest.param(7200, True, True, id="aligned-one-run"),
    pytest.param(7200 + 1800, True, False, id="off-the-hour-as-union"),
    pytest.param(7200, False, False, id="session-zone-not-whole-hours-as-union"),
])
def test_bounds_over_buckets_runs_whole_only_when_the_intervals_start_on_a_bucket(
        start: int, is_whole_hour_zone: bool, is_whole: bool) -> None:
    """Intervals that start at :30 split each hour between two runs one by one; one run over the range would not.
    Nor would it where the session's hours are not the position's (a session time zone of +05:30)."""
    model = replace(inc("an.out", imax=3600), sql=HOURLY, write=Write("replace", replace_where=(
        "hour >= timestamp_seconds({{ bounds.start }}) AND hour < timestamp_seconds({{ bounds.end }})")))
    assert batch_choice(model).mode == "bounds" and batch_choice(model).align == 3600
    assert batch_choice(model).needs_whole_hour_zone
    (statement,) = task_statements(model, TaskContext("an.out", 1, start, start + 3 * 3600, step=3600),
                                   RenderSettings(is_whole_hour_zone=is_whole_hour_zone))
    assert ("UNION ALL" not in statement) == is_whole
    whole_range = f"ts >= timestamp_seconds({start}) AND ts < timestamp_seconds({start + 3 * 3600})"
    assert (whole_range in statement) == is_whole


def test_only_a_model_whose_statements_are_our_writes_may_share_a_spark_session() -> None:
    """A statement before the SELECT (here a temporary view) or the author's own statements could change the session
    for the next model; the worker gives those models a session of their own."""
    view = "CREATE OR REPLACE TEMP VIEW v AS SELECT 1;\n" + SELECT
    assert only_writes(model(), batch(), RenderSettings())
    assert not only_writes(model(view), batch(), RenderSettings())
    own = replace(model(), write=Write("sql"))
    assert not only_writes(own, batch(), RenderSettings())


@pytest.mark.parametrize(("zone", "expected"), [
    pytest.param("UTC", True, id="utc"),
    pytest.param("Europe/Berlin", True, id="whole-hours-with-daylight-saving"),
    pytest.param("+02:00", True, id="whole-hour-offset"),
    pytest.param("Asia/Kolkata", False, id="half-hour-zone"),
    pytest.param("America/St_Johns", False, id="half-hour-zone-with-daylight-saving"),
    pytest.param("+05:45", False, id="quarter-hour-offset"),
    pytest.param("Nowhere/Atlantis", False, id="unknown-zone-is-not-trusted"),
])
def test_which_session_time_zones_keep_date_trunc_hours_on_the_position_s_hours(zone: str, expected: bool) -> None:
    assert is_whole_hour_zone(zone, 2026) is expected
