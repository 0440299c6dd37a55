"""The durable record: the Delta admin tables on a real Spark Connect server, and — for the protocol's rules
(live parts, epochs, consolidation) — its in-memory twin, held to the same expectations."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.admin_tables.completions import COMPLETIONS
from cbt.adapters.admin_tables.session import AdminSession
from cbt.adapters.admin_tables.versions import ADDED_COLUMNS, VERSIONS
from cbt.adapters.delta_admin import AdminTableError, DeltaAdmin
from cbt.adapters.spark import connect
from cbt.contract.messages import TaskFailed
from cbt.models.deployment import DeployedVersion, VersionRecord
from cbt.planning import hot_index
from cbt.scheduling import coverage as cov
from cbt.scheduling.protocol import UNKNOWN_STEP, Piece, subtract
from cbt.scheduling.task_runs import TaskRun, compress
from cbt.state.admin_records import CheckedInterval, CompletedInterval, InvalidationRecord, RetriedAttempt, ScheduledRun
from cbt.state.ports import CheckFilter, CheckResultsRecord, DurableRecord
from tests.conftest import Endpoints
from tests.twins.memory_record import MemoryCheckResults, MemoryRecord, MemoryVersions
from tests.twins.memory_state import MemoryCoverage

M = "an.hourly"
OTHER = "an.daily"


def warehouse_of(spark: SparkSession, database: str) -> str:
    """The folder the catalog keeps ``database``'s managed tables in, less the ``<database>.db`` part."""
    rows = spark.sql(f"DESCRIBE DATABASE EXTENDED {database}").collect()
    location = str(next(r["info_value"] for r in rows if r["info_name"] == "Location"))
    return location.removeprefix("file:").rstrip("/").rsplit("/", 1)[0]


def open_admin(spark: SparkSession, database: str, backend: str, **kwargs: Any) -> DeltaAdmin:
    """``DeltaAdmin`` over ``database``'s admin tables, through Spark or over their files (``backend``)."""
    files: tuple[str, dict[str, str]] | None = (warehouse_of(spark, database), {}) if backend == "files" else None
    return DeltaAdmin(spark, (database, "cbt_incremental"), (database, "cbt_scheduled"),
                      (database, "cbt_invalidations"), files=files, **kwargs)


@pytest.fixture(params=["spark", "files"])
def admin(request: pytest.FixtureRequest, spark: SparkSession, spark_database: str) -> Iterator[DeltaAdmin]:
    """Real Delta tables in a fresh database, read and written through Spark or as files with delta-rs (tests using
    it are integration tests)."""
    tables = open_admin(spark, spark_database, request.param)
    tables.ensure_tables()
    tables.wait_registered()  # (tests read the tables through Spark SQL too)
    yield tables


@pytest.fixture(params=[pytest.param("memory", id="memory"),
                        pytest.param("files-alone", id="delta-files-alone"),
                        pytest.param("spark", id="delta-spark", marks=pytest.mark.integration),
                        pytest.param("files", id="delta-files", marks=pytest.mark.integration)])
def record(request: pytest.FixtureRequest, tmp_path: Path) -> DurableRecord:
    if request.param == "memory":
        return MemoryRecord()
    if request.param == "files-alone":  # delta-rs alone: the tables' files in a folder, no Spark and no catalog
        alone = DeltaAdmin(None, ("an", "cbt_incremental"), ("an", "cbt_scheduled"), ("an", "cbt_invalidations"),
                           files=(str(tmp_path), {}))
        alone.ensure_tables()
        return alone
    spark, database = request.getfixturevalue("spark"), request.getfixturevalue("spark_database")
    admin = open_admin(spark, database, request.param)
    admin.ensure_tables()
    admin.wait_registered()
    return admin


def done(start: int, end: int, *, model: str = M, seq: int = 0, version: str | None = None) -> CompletedInterval:
    return CompletedInterval(model, start, end - start, f"{model}:{start}:{end - start}", invalidation_seq=seq,
                             task_interval=end - start, version=version)


def invalidation(inv_id: str, affected: dict[str, list[tuple[int, int]]]) -> InvalidationRecord:
    first = min(s for ranges in affected.values() for s, _ in ranges)
    last = max(e for ranges in affected.values() for _, e in ranges)
    return InvalidationRecord(
        id=inv_id,
        model=next(iter(affected)),
        start=first,
        end=last,
        reason="reorg",
        source="test",
        metadata={"blocks": [first, last], "note": "it's \\ quoted"},
        affected={m: compress(rs) for m, rs in affected.items()},
        received_at_ms=1_700_000_000_000 + len(inv_id),
    )


def commits(spark: SparkSession, database: str, table: str = "cbt_incremental") -> int:
    return len(spark.sql(f"DESCRIBE HISTORY {database}.{table}").collect())


def stored_rows(spark: SparkSession, database: str, model: str = M) -> int:
    db, table = model.split(".")
    query = f"SELECT count(*) AS n FROM {database}.cbt_incremental WHERE `database` = '{db}' AND `table` = '{table}'"
    return int(spark.sql(query).collect()[0]["n"])


