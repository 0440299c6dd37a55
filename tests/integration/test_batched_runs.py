"""A batch on a real Spark Connect server (docs/design/scheduling.md#batched-runs): a backlog's intervals run as one job
and one Delta commit, and the table equals running them one by one — for a model whose SQL aggregates over its whole
bounds, where simply widening the bounds would not; for an append model whose keys repeat across and within intervals;
and for each kind of SQL ``auto`` proves may run over the whole range (row-wise, grouped by an hour bucket)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool, connect
from cbt.base.tasks import TaskDirection
from cbt.models.batch_choice import batch_choice, batch_mode
from cbt.models.spec import Batch, IncrementalModel, Write
from cbt.models.spec import is_whole_hour_zone as is_whole_hour_zone_of
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import first_runs, run_order
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
STEP, INTERVALS = 60, 10


def per_bounds_total(database: str, table: str, mode: str = "auto") -> IncrementalModel:
    """One row per run: the run's start, how many source rows its bounds hold and their sum."""
    sql = (f"SELECT {{{{ bounds.start }}}} AS interval_start, count(*) AS n, sum(v) AS total FROM {database}.source "
           "WHERE pos >= {{ bounds.start }} AND pos < {{ bounds.end }}")
    model = replace(inc(f"{database}.{table}", imax=STEP), sql=sql, batch=Batch(mode))  # type: ignore[arg-type]
    return replace(model, write=Write("replace", replace_where=(
        "interval_start >= {{ bounds.start }} AND interval_start < {{ bounds.end }}")))


def run(executor: SparkExecutor, model: IncrementalModel, start: int, end: int, step: int | None = None,
        direction: TaskDirection = "forward") -> None:
    asyncio.run(executor.run(model, TaskContext(model.id, int(time.time()), start, end, direction, step=step)))


def rows(spark: SparkSession, table: str) -> list[tuple[int, int, int]]:
    return sorted((r["interval_start"], r["n"], r["total"]) for r in spark.sql(f"SELECT * FROM {table}").collect())


def commits(spark: SparkSession, table: str, operation: str = "WRITE") -> int:
    return sum(1 for r in spark.sql(f"DESCRIBE HISTORY {table}").collect() if r["operation"] == operation)


def executor_for(endpoints: Endpoints, zone: str | None = None) -> SparkExecutor:
    """An executor whose sessions run in ``zone`` (``spark.sql.session.timeZone``), else the server's default."""
    def create(remote: str) -> SparkSession:
        session = connect(remote)
        if zone is not None:
            session.conf.set("spark.sql.session.timeZone", zone)
        return session

    return SparkExecutor(SessionPool(endpoints.spark_remote, create), RenderSettings(), exec_timeout_s=60)


def test_a_batch_writes_what_the_runs_one_by_one_write_in_one_commit(spark: SparkSession, spark_database: str,
                                                                     endpoints: Endpoints) -> None:
    spark.sql(f"CREATE TABLE {spark_database}.source USING DELTA AS SELECT id AS pos, id * 2 AS v "
              f"FROM range(0, {STEP * INTERVALS})")
    for table in ("one_by_one", "batched", "widened"):
        spark.sql(f"CREATE TABLE {spark_database}.{table} (interval_start BIGINT, n BIGINT, total BIGINT) "
                  "USING DELTA")
    sessions = SessionPool(endpoints.spark_remote)
    executor = SparkExecutor(sessions, RenderSettings(), exec_timeout_s=60)
    end = STEP * INTERVALS

    for start in range(0, end, STEP):
        run(executor, per_bounds_total(spark_database, "one_by_one"), start, start + STEP)
    run(executor, per_bounds_total(spark_database, "batched"), 0, end, step=STEP)
    run(executor, per_bounds_total(spark_database, "widened", mode="bounds"), 0, end, step=STEP)

    expected = rows(spark, f"{spark_database}.one_by_one")
    assert len(expected) == INTERVALS
    assert rows(spark, f"{spark_database}.batched") == expected
    assert commits(spark, f"{spark_database}.batched") == 1, "a batch is one Delta commit"
    assert rows(spark, f"{spark_database}.widened") != expected, "this model's SQL must not be run widened"

    run(executor, per_bounds_total(spark_database, "batched"), 0, end, step=STEP)  # a crash mid-batch re-runs it
    assert rows(spark, f"{spark_database}.batched") == expected


