"""The Delta admin tables (docs/design/state.md#admin-tables): the durable, SQL-queryable record of completed intervals,
scheduled runs, invalidations, failed tasks and retried attempts, and the source the Redis hot index is rebuilt from.

``DeltaAdmin`` implements ``cbt.state.ports.DurableRecord``: the authority of the coverage protocol
(``docs/protocol.md``). It composes one store per table, each a module of ``cbt.adapters.admin_tables`` with the
table's column spec (its DDL, appended rows and reads derive from it)::

    completions     cbt_incremental     completed intervals: coverage, live pieces, consolidation
    scheduled       cbt_scheduled       every run of every scheduled model
    invalidations   cbt_invalidations   accepted invalidations and their epochs
    failures        cbt_failures        tasks that failed their last attempt
    retries         cbt_retries         attempts that failed and were tried again

All of them go through one ``AdminSession`` (Spark Connect, SQL and the DataFrame API): each statement under the
admission permit, each public write one Delta commit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from cbt.adapters.admin_tables.completions import CompletionsTable
from cbt.adapters.admin_tables.failures import FailuresTable
from cbt.adapters.admin_tables.invalidations import InvalidationsTable
from cbt.adapters.admin_tables.retries import RetriesTable
from cbt.adapters.admin_tables.scheduled import ScheduledRunsTable
from cbt.adapters.admin_tables.session import AdminSession, AdminTableError, Permit, TableName, is_conflict
from cbt.adapters.spark import connect, quote_identifier
from cbt.config.settings import Config
from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import Piece
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CompletedInterval, Consolidation, InvalidationRecord, RetriedAttempt, ScheduledRun

__all__ = ["AdminTableError", "AdminTables", "DeltaAdmin", "Permit", "TableName", "admin_from_config", "is_conflict",
           "tables_from_config"]


@dataclass(frozen=True)
class AdminTables:
    """The five admin tables of one installation, over one session."""

    session: AdminSession
    completions: CompletionsTable
    scheduled: ScheduledRunsTable
    invalidations: InvalidationsTable
    failures: FailuresTable
    retries: RetriesTable

    @classmethod
    def open(
        cls,
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
    ) -> AdminTables:
        """The tables by name (``(database, table)``); failures and retries default to the incremental table's
        database."""
        session = AdminSession(spark, conflict_retries=conflict_retries, reconnect=reconnect, permit=permit)
        return cls(session, CompletionsTable(session, incremental, invalidations),
                   ScheduledRunsTable(session, scheduled), InvalidationsTable(session, invalidations),
                   FailuresTable(session, failures or (incremental[0], "cbt_failures")),
                   RetriesTable(session, retries or (incremental[0], "cbt_retries")))

    def ensure(self) -> None:
        """Create the databases and tables when missing, and check existing ones have the columns this code uses.

        Safe to call from every service at start-up.
        """
        tables = (self.completions, self.scheduled, self.invalidations, self.failures, self.retries)
        for database in sorted({t.database for t in tables}):
            self.session.create("create database", f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")
        for table in tables:
            table.ensure()


class DeltaAdmin:
    """The admin tables of one installation, as the services record and read them; table names are
    ``(database, table)`` pairs. Each method is its table's (``self.tables``)."""

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
        self.tables = AdminTables.open(spark, incremental, scheduled, invalidations, failures, retries,
                                       conflict_retries=conflict_retries, reconnect=reconnect, permit=permit)

    def ensure_tables(self) -> None:
        self.tables.ensure()

    # -- cbt_incremental ------------------------------------------------------------------------------------------

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        self.tables.completions.record_completed(rows)

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        return self.tables.completions.coverage(model_ids)

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        return self.tables.completions.live_pieces(model_ids, window)

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        return self.tables.completions.consolidate(model_id, still_allowed)

    # -- cbt_scheduled --------------------------------------------------------------------------------------------

    def record_scheduled_run(self, run: ScheduledRun) -> None:
        self.tables.scheduled.record_scheduled_run(run)

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]:
        return self.tables.scheduled.last_scheduled_runs(model_ids, successful_only)

    def scheduled_runs(self, model_id: ModelId, limit: int = 100) -> list[ScheduledRun]:
        """One model's runs, newest first."""
        return self.tables.scheduled.scheduled_runs([model_id], limit)

    # -- cbt_invalidations ----------------------------------------------------------------------------------------

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        return self.tables.invalidations.record_invalidation(record)

    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]:
        return self.tables.invalidations.invalidations(limit)

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[TaskRun, ...]]:
        return self.tables.invalidations.invalidated_ranges(model_ids)

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        return self.tables.invalidations.invalidation_seqs(model_ids)

    def prune_invalidations(self, received_before_ms: int) -> list[InvalidationRecord]:
        return self.tables.invalidations.prune_invalidations(self.tables.completions.name, received_before_ms)

    # -- cbt_failures, cbt_retries --------------------------------------------------------------------------------

    def record_failure(self, failed: TaskFailed) -> None:
        self.tables.failures.record_failure(failed)

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        return self.tables.failures.failures(model_ids, limit)

    def record_retry(self, retried: RetriedAttempt) -> None:
        self.tables.retries.record_retry(retried)

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        return self.tables.retries.retries(model_ids, limit)


def tables_from_config(spark: SparkSession, config: Config, *, permit: Permit | None = None) -> AdminTables:
    """The admin tables named in ``config.admin``, each statement under ``permit`` when given (Spark admission
    control)."""
    return AdminTables.open(spark, *_names(config), reconnect=_reconnect(config), permit=permit)


def admin_from_config(spark: SparkSession, config: Config, *, permit: Permit | None = None) -> DeltaAdmin:
    """``DeltaAdmin`` over the admin tables named in ``config.admin`` (as ``tables_from_config``)."""
    return DeltaAdmin(spark, *_names(config), reconnect=_reconnect(config), permit=permit)


def _names(config: Config) -> tuple[TableName, TableName, TableName, TableName, TableName]:
    """Incremental, scheduled, invalidations, failures and retries, as ``config.admin`` names them."""
    names = config.admin
    return ((names.incremental.database, names.incremental.table), (names.scheduled.database, names.scheduled.table),
            (names.invalidations.database, names.invalidations.table),
            (names.failures.database, names.failures.table), (names.retries.database, names.retries.table))


def _reconnect(config: Config) -> Callable[[], SparkSession] | None:
    remote = config.spark.remote
    return (lambda: connect(remote)) if remote else None
