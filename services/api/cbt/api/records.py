"""The admin tables as the API reads them, and the API's own audit table (``<admin database>.cbt_api_actions``).

Composes the stores of the Delta admin tables (``cbt.adapters.delta_admin.AdminTables``: their session,
reconnection and create-race handling): a model's completion rows newest first, every scheduled model's latest runs,
failures, retries, invalidations and live pieces, and the record of each change made through the API. Blocking
(Spark Connect); the routes call it from threads.
"""

from __future__ import annotations

from collections.abc import Collection

from pyspark.sql import SparkSession

from cbt.adapters.admin_tables.audit import AUDIT_TABLE, AuditTable
from cbt.adapters.admin_tables.check_results import CheckResultsTable
from cbt.adapters.admin_tables.file_tables import CheckResultsFiles
from cbt.adapters.admin_tables.overrides import OverridesTable, overrides_table
from cbt.adapters.admin_tables.session import qualified
from cbt.adapters.delta_admin import AdminTables, Permit, tables_from_config
from cbt.api.history import Completion
from cbt.config.settings import Config
from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Range
from cbt.scheduling.protocol import Piece
from cbt.state.admin_records import (
    AuditAction,
    CheckedInterval,
    Consolidation,
    InvalidationRecord,
    RetriedAttempt,
    ScheduledRun,
    split_model_id,
)
from cbt.state.ports import ALL_RESULTS, CheckFilter


class ApiRecords:
    """The admin tables plus the audit table, in the admin database of ``cbt_incremental``."""

    def __init__(self, tables: AdminTables) -> None:
        if tables.session is None:
            raise ValueError("the api's records are read through Spark")
        self._tables = tables
        self._session = tables.session
        self._audit = AuditTable(self._session, (tables.completions.database, AUDIT_TABLE))
        self.overrides: OverridesTable = overrides_table(self._session, tables.completions.database)
        self._checks: CheckResultsTable | CheckResultsFiles | None = None

    def ensure_tables(self) -> None:
        self._tables.ensure()
        self._audit.ensure()
        self.overrides.ensure()

    def completions(self, model_id: ModelId, limit: int) -> list[Completion]:
        """The model's completion rows, newest first (consolidated rows are runs of its older tasks)."""
        database, table = split_model_id(model_id)
        statement = f"""SELECT unix_millis(updated_date_time) AS at_ms, position, `interval`, task_id, direction,
  worker, duration_ms FROM {qualified(self._tables.completions.name_parts)} WHERE `database` = :db AND `table` = :tbl
ORDER BY updated_date_time DESC, position DESC LIMIT :limit"""
        rows = self._session.sql("read completions", statement, {"db": database, "tbl": table, "limit": limit})
        return [Completion(task_id=r["task_id"] or "", position=int(r["position"]), interval=int(r["interval"]),
                           direction=r["direction"] or "", worker=r["worker"] or "",
                           duration_ms=int(r["duration_ms"] or 0), at_ms=int(r["at_ms"])) for r in rows]

    def check_results(self, model_ids: Collection[ModelId] | None, limit: int,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]:
        """Interval checks' verdicts, newest first (the table is created when first read)."""
        if self._checks is None:
            self._checks = self._tables.ensure_check_results()
        return self._checks.check_results(model_ids, limit, where)

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        return self._tables.completions.live_pieces(model_ids, window)

    def recent_scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]:
        """Each model's latest ``limit`` runs, newest first per model."""
        return self._tables.scheduled.scheduled_runs(model_ids, limit)

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        return self._tables.failures.failures(model_ids, limit)

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        return self._tables.retries.retries(model_ids, limit)

    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]:
        return self._tables.invalidations.invalidations(limit)

    def record_action(self, action: AuditAction) -> None:
        """Append one change (one Delta commit)."""
        self._audit.record_action(action)

    def actions(self, limit: int) -> list[AuditAction]:
        """The latest changes, newest first."""
        return self._audit.actions(limit)

    def consolidate(self, model_id: ModelId) -> Consolidation:
        """Merge one model's completion rows now: the transaction the coordinator's scheduled consolidation and
        ``cbt admin consolidate`` run (coverage unchanged; deferred when concurrent appends keep winning)."""
        done = self._tables.completions.consolidate(model_id)
        return done[0] if done else Consolidation(model_id, 0, 0)


def records_from_config(spark: SparkSession, config: Config, permit: Permit | None = None) -> ApiRecords:
    """The admin tables named in ``config.admin``, the audit table beside ``admin.incremental``; each statement
    under ``permit`` when given (Spark admission control)."""
    return ApiRecords(tables_from_config(spark, config, permit=permit))
