"""The Delta admin tables (docs/design/state.md#admin-tables): the durable, SQL-queryable record of completed intervals,
scheduled runs, invalidations, failed tasks and retried attempts, and the source the Redis hot index is rebuilt from.

Implements ``cbt.state.ports.DurableRecord``: the authority of the coverage protocol (``docs/protocol.md``).
Everything goes through Spark Connect with SQL and the DataFrame API. Each public write is one Delta commit:
appends are blind (they never conflict); ``consolidate`` reads and rewrites one model's partition in one
transaction and ``record_invalidation`` reads the invalidations table to allocate the next epoch; both are retried
when a concurrent commit makes Delta refuse theirs. Coverage is read as merged half-open ranges of the rows' *live
parts* (``cbt.scheduling.protocol.live_part``): an invalidation hides exactly the ranges it names, from the rows written
before it, the moment it is recorded.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from pyspark.errors import PySparkException
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from cbt.adapters import delta_admin_sql as q
from cbt.adapters.spark import connect, is_session_lost, quote_identifier
from cbt.base.errors import CbtError
from cbt.config.settings import Config
from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import EMPTY, Coverage, Range, merge
from cbt.scheduling.protocol import Piece
from cbt.state.admin_records import (
    CompletedInterval,
    Consolidation,
    InvalidationRecord,
    RetriedAttempt,
    ScheduledRun,
    decode_metadata,
    decode_ranges,
    decode_seqs,
    encode_metadata,
    encode_ranges,
    split_model_id,
)

log = logging.getLogger("cbt.admin")
TableName = tuple[str, str]
"""``(database, table)``."""

_CONFLICTS = ("DELTA_CONCURRENT", "ConcurrentAppendException", "ConcurrentDeleteReadException")
Permit = Callable[[], AbstractContextManager[object]]
"""Held around each statement on the admin tables: a Spark admission permit (``cbt.concurrency.admission``)."""


class AdminTableError(CbtError):
    """A statement on an admin table failed; the Spark error is chained."""


_TYPES: dict[str, Any] = {"TIMESTAMP": TimestampType(), "STRING": StringType(), "BIGINT": LongType()}


def _struct(columns: Iterable[tuple[str, str]]) -> StructType:
    return StructType([StructField(name, _TYPES[kind], nullable=True) for name, kind in columns])


_INCREMENTAL_SCHEMA = _struct(q.INCREMENTAL_COLUMNS)
_SCHEDULED_SCHEMA = _struct(q.SCHEDULED_COLUMNS)
_FAILURE_SCHEMA = _struct(q.FAILURE_COLUMNS)
_RETRY_SCHEMA = _struct(q.RETRY_COLUMNS)


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def is_conflict(error: BaseException) -> bool:
    """Whether Delta refused a commit because another one changed what this one read (safe to retry)."""
    text = str(error)
    return any(marker in text for marker in _CONFLICTS)


_CREATE_ATTEMPTS = 12
_CREATE_RACES = ("ALREADY_EXISTS", "already exists", "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
                 "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED")


class DeltaAdmin:
    """The admin tables of one installation; table names are ``(database, table)`` pairs."""

    def __init__(
        self,
        spark: SparkSession,
        incremental: TableName = ("admin", "cbt_incremental"),
        scheduled: TableName = ("admin", "cbt_scheduled"),
        invalidations: TableName = ("admin", "cbt_invalidations"),
        failures: TableName | None = None,
        retries: TableName | None = None,
        *,
        conflict_retries: int = 8,
        reconnect: Callable[[], SparkSession] | None = None,
        permit: Permit | None = None,
    ) -> None:
        self._spark = spark
        self._reconnect = reconnect
        """Makes a new session when the current one is lost (the Spark Connect server restarted)."""
        self._permit: Permit = permit or nullcontext
        """Held around each statement (one permit per statement: none is held while a retry pauses)."""
        failures = failures or (incremental[0], "cbt_failures")
        retries = retries or (incremental[0], "cbt_retries")
        self._databases = sorted({incremental[0], scheduled[0], invalidations[0], failures[0], retries[0]})
        self._inc, self._sched, self._inv, self._failed, self._retried = (
            self._qualified(n) for n in (incremental, scheduled, invalidations, failures, retries))
        self._conflict_retries = conflict_retries

    @staticmethod
    def _qualified(name: TableName) -> str:
        return ".".join(quote_identifier(part) for part in name)

    # -- plumbing -------------------------------------------------------------------------------------------------

    def _sql(self, what: str, statement: str, params: Mapping[str, object] | None = None) -> list[Row]:
        try:
            with self._permit():
                rows: list[Row] = self._spark.sql(statement, args=dict(params or {})).collect()
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: {what} failed: {e}") from e
        return rows

    def _replace_lost_session(self, error: Exception) -> None:
        """After a lost session, the next call gets a new one; this call fails (its callers retry)."""
        if self._reconnect is not None and is_session_lost(error):
            log.warning("admin tables: the Spark Connect session was lost; reconnecting")
            self._spark = self._reconnect()

    def _rewrite(self, what: str, statement: str, params: Mapping[str, object]) -> list[Row]:
        """Run a read-then-rewrite commit, again when Delta reports a concurrent change to what it read."""
        for attempt in range(1, self._conflict_retries):
            try:
                return self._sql(what, statement, params)
            except AdminTableError as e:
                if not is_conflict(e):
                    raise
                log.info("admin tables: %s conflicted with a concurrent commit, retry %d", what, attempt)
                time.sleep(random.uniform(0.0, min(0.05 * 2**attempt, 1.0)))
        return self._sql(what, statement, params)

    def _append(self, what: str, table: str, schema: StructType, rows: Sequence[tuple[object, ...]]) -> None:
        try:
            with self._permit():
                self._spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(table)
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: {what} failed: {e}") from e

    # -- tables ---------------------------------------------------------------------------------------------------

    def ensure_tables(self) -> None:
        """Create the databases and tables when missing, and check existing ones have the columns this code uses.

        Safe to call from every service at start-up.
        """
        for database in self._databases:
            self._create("create database", q.create_database(quote_identifier(database)))
        tables = (
            (self._inc, q.create_incremental(self._inc), q.INCREMENTAL_COLUMNS),
            (self._sched, q.create_scheduled(self._sched), q.SCHEDULED_COLUMNS),
            (self._inv, q.create_invalidations(self._inv), q.INVALIDATION_COLUMNS),
            (self._failed, q.create_failures(self._failed), q.FAILURE_COLUMNS),
            (self._retried, q.create_retries(self._retried), q.RETRY_COLUMNS),
        )
        for table, statement, columns in tables:
            self._create(f"create {table}", statement)
            if table == self._inc:
                self._add_task_interval()
            self._check_columns(table, [name for name, _ in columns])

    def _add_task_interval(self) -> None:
        """Tables created before task boundaries were kept get the ``task_interval`` column (nullable: old rows
        read as one task each, or unknown boundaries for consolidated ones). Another service may add it at once."""
        for attempt in range(_CREATE_ATTEMPTS):
            if "task_interval" in self._columns(self._inc):
                return
            log.info("admin tables: adding column task_interval to %s", self._inc)
            try:
                self._sql(f"add task_interval to {self._inc}",
                          f"ALTER TABLE {self._inc} ADD COLUMNS ({q.TASK_INTERVAL_COLUMN})")
                return
            except AdminTableError:
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
            time.sleep(0.5 * (attempt + 1))

    def _columns(self, table: str) -> set[str]:
        try:
            with self._permit():
                return set(self._spark.table(table).columns)
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: read the schema of {table} failed: {e}") from e

    def _check_columns(self, table: str, expected: list[str]) -> None:
        present = self._columns(table)
        missing = [name for name in expected if name not in present]
        if missing:
            raise AdminTableError(
                f"admin table {table}: missing columns {', '.join(missing)}; expected {', '.join(expected)}. "
                "It was created by something else or an older version: migrate it, or configure another admin table."
            )

    def _create(self, what: str, statement: str) -> None:
        # Two services creating the same object at once: the loser sees "already exists", or — while the winner's
        # first commit is written but not yet in the catalog — a non-empty location. Wait a moment and try again.
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                self._sql(what, statement)
                return
            except AdminTableError as e:
                if not any(marker in str(e) for marker in _CREATE_RACES) or attempt == _CREATE_ATTEMPTS - 1:
                    raise
            time.sleep(0.5 * (attempt + 1))

    # -- incremental coverage -------------------------------------------------------------------------------------

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        """Append completed intervals, any number of models, in one Delta commit (the worker's group commit)."""
        values = [
            (_utc(r.completed_at_ms), *split_model_id(r.model), r.position, r.interval, r.task_id, r.direction,
             r.invalidation_seq, r.worker, r.duration_ms, r.interval if r.task_interval is None else r.task_interval)
            for r in rows
        ]  # fmt: skip
        if values:
            self._append("record completed intervals", self._inc, _INCREMENTAL_SCHEMA, values)

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        """Live coverage per model (every requested model, empty when it has none; all models when ``None``)."""
        if model_ids is not None and not model_ids:
            return {}
        where, params = q.model_filter(model_ids)
        rows = self._sql("read coverage", q.coverage_query(self._inc, self._inv, where), params)
        ranges: dict[ModelId, list[Range]] = {m: [] for m in model_ids or ()}
        for row in rows:
            ranges.setdefault(f"{row['database']}.{row['table']}", []).append((row["range_start"], row["range_end"]))
        return {model: merge(rs) if rs else EMPTY for model, rs in ranges.items()}

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        """The live pieces of each model's rows that overlap ``window``: the tasks that ran there."""
        if not model_ids:
            return {}
        where, params = q.model_filter(model_ids)
        rows = self._sql("read live tasks", q.live_pieces_query(self._inc, self._inv, where),
                         {**params, "lo": window[0], "hi": window[1]})
        out: dict[ModelId, list[Piece]] = {m: [] for m in model_ids}
        for row in rows:
            start = int(row["position"])
            piece = Piece((start, start + int(row["interval"])), int(row["step"]))
            out.setdefault(f"{row['database']}.{row['table']}", []).append(piece)
        return {m: sorted(pieces) for m, pieces in out.items()}

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[Range, ...]]:
        """Every range ever recorded as invalidated per model (models never invalidated are absent)."""
        statement, params = q.invalidated_ranges_query(self._inv, model_ids)
        out: dict[ModelId, list[Range]] = {}
        for row in self._sql("read invalidated ranges", statement, params):
            out.setdefault(row["model"], []).append((int(row["range_start"]), int(row["range_end"])))
        return {m: tuple(sorted(rs)) for m, rs in out.items()}

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        """The highest recorded invalidation sequence per model; models never invalidated are absent."""
        statement, params = q.seqs_query(self._inv, model_ids)
        return {row["model"]: int(row["seq"]) for row in self._sql("read invalidation sequences", statement, params)}

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        """Rewrite each model's rows as runs of its live tasks, one commit per model that has anything to merge.

        Coverage is unchanged; stale rows are dropped (they cover nothing); models already minimal are not touched.
        A model whose appends keep winning over the rewrite is left as it is (``is_deferred``) for the next run.
        ``still_allowed`` is asked before each rewrite (the leader's fencing check): once it says no, nothing more
        is written.
        """
        where, params = q.model_filter(None if model_id is None else [model_id])
        counts = self._sql("count rows to consolidate", q.row_counts_query(self._inc, self._inv, where), params)
        done: list[Consolidation] = []
        for row in sorted(counts, key=lambda r: (r["database"], r["table"])):
            model = f"{row['database']}.{row['table']}"
            before, after = int(row["row_count"]), int(row["run_count"])
            if after >= before:
                done.append(Consolidation(model, before, before))
                continue
            if not still_allowed():
                log.warning("admin tables: consolidation stopped before %s: no longer allowed to write", model)
                break
            try:
                self._consolidate_one(model, row["database"], row["table"])
            except AdminTableError as e:
                if not is_conflict(e):
                    raise
                log.warning("admin tables: consolidation of %s deferred: concurrent appends kept winning", model)
                done.append(Consolidation(model, before, before, is_deferred=True))
                continue
            done.append(Consolidation(model, before, after))
        return done

    def _consolidate_one(self, model: ModelId, database: str, table: str) -> None:
        params = {"db": database, "tbl": table, "model": model}
        self._rewrite(f"consolidate {model}", q.consolidate_statement(self._inc, self._inv), params)

    # -- scheduled runs -------------------------------------------------------------------------------------------

    def record_scheduled_run(self, run: ScheduledRun) -> None:
        """Append one run (history is kept: every run, successful or failed)."""
        database, table = split_model_id(run.model)
        value = (_utc(run.updated_at_ms), database, table, run.scheduled_unix, run.task_id, run.status, run.error,
                 run.duration_ms)  # fmt: skip
        self._append("record scheduled run", self._sched, _SCHEDULED_SCHEMA, [value])

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]:
        """Each model's latest run (highest scheduled time, then latest write), or latest successful one."""
        where, params = q.model_filter(model_ids)
        if successful_only:
            where = f"({where}) AND status = 'success'"
        rows = self._sql("read last scheduled runs", q.scheduled_runs_query(self._sched, where, True), params)
        runs = (_scheduled_run(row) for row in rows)
        return {run.model: run for run in runs}

    def scheduled_runs(self, model_id: ModelId, limit: int = 100) -> list[ScheduledRun]:
        """One model's runs, newest first."""
        where, params = q.model_filter([model_id])
        statement = q.scheduled_runs_query(self._sched, where, False)
        return [_scheduled_run(row) for row in self._sql("read scheduled runs", statement, {**params, "limit": limit})]

    # -- failures -------------------------------------------------------------------------------------------------

    def record_failure(self, failed: TaskFailed) -> None:
        """Append a task that failed its last attempt (history is kept)."""
        value = (_utc(failed.failed_at_ms), *split_model_id(failed.model), failed.position, failed.interval,
                 failed.scheduled_unix, failed.task_id, failed.attempts, failed.error, failed.worker)
        self._append("record failure", self._failed, _FAILURE_SCHEMA, [value])

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        """Recorded failures, newest first."""
        where, params = q.model_filter(model_ids)
        rows = self._sql("read failures", q.failures_query(self._failed, where), {**params, "limit": limit})
        return [_failure(row) for row in rows]

    def record_retry(self, retried: RetriedAttempt) -> None:
        """Append an attempt that failed and was tried again."""
        value = (_utc(retried.failed_at_ms), *split_model_id(retried.model), retried.position, retried.interval,
                 retried.scheduled_unix, retried.task_id, retried.attempt, retried.error, retried.direction,
                 retried.worker, retried.duration_ms)
        self._append("record retried attempt", self._retried, _RETRY_SCHEMA, [value])

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        """Recorded retried attempts, newest first."""
        where, params = q.model_filter(model_ids)
        rows = self._sql("read retried attempts", q.retries_query(self._retried, where), {**params, "limit": limit})
        return [_retried(row) for row in rows]

    # -- invalidations --------------------------------------------------------------------------------------------

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        """Record an accepted invalidation under a new epoch and return it as stored: an id already recorded comes
        back as first recorded (its epoch and ranges), so a redelivered event is applied exactly as the first time."""
        database, table = split_model_id(record.model)
        params: dict[str, object] = {
            "received_ms": record.received_at_ms, "id": record.id, "db": database, "tbl": table,
            "start": record.start, "end": record.end, "reason": record.reason, "source": record.source,
            "cascade": record.cascade, "metadata": encode_metadata(record.metadata),
            "affected": encode_ranges(record.affected), "models": json.dumps(sorted(record.affected)),
        }  # fmt: skip
        self._rewrite(f"record invalidation {record.id}", q.insert_invalidation_statement(self._inv), params)
        rows = self._sql(f"read invalidation {record.id}", q.invalidation_query(self._inv), {"id": record.id})
        if len(rows) != 1:
            raise AdminTableError(f"admin tables: invalidation {record.id}: expected one record, found {len(rows)}")
        return _invalidation(rows[0])

    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]:
        """Recorded invalidations, newest first."""
        rows = self._sql("read invalidations", q.invalidations_query(self._inv), {"limit": limit})
        return [_invalidation(row) for row in rows]


