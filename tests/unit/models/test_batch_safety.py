"""Which batch mode ``auto`` proves from a model's SQL (``cbt.models.batch_safety``), and why."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.batch_choice import batch_choice
from cbt.models.spec import Batch, IncrementalModel, Write
from tests.unit.scheduling.factories import inc

TS = "ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }})"
POS = "pos >= {{ bounds.start }} AND pos < {{ bounds.end }}"
S_TS = "s.ts >= timestamp_seconds({{ bounds.start }}) AND s.ts < timestamp_seconds({{ bounds.end }})"
HOUR_WHERE = "hour >= timestamp_seconds({{ bounds.start }}) AND hour < timestamp_seconds({{ bounds.end }})"


def make_model(sql: str, *, interval: int = 3600, write: Write | None = None, mode: str = "auto") -> IncrementalModel:
    model = replace(inc("an.out", imax=interval), sql=sql, write=write or Write("replace", replace_where=HOUR_WHERE))
    return replace(model, batch=Batch(mode))  # type: ignore[arg-type]


@pytest.mark.parametrize(("sql", "mode", "align", "why"), [
    pytest.param(f"SELECT ts AS hour, v FROM src WHERE {TS}", "bounds", 1, "row-wise over rows filtered by the bounds",
                 id="row-wise-filtered"),
    pytest.param(f"SELECT date_trunc('HOUR', ts) AS hour, count(*) AS n FROM src WHERE {TS} GROUP BY 1", "bounds",
                 3600, "grouped by DATE_TRUNC('HOUR', ts) (buckets of 3600)", id="group-by-hour-bucket-hourly"),
    pytest.param(f"SELECT date_trunc('DAY', ts) AS hour, count(*) AS n FROM src WHERE {TS} GROUP BY 1", "union", 1,
                 "date_trunc('DAY') follows the session's time zone", id="group-by-day-hourly"),
    pytest.param(f"SELECT timestamp_seconds(floor(pos / 3600) * 3600) AS hour, count(*) AS n FROM src WHERE {POS} "
                 "GROUP BY floor(pos / 3600) * 3600", "bounds", 3600, "buckets of 3600", id="group-by-floor-bucket"),
    pytest.param(f"SELECT timestamp_seconds(pos DIV 7200 * 7200) AS hour, count(*) AS n FROM src WHERE {POS} "
                 "GROUP BY 1", "union", 1, "buckets of 7200 positions do not divide the interval (3600)",
                 id="bucket-coarser-than-the-interval"),
    pytest.param(f"SELECT ts AS hour, count(DISTINCT c) AS n FROM src WHERE {TS} GROUP BY k, ts", "bounds", 1,
                 "grouped by ts over", id="group-by-the-position-itself"),
    pytest.param(f"SELECT ts AS hour, row_number() OVER (PARTITION BY date_trunc('HOUR', ts) ORDER BY v) AS r "
                 f"FROM src WHERE {TS}", "bounds", 3600, "buckets of 3600", id="window-partitioned-by-bucket"),
    pytest.param(f"SELECT ts AS hour, row_number() OVER (PARTITION BY k ORDER BY v) AS r FROM src WHERE {TS}",
                 "union", 1, "PARTITION BY k: no pin of the position", id="window-partitioned-by-other"),
    pytest.param(f"SELECT ts AS hour, sum(v) OVER (ORDER BY ts) AS r FROM src WHERE {TS}", "union", 1,
                 "has no PARTITION BY", id="window-without-partition"),
    pytest.param("SELECT ts AS hour, v FROM src", "union", 1, "reads no source through a filter on the bounds",
                 id="unfiltered-source"),
    pytest.param(f"SELECT ts AS hour FROM src WHERE {TS} LIMIT 10", "union", 1, "LIMIT picks rows", id="limit"),
    pytest.param(f"SELECT ts AS hour FROM {{{{ ref('an.out') }}}} WHERE {TS}", "off", 1,
                 "reads the model's own table", id="self-reference-by-ref"),
    pytest.param(f"SELECT ts AS hour FROM src WHERE {TS} AND ((", "union", 1, "the SQL does not parse",
                 id="unparsable"),
    pytest.param(f"SELECT my_udf(ts) AS hour FROM src WHERE {TS}", "union", 1, "my_udf() is a function the analysis "
                 "does not know", id="udf"),
    pytest.param(f"SELECT timestamp_seconds({{{{ bounds.start }}}}) AS hour, count(*) AS n FROM src WHERE {TS}",
                 "union", 1, "an aggregate without GROUP BY", id="aggregate-over-the-whole-bounds"),
    pytest.param(f"SELECT ts AS hour, '{{{{ task.id }}}}' AS task FROM src WHERE {TS}", "union", 1,
                 "used outside a filter on a source: 'task.id' AS task", id="task-id-in-a-column"),
    pytest.param("SELECT timestamp_seconds(pos) AS hour FROM src WHERE pos BETWEEN {{ bounds.start }} AND "
                 "{{ bounds.end - 1 }}", "bounds", 1, "pos BETWEEN bounds.start AND (bounds.end - 1)",
                 id="between-end-minus-one"),
    pytest.param("SELECT timestamp_seconds(pos) AS hour FROM src WHERE pos BETWEEN {{ bounds.start }} AND "
                 "{{ bounds.end }}", "union", 1, "used outside a filter", id="between-closed-overlaps"),
    pytest.param("SELECT ts AS hour FROM src WHERE pos >= 0 - {{ bounds.start }} AND pos < 0 - {{ bounds.end }}",
                 "union", 1, "not a non-decreasing function of the bounds", id="decreasing-bound"),
    pytest.param("SELECT ts AS hour FROM src WHERE pos >= {{ bounds.start }} * -1 AND pos < {{ bounds.end }} * -1",
                 "union", 1, "not a non-decreasing function of the bounds", id="bound-times-a-negative"),
    pytest.param("SELECT ts AS hour FROM src WHERE ms >= {{ bounds.start }} * 1000 AND ms < {{ bounds.end }} * 1000",
                 "bounds", 1, "row-wise", id="bound-scaled"),
    pytest.param(f"SELECT s.ts AS hour, d.name FROM src AS s JOIN dim AS d ON s.k = d.k WHERE {S_TS}", "bounds", 1,
                 "row-wise", id="join-to-an-unfiltered-dimension"),
    pytest.param(f"SELECT s.ts AS hour, d.name FROM src AS s RIGHT JOIN dim AS d ON s.k = d.k WHERE {S_TS}",
                 "union", 1, "RIGHT JOIN of d keeps rows of a source the bounds do not filter",
                 id="dimension-kept-by-an-outer-join"),
    pytest.param(f"SELECT s.ts AS hour FROM src AS s JOIN b ON s.k = b.k WHERE {S_TS} AND "
                 f"{S_TS.replace('s.ts', 'b.ts')}", "union", 1, "without equal pins", id="two-filtered-sources"),
    pytest.param(f"SELECT s.ts AS hour FROM src AS s JOIN b ON s.k = b.k AND s.ts = b.ts WHERE {S_TS} AND "
                 f"{S_TS.replace('s.ts', 'b.ts')}", "bounds", 1, "row-wise", id="two-sources-joined-on-positions"),
    pytest.param(f"SELECT ts AS hour, d.name FROM src AS s JOIN dim AS d ON s.k = d.k WHERE {TS}", "union", 1,
                 "cannot tell which source ts belongs to", id="unqualified-column-in-a-join"),
    pytest.param(f"WITH f AS (SELECT * FROM src WHERE {TS}) SELECT hour, sum(v) AS total FROM (SELECT "
                 "date_trunc('HOUR', ts) AS hour, v FROM f) AS x GROUP BY hour", "bounds", 3600, "grouped by hour",
                 id="bucket-through-cte-and-subquery"),
    pytest.param(f"SELECT ts AS hour FROM a WHERE {TS} UNION ALL SELECT ts AS hour FROM b WHERE {TS}", "bounds", 1,
                 "row-wise", id="union-all-of-filtered-branches"),
    pytest.param(f"SELECT ts AS hour FROM a WHERE {TS} UNION ALL SELECT ts AS hour FROM b", "union", 1,
                 "a UNION ALL branch reads no source filtered", id="union-all-with-an-unfiltered-branch"),
    pytest.param(f"SELECT ts AS hour FROM a WHERE {TS} UNION SELECT ts AS hour FROM b WHERE {TS}", "union", 1,
                 "UNION (not UNION ALL)", id="union-distinct"),
    pytest.param(f"SELECT DISTINCT k AS hour FROM src WHERE {TS}", "union", 1, "DISTINCT k: no pin",
                 id="distinct-without-pin"),
    pytest.param(f"SELECT ts AS hour, rand() AS r FROM src WHERE {TS}", "union", 1, "differs from run to run",
                 id="random"),
    pytest.param("{% if bounds.start > 0 %}SELECT 1{% endif %}" + f"SELECT ts AS hour FROM src WHERE {TS}", "union",
                 1, "the template's text depends on the value of cbt_sym_v_start", id="template-branches-on-bounds"),
    pytest.param(f"CREATE TEMP VIEW v AS SELECT 1; SELECT ts AS hour FROM src WHERE {TS}", "union", 1,
                 "statements before the SELECT", id="prelude-statement"),
    pytest.param(f"SELECT date_trunc('HOUR', ts) AS hour, count(*) FROM src WHERE {TS} GROUP BY ROLLUP(1)", "union",
                 1, "ROLLUP", id="rollup"),
])
def test_auto_proves_bounds_only_where_one_run_equals_the_runs_one_by_one(sql: str, mode: str, align: int,
                                                                          why: str) -> None:
    choice = batch_choice(make_model(sql))
    assert (choice.mode, choice.align) == (mode, align), choice.reason
    assert why in choice.reason


def test_an_hour_bucket_states_its_time_zone_assumption_and_fits_a_two_hour_interval() -> None:
    choice = batch_choice(make_model(
        f"SELECT date_trunc('HOUR', ts) AS hour, count(*) AS n FROM src WHERE {TS} GROUP BY 1", interval=7200))
    assert (choice.mode, choice.align) == ("bounds", 3600)
    assert "a batch starting off a multiple of 3600 runs as union" in choice.reason
    assert "assumes the Spark session's time zone is whole hours from UTC" in choice.reason
    assert choice.runs_whole(7200, 7200) and not choice.runs_whole(7200 + 1800, 7200)


@pytest.mark.parametrize(("predicate", "mode", "why"), [
    pytest.param(HOUR_WHERE, "bounds", "write.replace_where on hour", id="one-filter"),
    pytest.param(f"chain = 'x' AND {HOUR_WHERE}", "bounds", "write.replace_where on hour", id="with-a-constant"),
    pytest.param("hour >= timestamp_seconds({{ bounds.start }})", "union", "write.replace_where is not one filter",
                 id="open-ended"),
    pytest.param("chain = 'x'", "union", "write.replace_where is not one filter", id="no-bounds"),
])
def test_a_replace_model_widens_only_a_predicate_that_tiles(predicate: str, mode: str, why: str) -> None:
    """The range's predicate must replace exactly the intervals' rows: one filter on the bounds, as the SELECT's."""
    choice = batch_choice(make_model(f"SELECT ts AS hour FROM src WHERE {TS}",
                        write=Write("replace", replace_where=predicate)))
    assert choice.mode == mode and why in choice.reason, choice.reason


