"""Write, audit, publish on a real Spark Connect server (docs/checks.md): an interval's rows are computed once,
every check runs in one query, and only the intervals no ``error`` check failed are written — in one commit."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from cbt.models.interval_checks import CheckedRun, IntervalCheck
from cbt.models.spec import Batch, IncrementalModel, Write
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import StagedRun
from cbt.worker.executor import SHARED_SESSION, SparkExecutor
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
STEP = 10
ROWS = [  # (pos, k, client, v): intervals [0, 10), [10, 20), [20, 30), [30, 40)
    (1, "a", "x", 1), (2, "b", "y", 2),
    (11, "c", "x", 3), (12, None, "x", 4),  # a NULL key
    (21, "d", "x", 5), (22, "d", "x", -6),  # a repeated key and a negative value
    (31, "e", "z", 7),  # a client not listed
]
SELECT = ("SELECT pos, k, client, v FROM {db}.events WHERE pos >= {{{{ bounds.start }}}} "
          "AND pos < {{{{ bounds.end }}}}")


def model(database: str, table: str, checks: tuple[IntervalCheck, ...], mode: str = "auto",
          append: bool = False) -> IncrementalModel:
    write = Write("append", unique_key=("pos",)) if append else Write(
        "replace", replace_where="pos >= {{ bounds.start }} AND pos < {{ bounds.end }}")
    return replace(inc(f"{database}.{table}", imax=STEP), sql=SELECT.format(db=database),  # type: ignore[arg-type]
                   write=write, batch=Batch(mode), checks=checks)


def run(executor: SparkExecutor, m: IncrementalModel, start: int, end: int, step: int | None = STEP) -> CheckedRun:
    ran = asyncio.run(executor.run(m, TaskContext(m.id, int(time.time()), start, end, step=step)))
    assert isinstance(ran, CheckedRun)
    return ran


def positions(spark: SparkSession, table: str) -> list[int]:
    return sorted(r["pos"] for r in spark.sql(f"SELECT pos FROM {table}").collect())


@pytest.fixture
def events(spark: SparkSession, spark_database: str) -> str:
    values = ", ".join(f"({p}, {'NULL' if k is None else repr(k)}, '{c}', {v})" for p, k, c, v in ROWS)
    spark.sql(f"CREATE TABLE {spark_database}.events USING DELTA AS SELECT * FROM VALUES {values} "
              "AS t(pos, k, client, v)")
    return spark_database


@pytest.fixture
def executor(endpoints: Endpoints) -> SparkExecutor:
    return SparkExecutor(SessionPool(endpoints.spark_remote), RenderSettings(), exec_timeout_s=60)


@pytest.mark.parametrize("mode", ["union", "bounds", "off"])
def test_a_batch_publishes_in_one_commit_only_the_intervals_every_error_check_passed(
        spark: SparkSession, events: str, executor: SparkExecutor, mode: str) -> None:
    checks = (IntervalCheck("not_null_k", "not_null", columns=("k",)),
              IntervalCheck("unique_k", "unique", columns=("k",)),
              IntervalCheck("accepted_values_client", "accepted_values", "warn", accepted={"client": ("x", "y")}),
              IntervalCheck("non_negative", "expression", sql="v >= 0"),
              IntervalCheck("row_count", "row_count", min_rows=1, max_rows=2))
    m = model(events, f"batched_{mode}", checks, mode)

    ran = run(executor, m, 0, 40)

    verdicts = {v.start: {r.check: (r.status, r.violations) for r in v.results} for v in ran.intervals}
    assert [v.rows for v in ran.intervals] == [2, 2, 2, 1]
    assert verdicts[0] == {"not_null_k": ("passed", 0), "unique_k": ("passed", 0),
                           "accepted_values_client": ("passed", 0), "non_negative": ("passed", 0),
                           "row_count": ("passed", 0)}
    assert verdicts[10]["not_null_k"] == ("failed", 1)
    assert verdicts[20]["unique_k"] == ("failed", 2) and verdicts[20]["non_negative"] == ("failed", 1)
    assert verdicts[30]["accepted_values_client"] == ("warned", 1), "a warn check publishes"
    assert [v.start for v in ran.failed] == [10, 20]
    sample = next(r.sample for r in ran.intervals[1].results if r.check == "not_null_k")
    assert json.loads(sample[0]) == {"pos": 12, "client": "x", "v": 4}, "the violating row, as JSON (NULLs left out)"
    assert positions(spark, m.id) == [1, 2, 31]
    writes = [r for r in spark.sql(f"DESCRIBE HISTORY {m.id}").collect() if r["operation"] == "WRITE"]
    assert len(writes) == (2 if mode == "off" else 1), "one commit per run (mode off: one per interval)"
    session = executor.sessions.session(SHARED_SESSION)
    assert session.sql("SHOW VIEWS").filter("viewName LIKE 'cbt_interval_rows%'").count() == 0, "nothing staged left"


def test_a_threshold_allows_violations_and_custom_sql_reads_the_interval_rows(
        spark: SparkSession, events: str, executor: SparkExecutor) -> None:
    checks = (IntervalCheck("null_keys", "not_null", threshold=1, columns=("k",)),
              IntervalCheck("no_z", "sql", sql="SELECT * FROM cbt_interval_rows WHERE client = 'z'"))
    m = model(events, "custom", checks)

    ran = run(executor, m, 10, 40)

    assert [(v.start, v.is_published) for v in ran.intervals] == [(10, True), (20, True), (30, False)], \
        "the custom rows are told apart by the predicates too"
    assert positions(spark, m.id) == [11, 12, 21, 22]


def test_an_accepted_interval_is_published_whatever_its_error_checks_say_and_its_failures_recorded_accepted(
        spark: SparkSession, events: str, executor: SparkExecutor) -> None:
    m = model(events, "accepted", (IntervalCheck("not_null_k", "not_null", columns=("k",)),), "bounds")

    ran = asyncio.run(executor.run(m, TaskContext(m.id, int(time.time()), 0, 40, step=STEP, accepted=((10, 20),))))

    assert isinstance(ran, CheckedRun)
    assert [(v.start, v.results[0].status, v.is_published) for v in ran.intervals] == [
        (0, "passed", True), (10, "accepted", True), (20, "passed", True), (30, "passed", True)]
    assert positions(spark, m.id) == [1, 2, 11, 12, 21, 22, 31], "the row with a NULL key is published"


def test_checks_a_single_row_fails_run_inside_the_write_and_a_failing_run_is_staged_after_committing_nothing(
        spark: SparkSession, events: str, executor: SparkExecutor) -> None:
    checks = (IntervalCheck("not_null_k", "not_null", columns=("k",)), IntervalCheck("positive", "expression",
                                                                                      sql="v > -100"))
    m = model(events, "in_the_write", checks, "bounds")

    passing = run(executor, m, 0, 10, None)
    assert [(v.start, v.rows, [r.status for r in v.results]) for v in passing.intervals] == [
        (0, None, ["passed", "passed"])], "checked inside the write: no count"
    failing = run(executor, m, 0, 40)
    assert [(v.start, v.is_published) for v in failing.intervals] == [(0, True), (10, False), (20, True), (30, True)]
    assert failing.intervals[1].results[0].sample, "staged: the violating row is sampled"

    assert positions(spark, m.id) == [1, 2, 21, 22, 31]
    writes = [r for r in spark.sql(f"DESCRIBE HISTORY {m.id}").collect() if r["operation"] == "WRITE"]
    assert len(writes) == 2, "the guarded write that met the NULL committed nothing; the staged run committed once"


def test_a_recheck_judges_the_published_rows_of_each_interval_and_writes_nothing(
        spark: SparkSession, events: str, executor: SparkExecutor) -> None:
    m = model(events, "rechecked", (IntervalCheck("not_null_client", "not_null", columns=("client",)),), "bounds")
    run(executor, m, 0, 40)
    commits = spark.sql(f"DESCRIBE HISTORY {m.id}").count()

    big = IntervalCheck("big", "expression", sql="v > 3")
    ran = asyncio.run(executor.recheck(m, TaskContext(m.id, int(time.time()), 0, 40, step=STEP), (big,)))

    assert [(v.start, v.rows, v.results[0].status, v.results[0].violations) for v in ran.intervals] == [
        (0, 2, "failed", 2), (10, 2, "failed", 1), (20, 2, "failed", 1), (30, 1, "passed", 0)]
    assert json.loads(ran.intervals[1].results[0].sample[0])["pos"] == 11
    assert spark.sql(f"DESCRIBE HISTORY {m.id}").count() == commits, "nothing written"
    session = executor.sessions.session(SHARED_SESSION)
    assert session.sql("SHOW VIEWS").filter("viewName LIKE 'cbt_interval_rows%'").count() == 0


def test_the_rows_of_failed_intervals_are_kept_for_inspection_once_per_interval(
        spark: SparkSession, events: str, endpoints: Endpoints) -> None:
    executor = SparkExecutor(SessionPool(endpoints.spark_remote), RenderSettings(), exec_timeout_s=60,
                             failed_retention_s=3600)
    m = model(events, "kept", (IntervalCheck("not_null_k", "not_null", columns=("k",)),
                               IntervalCheck("non_negative", "expression", sql="v >= 0")), "bounds")

    for _ in range(2):  # (failing again replaces what the first failure kept)
        run(executor, m, 0, 40)

    kept = spark.sql(f"SELECT pos, cbt_start, cbt_end, cbt_task_id FROM {m.id}__cbt_failed ORDER BY pos").collect()
    assert [(r["pos"], r["cbt_start"], r["cbt_end"]) for r in kept] == [
        (11, 10, 20), (12, 10, 20), (21, 20, 30), (22, 20, 30)], "every row of each failed interval, once"
    assert {r["cbt_task_id"] for r in kept} == {f"{m.id}:0:40"}


def test_unique_on_an_append_model_counts_keys_already_in_the_table(
        spark: SparkSession, events: str, executor: SparkExecutor) -> None:
    checks = (IntervalCheck("unique_client", "unique", columns=("client",)),)
    m = model(events, "appended", checks, append=True)
    spark.sql(f"CREATE TABLE {m.id} (pos BIGINT, k STRING, client STRING, v BIGINT) USING DELTA")
    spark.sql(f"INSERT INTO {m.id} VALUES (-1, 't', 'y', 0)")

    first, second = run(executor, m, 30, 40, None), run(executor, m, 0, 10, None)

    assert first.intervals[0].is_published and not second.intervals[0].is_published, "client y is in the table"
    assert positions(spark, m.id) == [-1, 31]


def test_a_relative_row_count_compares_with_the_rows_of_the_latest_published_intervals(
        spark: SparkSession, events: str, endpoints: Endpoints) -> None:
    """The history comes from the check results (``published_rows``), then from what this executor published."""
    read: list[str] = []

    def published(model_id: str) -> list[int]:
        read.append(model_id)
        return [2, 2, 2]

    executor = SparkExecutor(SessionPool(endpoints.spark_remote), RenderSettings(), exec_timeout_s=60,
                             published_rows=published)
    m = model(events, "relative", (IntervalCheck("steady", "row_count", within=1.5, of_last=3),))

    first = run(executor, m, 0, 40)
    second = run(executor, m, 30, 40, None)

    assert [(v.start, v.rows, v.is_published) for v in first.intervals] == [
        (0, 2, True), (10, 2, True), (20, 2, True), (30, 1, False)], "median 2: between 1.33 and 3 rows"
    assert not second.intervals[0].is_published and read == [m.id], "the history is read once"


def test_a_run_that_dies_between_its_checks_and_its_publish_writes_nothing_and_leaves_nothing_staged(
        spark: SparkSession, events: str, executor: SparkExecutor, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage lives in the Spark session only: a failure after the checks (the process dying, here an error)
    leaves the table as it was; the task runs again from its message."""
    m = model(events, "interrupted", (IntervalCheck("not_null_k", "not_null", columns=("k",)),))

    def dies(*_: object) -> str:
        raise RuntimeError("killed between check and publish")

    monkeypatch.setattr(StagedRun, "publish", dies)
    with pytest.raises(RuntimeError, match="killed between"):
        run(executor, m, 0, 20)

    assert not spark.catalog.tableExists(m.id) or positions(spark, m.id) == []
    session = executor.sessions.session(SHARED_SESSION)
    assert session.sql("SHOW VIEWS").filter("viewName LIKE 'cbt_interval_rows%'").count() == 0