def _scheduled_run(row: Row) -> ScheduledRun:
    return ScheduledRun(
        model=f"{row['database']}.{row['table']}",
        scheduled_unix=int(row["scheduled_unix"]),
        task_id=row["task_id"] or "",
        status="success" if row["status"] == "success" else "failed",
        error=row["error"] or "",
        duration_ms=int(row["duration_ms"] or 0),
        updated_at_ms=int(row["updated_ms"]),
    )


def _failure(row: Row) -> TaskFailed:
    return TaskFailed(
        task_id=row["task_id"], model=f"{row['database']}.{row['table']}", position=row["position"],
        interval=row["interval"], scheduled_unix=row["scheduled_unix"], attempts=int(row["attempts"]),
        error=row["error"] or "", failed_at_ms=int(row["failed_ms"]), worker=row["worker"] or "",
    )


def _retried(row: Row) -> RetriedAttempt:
    return RetriedAttempt(
        model=f"{row['database']}.{row['table']}", task_id=row["task_id"], attempt=int(row["attempt"]),
        error=row["error"] or "", position=row["position"], interval=row["interval"],
        scheduled_unix=row["scheduled_unix"], direction=row["direction"] or "", worker=row["worker"] or "",
        duration_ms=int(row["duration_ms"] or 0), failed_at_ms=int(row["failed_ms"]),
    )