KEYED_ROWS = [  # (pos, k, v): interval [0, 60), [60, 120), [120, 180)
    (1, "a", 1), (2, "a", 2), (3, None, 3), (4, "t", 4),  # "a" twice in one interval; "t" is in the target already
    (61, "a", 5), (62, "b", 6), (63, None, 7), (64, "c", 8), (65, "c", 9),  # "a" and NULL again; "c" twice
    (121, "b", 10), (122, "d", 11), (123, "c", 12),  # "b" and "c" again
]


def keyed(database: str, table: str) -> IncrementalModel:
    sql = f"SELECT pos, k, v FROM {database}.events WHERE pos >= {{{{ bounds.start }}}} AND pos < {{{{ bounds.end }}}}"
    return replace(inc(f"{database}.{table}", imax=STEP), sql=sql, write=Write("append", unique_key=("k",)))


def keyed_rows(spark: SparkSession, table: str) -> list[tuple[int, str | None, int]]:
    return sorted((r["pos"], r["k"], r["v"]) for r in spark.sql(f"SELECT * FROM {table}").collect())


@pytest.mark.parametrize("direction", ["forward", "backfill"])
def test_an_append_batch_inserts_what_the_merges_one_by_one_insert_in_one_commit(
        spark: SparkSession, spark_database: str, endpoints: Endpoints, direction: TaskDirection) -> None:
    """Keys repeat across intervals, within one interval, as NULL, and exist in the target before: each interval's
    MERGE inserts its rows with a key not there yet (duplicates within it included), so the run order decides which
    rows of a repeated key are kept — ascending positions forward, newest first for a backfill."""
    values = ", ".join(f"({p}, {'NULL' if k is None else repr(k)}, {v})" for p, k, v in KEYED_ROWS)
    spark.sql(f"CREATE TABLE {spark_database}.events USING DELTA AS SELECT * FROM VALUES {values} AS t(pos, k, v)")
    for table in ("one_by_one", "batched", "naive"):
        spark.sql(f"CREATE TABLE {spark_database}.{table} (pos BIGINT, k STRING, v BIGINT) USING DELTA")
        spark.sql(f"INSERT INTO {spark_database}.{table} VALUES (-1, 't', 0)")
    executor = executor_for(endpoints)
    end = 3 * STEP
    one_by_one, batched = keyed(spark_database, "one_by_one"), keyed(spark_database, "batched")
    assert batch_mode(batched) == "union", batch_choice(batched).reason

    task = TaskContext(one_by_one.id, 1, 0, end, direction, step=STEP)
    for interval in run_order(task):
        run(executor, one_by_one, interval.start or 0, interval.end or 0, direction=direction)
    run(executor, batched, 0, end, step=STEP, direction=direction)

    expected = keyed_rows(spark, f"{spark_database}.one_by_one")
    assert keyed_rows(spark, f"{spark_database}.batched") == expected
    assert commits(spark, f"{spark_database}.batched", "MERGE") == 1, "a batch is one Delta commit"
    kept_a = [v for _, k, v in expected if k == "a"]
    assert kept_a == ([1, 2] if direction == "forward" else [5]), "the first run with a key inserts all its rows"

    selects = [f"SELECT pos, k, v FROM {spark_database}.events WHERE pos >= {i.start} AND pos < {i.end}"
               for i in run_order(task)]
    naive = " UNION ALL ".join(f"({select})" for select in selects)
    spark.sql(f"MERGE INTO {spark_database}.naive AS t USING ({naive}) AS s ON t.k <=> s.k "
              "WHEN NOT MATCHED THEN INSERT *").collect()
    assert keyed_rows(spark, f"{spark_database}.naive") != expected, "one MERGE of every SELECT inserts a key twice"
    assert first_runs(("k",), selects).count("UNION ALL") == 2


HOUR = 3600
T0 = 1_700_002_800
"""A whole hour."""