@pytest.mark.integration
def test_ensure_tables_is_idempotent(admin: DeltaAdmin, spark: SparkSession, spark_database: str) -> None:
    admin.ensure_tables()

    tables = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {spark_database}").collect()}
    assert tables == {"cbt_incremental", "cbt_scheduled", "cbt_invalidations", "cbt_failures", "cbt_retries"}
    detail = spark.sql(f"DESCRIBE DETAIL {spark_database}.cbt_incremental").collect()[0]
    assert detail["format"] == "delta"
    assert list(detail["partitionColumns"]) == ["database", "table"]


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["spark", "files"])
def test_a_table_from_before_task_boundaries_gets_the_column_and_its_rows_read_as_before(
    spark: SparkSession, spark_database: str, backend: str
) -> None:
    old = ", ".join(c.ddl() for c in COMPLETIONS.columns if c.name not in ("task_interval", "model_version"))
    spark.sql(f"CREATE TABLE {spark_database}.cbt_incremental ({old}) USING DELTA PARTITIONED BY (`database`, `table`)")
    spark.sql(f"INSERT INTO {spark_database}.cbt_incremental VALUES "
              "(now(), 'an', 'hourly', 0, 600, 't1', 'consolidated', 0, 'consolidated', 0), "
              "(now(), 'an', 'hourly', 600, 100, 't2', 'forward', 0, 'w', 0)")
    admin = open_admin(spark, spark_database, backend)

    admin.ensure_tables()
    admin.ensure_tables()

    assert {"task_interval", "model_version"} <= set(spark.table(f"{spark_database}.cbt_incremental").columns)
    assert admin.live_pieces([M], (0, 1000)) == {M: [Piece((0, 600), UNKNOWN_STEP), Piece((600, 700), 100)]}
    admin.record_completed([done(700, 800)])
    assert admin.coverage([M]) == {M: ((0, 800),)}


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["spark", "files"])
def test_ensure_tables_names_the_missing_columns_of_a_foreign_table(spark: SparkSession, spark_database: str,
                                                                    backend: str) -> None:
    spark.sql(f"CREATE TABLE {spark_database}.legacy (`database` STRING, `table` STRING, position BIGINT) USING DELTA")
    files: tuple[str, dict[str, str]] | None = (warehouse_of(spark, spark_database), {}) if backend == "files" \
        else None
    tables = DeltaAdmin(spark, incremental=(spark_database, "legacy"), scheduled=(spark_database, "s"),
                        invalidations=(spark_database, "i"), files=files)  # fmt: skip

    with pytest.raises(AdminTableError, match=r"legacy`?: missing columns updated_date_time, interval, task_id"):
        tables.ensure_tables()


def test_a_batch_is_one_commit_and_coverage_is_merged_ranges(
    admin: DeltaAdmin, spark: SparkSession, spark_database: str
) -> None:
    before = commits(spark, spark_database)
    admin.record_completed([done(0, 10), done(20, 30), done(10, 20), done(40, 50), done(0, 60, model=OTHER)])
    admin.record_completed([])

    assert commits(spark, spark_database) == before + 1
    assert admin.coverage([M, OTHER, "an.none"]) == {M: ((0, 30), (40, 50)), OTHER: ((0, 60),), "an.none": ()}
    assert admin.coverage() == {M: ((0, 30), (40, 50)), OTHER: ((0, 60),)}


@pytest.mark.integration
def test_consolidation_keeps_coverage_identical_and_reduces_rows(admin: DeltaAdmin, spark: SparkSession,
                                                                   spark_database: str) -> None:  # fmt: skip
    tasks = [done(0, 10), done(10, 20), done(20, 30), done(5, 15), done(30, 35), done(35, 40), done(100, 110)]
    admin.record_completed(tasks)
    admin.record_completed([done(0, 10, model=OTHER)])
    covered = admin.coverage([M, OTHER])

    result = {c.model: (c.rows_before, c.rows_after) for c in admin.consolidate()}

    assert result == {M: (7, 5), OTHER: (1, 1)}
    assert admin.coverage([M, OTHER]) == covered == {M: ((0, 40), (100, 110)), OTHER: ((0, 10),)}
    assert stored_rows(spark, spark_database) == 5
    pieces = admin.live_pieces([M], (0, 1000))[M]
    assert {t for p in pieces for t in p.tasks((0, 1000))} == {t.range for t in tasks}, "every task boundary kept"
    unchanged = commits(spark, spark_database)
    assert [(c.rows_before, c.rows_after) for c in admin.consolidate(M)] == [(5, 5)]
    assert commits(spark, spark_database) == unchanged


