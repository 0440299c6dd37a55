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

Two ways to the same Delta tables, the same methods either way:

- **files** (``spark.warehouse`` set: ``admin_tables.file_tables``): delta-rs reads and writes the tables' files
  where the Spark catalog keeps them — no Spark statement, no admission permit, so bookkeeping never queues behind
  the jobs it schedules. Spark only creates a table that does not exist yet (and registers it in the catalog).
- **Spark** (unset): one ``AdminSession`` (Spark Connect, SQL and the DataFrame API), each statement under the
  admission permit.

Each public write is one Delta commit either way.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import SparkSession

from cbt.adapters.admin_tables.check_results import CHECK_RESULTS, CHECK_RESULTS_TABLE, CheckResultsTable
from cbt.adapters.admin_tables.columns import TableSpec
from cbt.adapters.admin_tables.completions import COMPLETIONS, CompletionsTable
from cbt.adapters.admin_tables.failures import FAILURES, FailuresTable
from cbt.adapters.admin_tables.file_tables import (
    CheckResultsFiles,
    CompletionsFiles,
    FailuresFiles,
    InvalidationsFiles,
    OverridesFiles,
    RetriesFiles,
    ScheduledFiles,
    VersionsFiles,
)
from cbt.adapters.admin_tables.files import FileTable
from cbt.adapters.admin_tables.invalidations import INVALIDATIONS, InvalidationsTable
from cbt.adapters.admin_tables.overrides import OVERRIDES, OVERRIDES_TABLE, OverridesTable
from cbt.adapters.admin_tables.retries import RETRIES, RetriesTable
from cbt.adapters.admin_tables.scheduled import SCHEDULED, ScheduledRunsTable
from cbt.adapters.admin_tables.session import (
    AdminSession,
    AdminTableError,
    Permit,
    TableName,
    is_conflict,
    qualified,
)
from cbt.adapters.admin_tables.versions import VERSIONS, VERSIONS_TABLE, VersionsTable
from cbt.adapters.spark import connect, quote_identifier
from cbt.config.settings import Config
from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.models.templates import sql_string
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import Piece
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CompletedInterval, Consolidation, InvalidationRecord, RetriedAttempt, ScheduledRun

log = logging.getLogger("cbt.admin")

__all__ = ["AdminTableError", "AdminTables", "DeltaAdmin", "Permit", "TableName", "admin_from_config", "is_conflict",
           "tables_from_config"]


class _SparkTable(Protocol):
    name_parts: TableName

    def ensure(self) -> None: ...


@dataclass(frozen=True)
class SparkCatalog:
    """An admin table in Spark's catalog (``admin_tables.files.Catalog``): asked where an existing table's files are
    (one listing of its database first: a missing table costs no more), told where new files are (registered in the
    background: ``Registrations``), and asked to add the columns an older table lacks."""

    session: AdminSession
    table: _SparkTable
    listings: DatabaseListings
    registrations: Registrations

    def location(self) -> str | None:
        database, name = self.table.name_parts
        if name.lower() not in self.listings.tables(database):
            return None
        try:
            rows = self.session.sql("locate an admin table", f"DESCRIBE DETAIL {qualified(self.table.name_parts)}")
        except AdminTableError:
            return None
        found = str(rows[0]["location"]) if rows and rows[0]["location"] else None
        if found is not None and found.startswith("file:"):
            found = "/" + found.removeprefix("file:").lstrip("/")
        return found

    def register(self, uri: str) -> None:
        self.registrations.add(self.table.name_parts, uri)

    def create(self) -> None:
        database = quote_identifier(self.table.name_parts[0])
        self.session.create("create database", f"CREATE DATABASE IF NOT EXISTS {database}")
        self.table.ensure()


class DatabaseListings:
    """The tables of each database as the catalog lists them, asked once per database (``SHOW TABLES``); a database
    that does not exist lists none."""

    def __init__(self, session: AdminSession) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._tables: dict[str, frozenset[str]] = {}

    def tables(self, database: str) -> frozenset[str]:
        with self._lock:
            if database not in self._tables:
                try:
                    rows = self._session.sql("list admin tables", f"SHOW TABLES IN {quote_identifier(database)}")
                except AdminTableError as e:
                    if "SCHEMA_NOT_FOUND" not in str(e) and "not found" not in str(e).lower():
                        raise
                    rows = []
                self._tables[database] = frozenset(str(r["tableName"]).lower() for r in rows)
            return self._tables[database]