def hourly(database: str, table: str, sql: str, replace_where: str) -> IncrementalModel:
    model = replace(inc(f"{database}.{table}", imax=HOUR), sql=sql.replace("SRC", f"{database}.readings"))
    return replace(model, write=Write("replace", replace_where=replace_where))


BY_HOUR = ("SELECT date_trunc('HOUR', ts) AS hour, min(ts) AS first_ts, count(*) AS n, sum(v) AS total FROM SRC "
           "WHERE ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }}) GROUP BY 1")
FIRST_WHERE = "first_ts >= timestamp_seconds({{ bounds.start }}) AND first_ts < timestamp_seconds({{ bounds.end }})"
ROW_WISE = ("SELECT r.ts AS hour, r.ts AS first_ts, r.v * d.factor AS n, r.v AS total FROM SRC AS r "
            "JOIN {{ env.DIM }} AS d ON r.v % 3 = d.k "
            "WHERE r.ts >= timestamp_seconds({{ bounds.start }}) AND r.ts < timestamp_seconds({{ bounds.end }})")


@pytest.mark.parametrize(("sql", "offset", "hours", "is_whole", "zone"), [
    pytest.param(BY_HOUR, 0, 10, True, "UTC", id="group-by-hour-aligned-one-run"),
    pytest.param(BY_HOUR, HOUR // 2, 4, False, "UTC", id="group-by-hour-off-the-hour-as-union"),
    pytest.param(BY_HOUR, 0, 4, False, "Asia/Kolkata", id="group-by-hour-in-a-half-hour-zone-as-union"),
    pytest.param(ROW_WISE, HOUR // 2, 4, True, None, id="row-wise-joined-to-a-dimension-one-run"),
])
def test_what_auto_proves_gives_the_table_of_the_runs_one_by_one(
        spark: SparkSession, spark_database: str, endpoints: Endpoints, sql: str, offset: int, hours: int,
        is_whole: bool, zone: str | None) -> None:
    """``auto`` chose ``bounds`` for these models from their SQL; a batch of hours writes what the runs one by one
    write — one run over the range where the hours are the intervals', as union where they start at :30 (each
    interval's run splits two hours, which one run over the range would not: the widened table shows it)."""
    spark.sql(f"CREATE TABLE {spark_database}.readings USING DELTA AS SELECT timestamp_seconds({T0} + id * 600) AS ts,"
              f" id AS v FROM range(0, {hours * 6 + 6})")
    spark.sql(f"CREATE TABLE {spark_database}.dim USING DELTA AS SELECT id AS k, id + 10 AS factor FROM range(0, 3)")
    tables = ("one_by_one", "batched", "widened")
    for name in tables:
        spark.sql(f"CREATE TABLE {spark_database}.{name} (hour TIMESTAMP, first_ts TIMESTAMP, n BIGINT, total BIGINT)"
                  " USING DELTA")
    executor = executor_for(endpoints, zone)
    models = {t: replace(hourly(spark_database, t, sql, FIRST_WHERE), env={"DIM": f"{spark_database}.dim"})
              for t in tables}
    assert batch_mode(models["batched"]) == "bounds", batch_choice(models["batched"]).reason
    start, end = T0 + offset, T0 + offset + hours * HOUR
    is_whole_hour_zone = zone is None or is_whole_hour_zone_of(zone, 2026)
    assert batch_choice(models["batched"]).runs_whole(start, HOUR, is_whole_hour_zone) == is_whole

    for low in range(start, end, HOUR):
        run(executor, models["one_by_one"], low, low + HOUR)
    run(executor, models["batched"], start, end, step=HOUR)

    def table(name: str) -> list[tuple[object, ...]]:
        return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {spark_database}.{name}").collect())

    expected = table("one_by_one")
    assert len(expected) >= hours and table("batched") == expected
    assert commits(spark, f"{spark_database}.batched") == 1, "a batch is one Delta commit"
    if not is_whole:  # (a declared bounds runs whole whatever the zone: the author said so)
        run(executor, replace(models["widened"], batch=Batch("bounds")), start, end, step=HOUR)
        assert table("widened") != expected, "one run over hours that are not the intervals' groups them otherwise"