@pytest.mark.integration
def test_a_row_appended_after_planning_survives_the_rewrite(admin: DeltaAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    admin.record_completed([done(0, 10), done(10, 20)])
    completions = admin.tables.completions
    rewrite = completions._consolidate_one
    appended: list[int] = []

    def append_then_rewrite(*args: Any) -> Any:
        if not appended:  # after the rows were counted (read, for the files), before the rewrite commits
            admin.record_completed([done(50, 60)])
            appended.append(1)
        return rewrite(*args)

    monkeypatch.setattr(completions, "_consolidate_one", append_then_rewrite)
    admin.consolidate(M)

    assert admin.coverage([M]) == {M: ((0, 20), (50, 60))}
    assert [p.range for p in admin.live_pieces([M], (0, 100))[M]] == [(0, 20), (50, 60)], "merged, and kept"


def test_consolidating_a_model_without_rows_does_nothing_and_says_so(record: DurableRecord) -> None:
    record.record_completed([done(0, 10, model=OTHER)])
    assert record.consolidate(M) == []


def test_an_invalidation_cuts_exactly_its_ranges_from_older_rows(record: DurableRecord) -> None:
    record.record_completed([done(0, 10), done(10, 20), done(20, 30), done(10, 20, model=OTHER)])

    stored = record.record_invalidation(invalidation("inv-1", {M: [(12, 14)], OTHER: [(0, 5)]}))

    assert stored.seqs == {M: 1, OTHER: 1}
    assert record.coverage([M, OTHER]) == {M: ((0, 12), (14, 30)), OTHER: ((10, 20),)}
    assert record.invalidation_seqs([M, OTHER, "an.none"]) == {M: 1, OTHER: 1}


def test_rows_computed_at_or_after_the_epoch_are_whole(record: DurableRecord) -> None:
    record.record_invalidation(invalidation("inv-1", {OTHER: [(0, 1)]}))
    assert record.record_invalidation(invalidation("inv-2", {M: [(0, 100)]})).epoch == 2

    record.record_completed([done(0, 10, seq=1), done(10, 20, seq=2), done(20, 30, seq=3), done(30, 40, seq=1)])

    assert record.coverage([M]) == {M: ((10, 30),)}


def test_epochs_grow_and_a_redelivered_event_keeps_its_first(record: DurableRecord) -> None:
    """Scenario 4: the epoch comes from the durable record, so Redis losing its marker cannot make it drift."""
    first = record.record_invalidation(invalidation("inv-a", {M: [(0, 10), (20, 30)], OTHER: [(0, 60)]}))
    second = record.record_invalidation(invalidation("inv-bb", {M: [(5, 6)]}))
    again = record.record_invalidation(invalidation("inv-a", {M: [(500, 600)]}))

    assert (first.epoch, second.epoch) == (1, 2)
    assert again == first, "as first recorded: same epoch, same ranges"
    assert record.invalidation_seqs() == {M: 2, OTHER: 1}


@pytest.mark.integration
def test_concurrent_invalidators_get_distinct_epochs(admin: DeltaAdmin, spark_database: str,
                                                     endpoints: Endpoints) -> None:
    """Epochs are allocated inside the recording commit: Delta must serialise two sessions recording at once."""
    sessions = [connect(endpoints.spark_remote) for _ in range(3)]
    backend = "files" if admin.is_files else "spark"
    try:
        writers = [open_admin(session, spark_database, backend, conflict_retries=20) for session in sessions]
        with ThreadPoolExecutor(len(writers)) as pool:
            stored = list(pool.map(lambda i: writers[i % len(writers)].record_invalidation(
                invalidation(f"inv-{i}", {M: [(i, i + 1)]})), range(6)))
    finally:
        for session in sessions:
            session.stop()
    assert sorted(r.epoch for r in stored) == [1, 2, 3, 4, 5, 6]
    assert {r.id: r.epoch for r in admin.invalidations(limit=10)} == {r.id: r.epoch for r in stored}


def test_consolidation_inside_the_invalidation_window_keeps_what_lies_outside(record: DurableRecord) -> None:
    """Scenario 3: a consolidated row overlapping an invalidated range loses that range only, then and later."""
    record.record_completed([done(0, 10, seq=0), done(10, 20, seq=0), done(20, 30, seq=0), done(30, 40, seq=0)])
    record.record_invalidation(invalidation("inv-1", {M: [(10, 20)]}))
    assert record.coverage([M]) == {M: ((0, 10), (20, 40))}

    assert [(c.rows_before, c.rows_after) for c in record.consolidate(M)] == [(4, 2)]
    assert record.coverage([M]) == {M: ((0, 10), (20, 40))}

    record.record_invalidation(invalidation("inv-2", {M: [(30, 40)]}))
    assert record.coverage([M]) == {M: ((0, 10), (20, 30))}
    record.consolidate(M)
    assert record.coverage([M]) == {M: ((0, 10), (20, 30))}


def test_every_row_says_which_version_computed_it_and_consolidation_never_merges_two_versions(
        record: DurableRecord) -> None:
    """An in-place change re-runs [10, 30) in version b: the record says which ranges each version computed (and
    what was recorded before versions), before and after consolidation."""
    record.record_completed([done(0, 10, version="a"), done(10, 20, version="a"), done(20, 30, version="a"),
                             done(30, 40, version="b"), done(40, 50)])
    record.record_invalidation(invalidation("inv-1", {M: [(10, 30)]}))
    record.record_completed([done(10, 20, seq=1, version="b"), done(20, 30, seq=1, version="b")])
    expected = {M: {"a": ((0, 10),), "b": ((10, 40),), None: ((40, 50),)}, OTHER: {}}
    assert record.version_coverage([M, OTHER]) == expected

    assert [(c.rows_before, c.rows_after) for c in record.consolidate(M)] == [(7, 3)]

    assert record.version_coverage([M, OTHER]) == expected
    assert record.coverage([M]) == {M: ((0, 50),)}


def test_a_switched_build_s_rows_replace_the_model_s_under_the_model_s_epoch(record: DurableRecord) -> None:
    """The model covered [0, 60) in version a (one batch of tasks of 10, one invalidation); its build covered [0, 50)
    in version b (tasks of 25, two invalidations of its own). Adopted: the model's rows are the build's tasks in
    version b but for the task over the head [55, 60) the build left, kept so that its re-run finds it; an
    invalidation the model records next still cuts the adopted rows."""
    build = f"{M}__cbt_v2"
    record.record_completed([CompletedInterval(M, 0, 60, "batch", task_interval=10, version="a")])
    record.record_invalidation(invalidation("inv-m", {M: [(0, 10)]}))
    record.record_completed([done(0, 10, seq=1, version="a")])
    for n, event in enumerate(("inv-b1", "inv-b2"), start=1):
        record.record_invalidation(invalidation(event, {build: [(100 + n, 101 + n)]}))
    record.record_completed([done(0, 25, model=build, seq=2, version="b"),
                             done(25, 50, model=build, seq=2, version="b")])

    record.adopt(M, build, (55, 60))

    assert record.version_coverage([M]) == {M: {"b": ((0, 50),), "a": ((50, 60),)}}
    assert record.live_pieces([M], (0, 100)) == {M: [Piece((0, 50), 25), Piece((50, 60), 10)]}
    record.record_invalidation(invalidation("inv-m2", {M: [(25, 50)]}))
    assert record.coverage([M]) == {M: ((0, 25), (50, 60))}, \
        "the adopted rows carry the model's epoch (1), not the build's"
    assert record.coverage([build]) == {build: ((0, 50),)}, "the build's own rows are left to be dropped with it"


def test_consolidation_keeps_every_task_boundary_so_re_runs_stay_exact(record: DurableRecord) -> None:
    """Scenario 10: tasks started at 17 (where the data started); after consolidation an invalidation must still
    find [317, 617), not a whole merged row nor the model's grid."""
    record.record_completed([done(17, 317), done(317, 617), done(617, 917), done(917, 977)])
    record.record_invalidation(invalidation("inv-1", {M: [(317, 617)]}))
    record.record_completed([done(317, 617, seq=1)])  # its re-run

    assert [(c.rows_before, c.rows_after) for c in record.consolidate(M)] == [(5, 2)]

    assert record.live_pieces([M, OTHER], (0, 2000)) == {M: [Piece((17, 917), 300), Piece((917, 977), 60)],
                                                         OTHER: []}
    assert record.live_pieces([M], (600, 620)) == {M: [Piece((17, 917), 300)]}
    assert record.invalidated_ranges([M, OTHER]) == {M: (TaskRun(317, 617, 300),)}
    record.record_invalidation(invalidation("inv-2", {M: [(617, 917)]}))
    assert record.live_pieces([M], (0, 2000)) == {M: [Piece((17, 617), 300), Piece((917, 977), 60)]}


def test_rebuilding_a_hot_index_restores_the_live_parts(record: DurableRecord) -> None:
    record.record_completed([done(0, 100), done(100, 200, model=OTHER), done(200, 300)])
    record.record_invalidation(invalidation("inv-1", {M: [(40, 60), (200, 300)]}))
    record.record_completed([done(200, 300, seq=1)])
    index = MemoryCoverage(built=False)

    assert hot_index.rebuild(record, index, [M, OTHER], [], built_at=1) == {M: 3, OTHER: 1}

    assert index.coverages([M, OTHER]) == {M: ((0, 40), (60, 100), (200, 300)), OTHER: ((100, 200),)}
    assert index.reruns([M, OTHER]) == {M: ((40, 60),), OTHER: ()}, "[200, 300) ran again since"
    assert [index.invalidation_seq(m) for m in (M, OTHER)] == [1, 0]
    assert not index.record_completed(M, (40, 60), 0), "a task that read the data before the rebuild"


@pytest.mark.integration
def test_every_scheduled_run_is_kept_and_the_latest_is_found(admin: DeltaAdmin) -> None:
    runs = [
        ScheduledRun("ref.rates", 3600, "ref.rates:@3600", "success", duration_ms=5, updated_at_ms=3_601_000),
        ScheduledRun("ref.rates", 7200, "ref.rates:@7200", "failed", error="boom 'x'", updated_at_ms=7_201_000),
        ScheduledRun("ref.rates", 7200, "ref.rates:@7200", "success", updated_at_ms=7_260_000),
        ScheduledRun("ref.report", 3600, "ref.report:@3600", "failed", error="e", updated_at_ms=3_602_000),
    ]
    for run in runs:
        admin.record_scheduled_run(run)

    assert admin.last_scheduled_runs(["ref.rates", "ref.report", "ref.none"]) == {
        "ref.rates": runs[2],
        "ref.report": runs[3],
    }
    assert admin.scheduled_runs("ref.rates", limit=2) == [runs[2], runs[1]]
    earlier = ScheduledRun("ref.report", 1800, "ref.report:@1800", "success", updated_at_ms=1_801_000)
    admin.record_scheduled_run(earlier)
    assert admin.last_scheduled_runs(["ref.rates", "ref.report"], successful_only=True) == {
        "ref.rates": runs[2],
        "ref.report": earlier,
    }


@pytest.mark.integration
def test_every_failure_is_kept_newest_first_with_its_error(admin: DeltaAdmin) -> None:
    failures = [
        TaskFailed(task_id=f"{M}:0:60", model=M, position=0, interval=60, attempts=3, error="boom 'x'\nline 2",
                   failed_at_ms=1_000, worker="w1"),
        TaskFailed(task_id="ref.rates:@3600", model="ref.rates", scheduled_unix=3600, attempts=3, error="e",
                   failed_at_ms=2_000, worker="w2"),
        TaskFailed(task_id=f"{M}:0:60", model=M, position=0, interval=60, attempts=0, error="no model",
                   failed_at_ms=3_000),
    ]
    for failed in failures:
        admin.record_failure(failed)

    assert admin.failures() == [failures[2], failures[1], failures[0]]
    assert admin.failures([M], limit=1) == [failures[2]]
    assert admin.failures(["an.none"]) == []


@pytest.mark.integration
def test_every_retried_attempt_is_kept_newest_first_with_its_error_and_duration(admin: DeltaAdmin) -> None:
    attempts = [
        RetriedAttempt(M, f"{M}:0:60", 1, "boom 'x'\nline 2", position=0, interval=60, direction="backfill",
                       worker="w1", duration_ms=1_200, failed_at_ms=1_000),
        RetriedAttempt(M, f"{M}:0:60", 2, "boom again", position=0, interval=60, direction="backfill",
                       worker="w1", duration_ms=900, failed_at_ms=2_000),
        RetriedAttempt("ref.rates", "ref.rates:@3600", 1, "e", scheduled_unix=3600, direction="scheduled",
                       failed_at_ms=3_000),
    ]
    for attempt in attempts:
        admin.record_retry(attempt)

    assert admin.retries() == [attempts[2], attempts[1], attempts[0]]
    assert admin.retries([M], limit=1) == [attempts[1]]
    assert admin.retries(["an.none"]) == []


@pytest.mark.integration
def test_rebuilding_the_hot_index_restores_coverage_and_scheduled_runs(admin: DeltaAdmin) -> None:
    admin.record_completed([done(0, 10), done(10, 20), done(40, 50), done(0, 60, model=OTHER)])
    admin.record_scheduled_run(ScheduledRun("ref.rates", 3600, "ref.rates:@3600", "success", updated_at_ms=1))
    admin.record_scheduled_run(ScheduledRun("ref.report", 3600, "ref.report:@3600", "failed", updated_at_ms=2))
    index = MemoryCoverage(built=False)  # an emptied Redis (the contract suite holds the two to one behaviour)

    counts = hot_index.rebuild(admin, index, [M, OTHER], ["ref.rates", "ref.report"], built_at=1_700_000_000)

    assert counts == {M: 2, OTHER: 1}
    assert index.coverages([M, OTHER]) == {M: ((0, 20), (40, 50)), OTHER: ((0, 60),)}
    assert index.scheduled_ran(["ref.rates", "ref.report"]) == {"ref.rates"}, "a failed run offers no data"
    assert index.is_built()


@pytest.mark.integration
def test_invalidations_are_listed_newest_first_with_what_they_affected(admin: DeltaAdmin) -> None:
    first = admin.record_invalidation(invalidation("inv-a", {M: [(0, 10), (20, 30)], OTHER: [(0, 60)]}))
    second = admin.record_invalidation(invalidation("inv-bb", {M: [(5, 6)]}))
    admin.record_invalidation(invalidation("inv-a", {M: [(7, 8)]}))

    assert admin.invalidations(limit=10) == [second, first]
    assert second.metadata == {"blocks": [5, 6], "note": "it's \\ quoted"}


def test_a_consolidation_no_longer_allowed_rewrites_nothing_more(record: DurableRecord) -> None:
    """The leader's fencing check: asked before each model's rewrite; once it says no, no model is rewritten."""
    record.record_completed([done(0, 10), done(10, 20), done(0, 10, model=OTHER), done(10, 20, model=OTHER)])
    asked: list[bool] = []

    def allowed_once() -> bool:
        asked.append(not asked)
        return asked[-1]

    results = record.consolidate(still_allowed=allowed_once)
    assert [(c.model, c.rows_before, c.rows_after) for c in results] == [(OTHER, 2, 1)], "models in name order"
    assert asked == [True, False]
    again = record.consolidate(still_allowed=lambda: True)
    assert {(c.model, c.rows_before, c.rows_after) for c in again} == {(OTHER, 1, 1), (M, 2, 1)}


def test_an_affected_set_is_stored_as_runs_and_masks_what_its_tasks_do(record: DurableRecord) -> None:
    """A year of one-minute tasks is one run in the record; it hides exactly its tasks' positions."""
    year = 525_600 * 60
    record.record_completed([done(0, year + 600, model=M)])
    record.record_invalidation(invalidation("inv-year", {M: [(s, s + 60) for s in range(300, 3_900, 60)]}))
    stored = record.record_invalidation(InvalidationRecord(
        id="inv-run", model=M, start=60, end=year, reason="reorg", source="test",
        affected={M: (TaskRun(3_900, year, 60),)}, received_at_ms=1))

    assert stored.affected == {M: (TaskRun(3_900, year, 60),)}
    assert record.invalidated_ranges([M]) == {M: (TaskRun(300, 3_900, 60), TaskRun(3_900, year, 60))}
    assert record.coverage([M]) == {M: ((0, 300), (year, year + 600))}


@pytest.mark.integration
def test_a_record_written_before_runs_is_read_as_one_task_per_range(admin: DeltaAdmin, spark: SparkSession,
                                                                   spark_database: str) -> None:
    """Rows already in the table in the old form (``[[start, end], ...]``) keep working: no migration needed."""
    admin.record_completed([done(0, 100)])
    spark.sql(f"""INSERT INTO {spark_database}.cbt_invalidations VALUES (timestamp_millis(1), 'old-1', 'an',
        'hourly', 10, 30, 'reorg', 'test', true, '{{}}', '{{"an.hourly":[[10,20],[20,30]]}}', '{{"an.hourly":1}}')""")

    (old,) = admin.invalidations()
    assert old.affected == {M: (TaskRun(10, 20, 10), TaskRun(20, 30, 10))}
    assert admin.invalidated_ranges([M]) == {M: (TaskRun(10, 20, 10), TaskRun(20, 30, 10))}
    assert admin.coverage([M]) == {M: ((0, 10), (30, 100))}


LONG_AGO_MS, NOW_MS = 1_700_000_000_000, 2_000_000_000_000


def test_pruning_never_unmasks_a_stale_row_nor_forgets_a_re_run_or_the_newest_epoch(record: DurableRecord) -> None:
    """An invalidation hides the rows computed before it: deleting one that still hides a stale row would make the
    stale data count as covered again. Only what changes nothing is pruned."""
    record.record_completed([done(0, 10), done(10, 20), done(20, 30)])
    record.record_invalidation(invalidation("inv-1", {M: [(0, 10)]}))
    record.record_invalidation(invalidation("inv-2", {M: [(20, 30)]}))

    assert record.prune_invalidations(NOW_MS) == [], "inv-1 still hides the stale [0, 10); inv-2 is the newest"
    assert record.coverage([M]) == {M: ((10, 20),)}

    record.record_completed([done(0, 10, seq=1)])  # inv-1's re-run
    assert record.prune_invalidations(NOW_MS) == [], "the stale row [0, 10) is still there, hidden by inv-1 alone"
    assert record.coverage([M]) == {M: ((0, 20),)}

    record.consolidate(M)  # folds every recorded event into the rows
    assert record.prune_invalidations(LONG_AGO_MS) == [], "younger than the retention"
    assert [r.id for r in record.prune_invalidations(NOW_MS)] == ["inv-1"]
    assert record.coverage([M]) == {M: ((0, 20),)}
    assert record.invalidated_ranges([M]) == {M: (TaskRun(20, 30, 10),)}
    assert record.invalidation_seqs([M]) == {M: 2}
    assert record.record_invalidation(invalidation("inv-3", {M: [(0, 10)]})).epoch == 3


def files_alone(folder: Path, **kwargs: Any) -> DeltaAdmin:
    return DeltaAdmin(None, ("an", "cbt_incremental"), ("an", "cbt_scheduled"), ("an", "cbt_invalidations"),
                      files=(str(folder), {}), **kwargs)


def test_the_files_stay_consistent_under_concurrent_writers(tmp_path: Path) -> None:
    """Workers appending, a consolidation and invalidations all at once on the files (the Delta log's optimistic
    concurrency, local file system): no row is lost, epochs are distinct, and coverage is exactly what the rows and
    invalidations imply. Every row read sequence 0, so every invalidation cuts it whatever the order."""
    files_alone(tmp_path).ensure_tables()
    writers = [files_alone(tmp_path, conflict_retries=50) for _ in range(7)]
    appended = [[(w * 1000 + i * 10, w * 1000 + i * 10 + 10) for i in range(25)] for w in range(4)]
    invalidated = [(w * 1000 + 95, w * 1000 + 125) for w in range(4)] + [(50, 70)]

    def append(w: int) -> None:
        for start, end in appended[w]:
            writers[w].record_completed([done(start, end)])

    def consolidate() -> None:
        for _ in range(6):
            writers[4].consolidate(M)

    def invalidate(w: int) -> list[int]:  # two invalidators at once, each its own events
        return [writers[w].record_invalidation(invalidation(f"inv-{w}-{n}", {M: [rng]})).epoch
                for n, rng in enumerate(invalidated) if n % 2 == w - 5]

    with ThreadPoolExecutor(7) as pool:
        jobs = [pool.submit(append, w) for w in range(4)] + [pool.submit(consolidate)]
        recorders = [pool.submit(invalidate, w) for w in (5, 6)]
        epochs = [e for r in recorders for e in r.result()]
        for job in jobs:
            job.result()
    writers[4].consolidate(M)

    expected = cov.merge(r for rs in appended for r in rs)
    for hole in invalidated:
        expected = cov.remove(expected, hole)
    assert sorted(epochs) == [1, 2, 3, 4, 5]
    assert writers[0].coverage([M]) == {M: expected}
    tasks = {t for p in writers[0].live_pieces([M], (0, 10_000))[M] for t in p.tasks((0, 10_000))}
    assert tasks == {part for rs in appended for r in rs for part in subtract(r, invalidated)}, "every task kept"


@pytest.mark.integration
def test_spark_reads_what_the_files_recorded(spark: SparkSession, spark_database: str) -> None:
    """The tables the files backend writes are the catalog's: Spark SQL reads the same coverage."""
    files = open_admin(spark, spark_database, "files")
    files.ensure_tables()
    files.record_completed([done(0, 10), done(10, 20), done(40, 50)])
    files.record_invalidation(invalidation("inv-1", {M: [(12, 14)]}))
    files.consolidate(M)
    files.wait_registered()

    through_spark = open_admin(spark, spark_database, "spark")
    assert through_spark.coverage([M]) == files.coverage([M]) == {M: ((0, 12), (14, 20), (40, 50))}
    assert stored_rows(spark, spark_database) == 3


@pytest.mark.integration
def test_tables_whose_files_are_not_under_spark_warehouse_are_found_through_the_catalog(
        spark: SparkSession, spark_database: str, tmp_path: Path) -> None:
    """An installation whose tables Spark created, on a server whose warehouse is not ``spark.warehouse`` (or in a
    database with a location of its own): the catalog says where the files are, and the record is read and written
    there, never in new files of its own."""
    open_admin(spark, spark_database, "spark").ensure_tables()
    elsewhere = DeltaAdmin(spark, (spark_database, "cbt_incremental"), (spark_database, "cbt_scheduled"),
                           (spark_database, "cbt_invalidations"), files=(str(tmp_path / "not-the-warehouse"), {}))
    elsewhere.ensure_tables()
    elsewhere.record_completed([done(0, 10)])

    assert open_admin(spark, spark_database, "spark").coverage([M]) == {M: ((0, 10),)}
    assert not (tmp_path / "not-the-warehouse").exists()


@pytest.mark.integration
def test_a_fresh_installation_creates_its_tables_without_a_spark_job_and_registers_them_afterwards(
        spark: SparkSession, spark_database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating the tables (a fresh installation) takes one catalog listing on the caller's thread, no Spark
    statement per table: the files are created with delta-rs and registered in the catalog by a thread of their own,
    after which Spark SQL reads by name what was recorded."""
    on_the_callers_thread: list[str] = []
    sql = AdminSession.sql

    def recorded(self: AdminSession, what: str, statement: str, *args: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            on_the_callers_thread.append(statement.split("(")[0].strip())
        return sql(self, what, statement, *args)

    monkeypatch.setattr(AdminSession, "sql", recorded)
    files = open_admin(spark, spark_database, "files")
    files.ensure_tables()
    files.record_completed([done(0, 10), done(10, 20)])
    assert on_the_callers_thread == [f"SHOW TABLES IN `{spark_database}`"]

    files.wait_registered()
    assert stored_rows(spark, spark_database) == 2
    assert open_admin(spark, spark_database, "spark").coverage([M]) == {M: ((0, 20),)}
    assert {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {spark_database}").collect()} >= {
        "cbt_incremental", "cbt_scheduled", "cbt_invalidations", "cbt_failures", "cbt_retries"}


@pytest.mark.integration
def test_tables_whose_files_were_created_but_never_registered_are_registered_at_the_next_start(
        spark: SparkSession, spark_database: str) -> None:
    """A process that created the tables' files and stopped before its registrations ran (a service restarted in
    its first seconds): the next start finds the files and registers them, so Spark SQL reads them by name."""
    warehouse = warehouse_of(spark, spark_database)
    DeltaAdmin(None, (spark_database, "cbt_incremental"), (spark_database, "cbt_scheduled"),
               (spark_database, "cbt_invalidations"), files=(warehouse, {})).ensure_tables()
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {spark_database}").collect()
    files = open_admin(spark, spark_database, "files")
    files.ensure_tables()
    files.record_completed([done(0, 10)])

    files.wait_registered()
    assert stored_rows(spark, spark_database) == 1


def test_services_creating_the_same_tables_at_once_share_one_table(tmp_path: Path) -> None:
    """Four processes starting together on a fresh installation each create the tables' files: one first commit
    wins, the others use that table, and nothing recorded is lost."""
    with ThreadPoolExecutor(4) as pool:
        admins = list(pool.map(lambda _: files_alone(tmp_path), range(4)))
        list(pool.map(lambda a: a.ensure_tables(), admins))
        list(pool.map(lambda w: admins[w].record_completed([done(w * 10, w * 10 + 10)]), range(4)))

    assert files_alone(tmp_path).coverage([M]) == {M: ((0, 40),)}


@pytest.fixture(params=[pytest.param("memory", id="memory"),
                        pytest.param("files-alone", id="delta-files-alone"),
                        pytest.param("spark", id="delta-spark", marks=pytest.mark.integration),
                        pytest.param("files", id="delta-files", marks=pytest.mark.integration)])
def versions(request: pytest.FixtureRequest, tmp_path: Path) -> VersionRecord:
    if request.param == "memory":
        return MemoryVersions()
    if request.param == "files-alone":
        return files_alone(tmp_path).versions_record()
    spark, database = request.getfixturevalue("spark"), request.getfixturevalue("spark_database")
    admin = open_admin(spark, database, request.param)
    record = admin.versions_record()
    admin.wait_registered()  # (before the database is dropped: a late registration would create it again)
    return record


def deployed(model: str, version: int, at_ms: int, category: str = "new") -> DeployedVersion:
    return DeployedVersion(model, version, f"data-{version}", "meta", {"sql": [f"SELECT {version} AS `v`"]},
                           category, (f"reason {version}",), at_ms)


def test_the_latest_version_of_each_model_is_the_deployed_one_and_keeps_its_definition(
        versions: VersionRecord) -> None:
    assert versions.deployed_versions() == {}
    versions.record_versions([deployed(M, 1, 1_000), deployed(OTHER, 1, 1_000)])
    versions.record_versions([deployed(M, 2, 2_000, "breaking")])

    found = versions.deployed_versions()
    assert found == {M: deployed(M, 2, 2_000, "breaking"), OTHER: deployed(OTHER, 1, 1_000)}
    assert found[M].definition == {"sql": ["SELECT 2 AS `v`"]}


def test_a_version_keeps_its_whole_model_its_state_and_its_build_table(versions: VersionRecord) -> None:
    spec = {"kind": "incremental", "model": {"database": "an", "table": "hourly", "sql": "SELECT 1"}}
    building = replace(deployed(M, 2, 2_000, "breaking"), spec=spec, state="building",
                       build_table="an.hourly__cbt_v2")
    versions.record_versions([deployed(M, 1, 1_000), building])
    assert versions.deployed_versions() == {M: building}


@pytest.mark.integration
def test_a_versions_table_of_an_earlier_release_gains_the_new_columns_and_its_rows_read_as_live(
        spark: SparkSession, spark_database: str) -> None:
    """The release that recorded versions first wrote tables without ``spec``, ``state`` and ``build_table``."""
    earlier = [c for c in VERSIONS.columns if c.name not in ADDED_COLUMNS]
    table = f"{spark_database}.cbt_model_versions"
    spark.sql(f"CREATE TABLE {table} ({', '.join(c.ddl() for c in earlier)}) USING DELTA")
    spark.sql(f"""INSERT INTO {table} VALUES (timestamp_millis(1000), 'an', 'hourly', 1, 'data-1', 'meta', 'new',
                  '["reason 1"]', '{{"sql": ["SELECT 1 AS `v`"]}}')""")
    for backend in ("spark", "files"):
        admin = open_admin(spark, spark_database, backend)
        record = admin.versions_record()
        admin.wait_registered()
        assert record.deployed_versions() == {M: deployed(M, 1, 1_000)}, backend
    assert set(spark.table(table).columns) >= set(ADDED_COLUMNS)


@pytest.fixture(params=[pytest.param("memory", id="memory"),
                        pytest.param("files-alone", id="delta-files-alone"),
                        pytest.param("spark", id="delta-spark", marks=pytest.mark.integration),
                        pytest.param("files", id="delta-files", marks=pytest.mark.integration)])
def check_results(request: pytest.FixtureRequest, tmp_path: Path) -> CheckResultsRecord:
    if request.param == "memory":
        return MemoryCheckResults()
    if request.param == "files-alone":
        return files_alone(tmp_path).check_results_record()
    spark, database = request.getfixturevalue("spark"), request.getfixturevalue("spark_database")
    admin = open_admin(spark, database, request.param)
    record = admin.check_results_record()
    admin.wait_registered()
    return record


def checked(position: int, check: str, status: str, at_ms: int, model: str = M) -> CheckedInterval:
    return CheckedInterval(model, position, position + 10, check, "error", status, 0 if status == "passed" else 2,
                           40, ('{"a": null}', '{"a": 1}') if status != "passed" else (), "v1", "t-1", 12, at_ms)


def test_check_results_are_kept_whole_and_listed_newest_first(check_results: CheckResultsRecord) -> None:
    assert check_results.check_results([M]) == []
    first = [checked(0, "not_null_a", "passed", 1_000), checked(10, "not_null_a", "failed", 1_000)]
    later = [checked(10, "not_null_a", "passed", 2_000), checked(0, "row_count", "warned", 2_000, OTHER)]
    check_results.record_check_results(first)
    check_results.record_check_results(later)

    assert check_results.check_results([M]) == [later[0], first[1], first[0]]
    assert check_results.check_results([M], limit=1) == [later[0]]
    assert check_results.check_results() == [later[0], later[1], first[1], first[0]]
    assert check_results.check_results([OTHER])[0].sample == ('{"a": null}', '{"a": 1}')
    assert check_results.check_results([M], where=CheckFilter(status="failed")) == [first[1]]
    assert check_results.check_results(None, where=CheckFilter(check="not_null_a", window=(5, 12))) == [
        later[0], first[1], first[0]]
    assert check_results.check_results([M], where=CheckFilter(window=(10, 20))) == [later[0], first[1]]