class Registrations:
    """Tables whose files were created here, registered in Spark's catalog by a thread of its own (``CREATE TABLE …
    USING DELTA LOCATION``), so that creating them never waits for Spark; a table the catalog already lists is left
    as it is (files found at a start are registered too: the process that created them may have stopped first). A
    failed registration is tried again, with a growing pause, until it is done or the process ends; ``wait`` blocks
    until every one so far is done."""

    def __init__(self, session: AdminSession, listings: DatabaseListings, *, pause_s: float = 0.5,
                 max_pause_s: float = 30.0) -> None:
        self._session, self._listings = session, listings
        self._pause_s, self._max_pause_s = pause_s, max_pause_s
        self._queue: queue.Queue[tuple[TableName, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, name: TableName, uri: str) -> None:
        self._queue.put((name, uri))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cbt-admin-registrations", daemon=True)
                self._thread.start()

    def wait(self) -> None:
        self._queue.join()

    def _run(self) -> None:
        while True:
            name, uri = self._queue.get()
            pause = self._pause_s
            while not self._registered(name, uri):
                time.sleep(pause)
                pause = min(pause * 2, self._max_pause_s)
            self._queue.task_done()

    def _registered(self, name: TableName, uri: str) -> bool:
        try:
            if name[1].lower() in self._listings.tables(name[0]):
                return True
            self._session.create("create database", f"CREATE DATABASE IF NOT EXISTS {quote_identifier(name[0])}")
            self._session.create(f"register {'.'.join(name)}",
                                 f"CREATE TABLE IF NOT EXISTS {qualified(name)} USING DELTA LOCATION {sql_string(uri)}")
        except Exception as e:  # a closed or lost session raises errors that are not Spark's; this
            # thread has no caller to tell, so it logs and tries again
            log.warning("admin tables: registering %s in the catalog failed; trying again", ".".join(name),
                        extra={"error": f"{type(e).__name__}: {e}"[:500]})
            return False
        log.info("admin tables: %s registered in the catalog at %s", ".".join(name), uri)
        return True


@dataclass(frozen=True)
class AdminTables:
    """The admin tables of one installation: over one Spark session, or over their files (``open_files``)."""

    session: AdminSession | None
    """Spark (``None``: files created by delta-rs, not registered in a catalog)."""
    completions: CompletionsTable | CompletionsFiles
    scheduled: ScheduledRunsTable | ScheduledFiles
    invalidations: InvalidationsTable | InvalidationsFiles
    failures: FailuresTable | FailuresFiles
    retries: RetriesTable | RetriesFiles
    overrides: OverridesTable | OverridesFiles
    """``cbt_config_overrides``, beside ``cbt_incremental`` (created when first used: ``ensure_overrides``)."""
    versions: VersionsTable | VersionsFiles
    """``cbt_model_versions``, beside ``cbt_incremental`` (created when first used: ``ensure_versions``)."""
    check_results: CheckResultsTable | CheckResultsFiles
    """``cbt_check_results``, beside ``cbt_incremental`` (created when first used: ``ensure_check_results``)."""
    registrations: Registrations | None = None
    """Tables created as files, being registered in the catalog (files with Spark)."""

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
        return cls(session, *_spark_tables(session, _table_names(incremental, scheduled, invalidations, failures,
                                                                  retries)))

    @classmethod
    def open_files(cls, spark: SparkSession | None, warehouse: str, storage_options: Mapping[str, str],
                   incremental: TableName, scheduled: TableName, invalidations: TableName,
                   failures: TableName | None = None, retries: TableName | None = None, *, conflict_retries: int = 8,
                   reconnect: Callable[[], SparkSession] | None = None, permit: Permit | None = None) -> AdminTables:
        """The tables read and written as files under ``warehouse`` (``<warehouse>/<database>.db/<table>``); Spark
        (``spark``, under ``permit``) only creates a missing table or adds a missing column. Without Spark, delta-rs
        creates a missing table (not registered in any catalog)."""
        session = None if spark is None else AdminSession(spark, reconnect=reconnect, permit=permit)
        names = _table_names(incremental, scheduled, invalidations, failures, retries)
        spark_tables = None if session is None else _spark_tables(session, names)
        listings = None if session is None else DatabaseListings(session)
        registrations = None if session is None or listings is None else Registrations(session, listings)

        def files(index: int, spec: TableSpec) -> FileTable:
            catalog = None
            if session is not None and spark_tables is not None and listings and registrations:
                catalog = SparkCatalog(session, spark_tables[index], listings, registrations)
            return FileTable(warehouse, names[index], spec, storage_options, catalog, attempts=conflict_retries)

        invalidation_files = InvalidationsFiles(files(2, INVALIDATIONS))
        return cls(session, CompletionsFiles(files(0, COMPLETIONS), invalidation_files),
                   ScheduledFiles(files(1, SCHEDULED)), invalidation_files, FailuresFiles(files(3, FAILURES)),
                   RetriesFiles(files(4, RETRIES)), OverridesFiles(files(5, OVERRIDES)),
                   VersionsFiles(files(6, VERSIONS)), CheckResultsFiles(files(7, CHECK_RESULTS)), registrations)

    def ensure_overrides(self) -> OverridesTable | OverridesFiles:
        """The live config overrides' table, created when missing (read when Redis lost the overrides)."""
        if isinstance(self.overrides, OverridesTable):
            assert self.session is not None
            self.session.create("create database",
                                f"CREATE DATABASE IF NOT EXISTS {quote_identifier(self.overrides.database)}")
        self.overrides.ensure()
        return self.overrides

    def ensure_versions(self) -> VersionsTable | VersionsFiles:
        """The deployed model versions' table, created when missing."""
        if isinstance(self.versions, VersionsTable):
            assert self.session is not None
            self.session.create("create database",
                                f"CREATE DATABASE IF NOT EXISTS {quote_identifier(self.versions.database)}")
        self.versions.ensure()
        return self.versions

    def ensure_check_results(self) -> CheckResultsTable | CheckResultsFiles:
        """The interval checks' results table, created when missing."""
        if isinstance(self.check_results, CheckResultsTable):
            assert self.session is not None
            self.session.create("create database",
                                f"CREATE DATABASE IF NOT EXISTS {quote_identifier(self.check_results.database)}")
        self.check_results.ensure()
        return self.check_results

    def ensure(self) -> None:
        """Create the databases and tables when missing, and check existing ones have the columns this code uses.

        Safe to call from every service at start-up.
        """
        tables = (self.completions, self.scheduled, self.invalidations, self.failures, self.retries)
        if self.session is not None and not isinstance(self.completions, CompletionsFiles):  # (files: on creation)
            for database in sorted({t.database for t in tables}):
                self.session.create("create database", f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")
        for table in tables:
            table.ensure()


class DeltaAdmin:
    """The admin tables of one installation, as the services record and read them; table names are
    ``(database, table)`` pairs. Each method is its table's (``self.tables``); ``files`` gives the tables over
    their files (``AdminTables.open_files``)."""

    def __init__(
        self,
        spark: SparkSession | None,
        incremental: TableName = ("admin", "cbt_incremental"),
        scheduled: TableName = ("admin", "cbt_scheduled"),
        invalidations: TableName = ("admin", "cbt_invalidations"),
        failures: TableName | None = None,
        retries: TableName | None = None,
        *,
        conflict_retries: int = 8,
        reconnect: Callable[[], SparkSession] | None = None,
        permit: Permit | None = None,
        files: tuple[str, Mapping[str, str]] | None = None,
    ) -> None:
        if files is not None:
            self.tables = AdminTables.open_files(spark, files[0], files[1], incremental, scheduled, invalidations,
                                                 failures, retries, conflict_retries=conflict_retries,
                                                 reconnect=reconnect, permit=permit)
        else:
            if spark is None:
                raise ValueError("the admin tables need Spark unless they are read and written as files")
            self.tables = AdminTables.open(spark, incremental, scheduled, invalidations, failures, retries,
                                           conflict_retries=conflict_retries, reconnect=reconnect, permit=permit)

    @property
    def is_files(self) -> bool:
        """Whether bookkeeping goes to the files (no Spark statement)."""
        return isinstance(self.tables.completions, CompletionsFiles)

    def overrides_record(self) -> OverridesTable | OverridesFiles:
        """The live config overrides' table beside the others, created when missing."""
        return self.tables.ensure_overrides()

    def versions_record(self) -> VersionsTable | VersionsFiles:
        """The deployed model versions' table beside the others, created when missing."""
        return self.tables.ensure_versions()

    def check_results_record(self) -> CheckResultsTable | CheckResultsFiles:
        """The interval checks' results table beside the others, created when missing."""
        return self.tables.ensure_check_results()

    def ensure_tables(self) -> None:
        self.tables.ensure()

    def wait_registered(self) -> None:
        """Until every table created as files so far is in Spark's catalog (Spark SQL reads it by name)."""
        if self.tables.registrations is not None:
            self.tables.registrations.wait()

    # -- cbt_incremental ------------------------------------------------------------------------------------------

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        self.tables.completions.record_completed(rows)

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        return self.tables.completions.coverage(model_ids)

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        return self.tables.completions.live_pieces(model_ids, window)

    def version_coverage(self, model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        return self.tables.completions.version_coverage(model_ids)

    def recent_runs(self, model_ids: Collection[ModelId], keep: int) -> dict[ModelId, list[tuple[int, int]]]:
        """Each model's newest runs (positions covered, duration in ms), oldest first: from the files only."""
        completions = self.tables.completions
        if not isinstance(completions, CompletionsFiles):
            raise TypeError("recent_runs reads the admin tables' files: open them with files=")
        return completions.recent_runs(model_ids, keep)

    def adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None = None) -> None:
        self.tables.completions.adopt(model_id, source_id, keep)

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
        tables = self.tables
        if isinstance(tables.invalidations, InvalidationsFiles):
            assert isinstance(tables.completions, CompletionsFiles)
            return tables.invalidations.prune_invalidations(tables.completions, received_before_ms)
        assert isinstance(tables.completions, CompletionsTable)
        return tables.invalidations.prune_invalidations(tables.completions.name, received_before_ms)

    # -- cbt_failures, cbt_retries --------------------------------------------------------------------------------

    def record_failure(self, failed: TaskFailed) -> None:
        self.tables.failures.record_failure(failed)

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        return self.tables.failures.failures(model_ids, limit)

    def record_retry(self, retried: RetriedAttempt) -> None:
        self.tables.retries.record_retry(retried)

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        return self.tables.retries.retries(model_ids, limit)


Names = tuple[TableName, TableName, TableName, TableName, TableName, TableName, TableName, TableName]
"""Completions, scheduled runs, invalidations, failures, retries, overrides, model versions and check results."""


def _table_names(incremental: TableName, scheduled: TableName, invalidations: TableName, failures: TableName | None,
                 retries: TableName | None) -> Names:
    """Failures, retries, overrides, versions and check results default to the incremental table's database."""
    return (incremental, scheduled, invalidations, failures or (incremental[0], "cbt_failures"),
            retries or (incremental[0], "cbt_retries"), (incremental[0], OVERRIDES_TABLE),
            (incremental[0], VERSIONS_TABLE), (incremental[0], CHECK_RESULTS_TABLE))


def _spark_tables(session: AdminSession, names: Names) -> tuple[
        CompletionsTable, ScheduledRunsTable, InvalidationsTable, FailuresTable, RetriesTable, OverridesTable,
        VersionsTable, CheckResultsTable]:
    incremental, scheduled, invalidations, failures, retries, overrides, versions, checks = names
    return (CompletionsTable(session, incremental, invalidations), ScheduledRunsTable(session, scheduled),
            InvalidationsTable(session, invalidations), FailuresTable(session, failures),
            RetriesTable(session, retries), OverridesTable(session, overrides), VersionsTable(session, versions),
            CheckResultsTable(session, checks))


def tables_from_config(spark: SparkSession, config: Config, *, permit: Permit | None = None) -> AdminTables:
    """The admin tables named in ``config.admin``, each statement under ``permit`` when given (Spark admission
    control)."""
    return AdminTables.open(spark, *_names(config), reconnect=_reconnect(config), permit=permit)


def admin_from_config(spark: SparkSession, config: Config, *, permit: Permit | None = None) -> DeltaAdmin:
    """``DeltaAdmin`` over the admin tables named in ``config.admin``: over their files when ``spark.warehouse`` is
    set (Spark only creates missing tables), else through Spark with each statement under ``permit``."""
    warehouse = config.warehouse()
    files = None if warehouse is None else (warehouse, dict(config.spark.storage_options))
    return DeltaAdmin(spark, *_names(config), reconnect=_reconnect(config), permit=permit, files=files)


def _names(config: Config) -> tuple[TableName, TableName, TableName, TableName, TableName]:
    """Incremental, scheduled, invalidations, failures and retries, as ``config.admin`` names them."""
    names = config.admin
    return ((names.incremental.database, names.incremental.table), (names.scheduled.database, names.scheduled.table),
            (names.invalidations.database, names.invalidations.table),
            (names.failures.database, names.failures.table), (names.retries.database, names.retries.table))


def _reconnect(config: Config) -> Callable[[], SparkSession] | None:
    remote = config.spark.remote
    return (lambda: connect(remote)) if remote else None