@pytest.mark.parametrize(("key", "mode", "why"), [
    pytest.param(("ts", "k"), "bounds", "unique key ts", id="key-holds-the-position"),
    pytest.param(("k",), "union", "the unique key (k) holds no pin", id="key-without-the-position"),
])
def test_an_append_model_runs_whole_only_when_its_key_pins_the_interval(key: tuple[str, ...], mode: str,
                                                                        why: str) -> None:
    """One MERGE over the range would insert twice a key two intervals both have; the runs one by one once."""
    choice = batch_choice(make_model(f"SELECT ts, k, v FROM src WHERE {TS}", write=Write("append", unique_key=key)))
    assert choice.mode == mode and why in choice.reason, choice.reason
    if mode == "union":
        assert choice.reason.startswith("every interval's SELECT in one MERGE, each key from the first run")


@pytest.mark.parametrize(("model", "mode", "why"), [
    pytest.param(replace(inc("an.s"), exec="python x.py"), "off", "an exec model", id="exec"),
    pytest.param(replace(inc("an.s"), sql=f"INSERT INTO t SELECT * FROM src WHERE {TS}"), "off",
                 "write strategy sql", id="strategy-sql"),
    pytest.param(make_model(f"SELECT ts AS hour FROM {{{{ self.from }}}} WHERE {TS}"), "off",
                 "reads the model's own table", id="self-template"),
    pytest.param(make_model("SELECT 1", mode="bounds"), "bounds", "declared in the model", id="declared"),
])
def test_models_auto_does_not_analyse(model: IncrementalModel, mode: str, why: str) -> None:
    choice = batch_choice(model)
    assert choice.mode == mode and why in choice.reason
    assert choice.is_declared == (why == "declared in the model")


def test_the_choice_is_computed_once_per_model_sql() -> None:
    """``batch_mode`` is asked while planning every model: the analysis must not run again each time."""
    model = make_model(f"SELECT ts AS hour, v FROM src WHERE {TS}")
    assert batch_choice(model) is batch_choice(model)
    assert batch_choice(replace(model, sql=f"{model.sql} AND v > 0")) is not batch_choice(model)