def _invalidation(row: Row) -> InvalidationRecord:
    return InvalidationRecord(
        id=row["id"],
        model=f"{row['database']}.{row['table']}",
        start=int(row["start"]),
        end=int(row["end"]),
        reason=row["reason"] or "",
        source=row["source"] or "",
        cascade=bool(row["cascade"]),
        metadata=decode_metadata(row["metadata"]),
        affected=decode_ranges(row["affected"]),
        seqs=decode_seqs(row["seq"]),
        received_at_ms=int(row["received_ms"]),
    )


_Admin = TypeVar("_Admin", bound=DeltaAdmin)


@overload
def admin_from_config(spark: SparkSession, config: Config, *, permit: Permit | None = None) -> DeltaAdmin: ...
@overload
def admin_from_config(spark: SparkSession, config: Config, kind: type[_Admin], *,
                      permit: Permit | None = None) -> _Admin: ...
def admin_from_config(spark: SparkSession, config: Config, kind: type[DeltaAdmin] = DeltaAdmin, *,
                      permit: Permit | None = None) -> DeltaAdmin:
    """The admin tables named in ``config.admin``, read and written by ``kind`` (``DeltaAdmin`` or a subclass),
    each statement under ``permit`` when given (Spark admission control)."""
    names, remote = config.admin, config.spark.remote
    return kind(spark, (names.incremental.database, names.incremental.table),
                      (names.scheduled.database, names.scheduled.table),
                      (names.invalidations.database, names.invalidations.table),
                      (names.failures.database, names.failures.table),
                      (names.retries.database, names.retries.table),
                      reconnect=(lambda: connect(remote)) if remote else None, permit=permit)
