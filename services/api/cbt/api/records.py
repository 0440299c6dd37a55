"""The admin tables as the API reads them, and the API's own audit table (``<admin database>.cbt_api_actions``).

Extends the Delta admin adapter (its session, reconnection and create-race handling): a model's completion rows
newest first, every scheduled model's latest runs, and the record of each change made through the API. Blocking
(Spark Connect); the routes call it from threads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from cbt.adapters import delta_admin_sql as q
from cbt.adapters.delta_admin import DeltaAdmin, Permit, TableName, admin_from_config
from cbt.api.history import AuditAction, Completion
from cbt.config.settings import Config
from cbt.models.spec import ModelId
from cbt.state.admin_records import ScheduledRun, split_model_id

AUDIT_TABLE = "cbt_api_actions"
_AUDIT_SCHEMA = StructType([StructField(name, kind, nullable=True) for name, kind in (
    ("action_date_time", TimestampType()), ("who", StringType()), ("action", StringType()),
    ("target", StringType()), ("detail", StringType()))])


def _create_audit(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  action_date_time TIMESTAMP COMMENT 'when the API accepted the change',
  who STRING COMMENT 'fingerprint of the bearer token (never the token itself)',
  action STRING COMMENT 'rerun | run-now | bounds-refresh', target STRING COMMENT 'the model',
  detail STRING COMMENT 'JSON: the request and what it started (event or task id)'
) USING DELTA
COMMENT 'cbt: every change made through the REST API'"""


class ApiRecords(DeltaAdmin):
    """The admin tables plus the audit table, in the admin database of ``incremental``."""

    def __init__(self, spark: SparkSession, incremental: TableName, scheduled: TableName, invalidations: TableName,
                 failures: TableName, retries: TableName,
                 reconnect: Callable[[], SparkSession] | None = None, permit: Permit | None = None) -> None:
        super().__init__(spark, incremental, scheduled, invalidations, failures, retries, reconnect=reconnect,
                         permit=permit)
        self._audit = self._qualified((incremental[0], AUDIT_TABLE))
        self._inc_table = self._qualified(incremental)
        self._sched_table = self._qualified(scheduled)

    def ensure_tables(self) -> None:
        super().ensure_tables()
        self._create(f"create {self._audit}", _create_audit(self._audit))

    def completions(self, model_id: ModelId, limit: int) -> list[Completion]:
        """The model's completion rows, newest first (consolidated rows are runs of its older tasks)."""
        database, table = split_model_id(model_id)
        statement = f"""SELECT unix_millis(updated_date_time) AS at_ms, position, `interval`, task_id, direction,
  worker, duration_ms FROM {self._inc_table} WHERE `database` = :db AND `table` = :tbl
ORDER BY updated_date_time DESC, position DESC LIMIT :limit"""
        rows = self._sql("read completions", statement, {"db": database, "tbl": table, "limit": limit})
        return [Completion(task_id=r["task_id"] or "", position=int(r["position"]), interval=int(r["interval"]),
                           direction=r["direction"] or "", worker=r["worker"] or "",
                           duration_ms=int(r["duration_ms"] or 0), at_ms=int(r["at_ms"])) for r in rows]

    def recent_scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]:
        """Each model's latest ``limit`` runs, newest first per model."""
        where, params = q.model_filter(model_ids)
        statement = q.scheduled_runs_query(self._sched_table, where, False)
        rows = self._sql("read scheduled runs", statement, {**params, "limit": limit})
        return [ScheduledRun(model=f"{r['database']}.{r['table']}", scheduled_unix=int(r["scheduled_unix"]),
                             task_id=r["task_id"] or "", status="success" if r["status"] == "success" else "failed",
                             error=r["error"] or "", duration_ms=int(r["duration_ms"] or 0),
                             updated_at_ms=int(r["updated_ms"])) for r in rows]

    def record_action(self, action: AuditAction) -> None:
        """Append one change (one Delta commit)."""
        row = (datetime.fromtimestamp(action.at_ms / 1000, tz=UTC), action.who, action.action, action.target,
               json.dumps(dict(action.detail), sort_keys=True, default=str))
        self._append("record an API action", self._audit, _AUDIT_SCHEMA, [row])

    def actions(self, limit: int) -> list[AuditAction]:
        """The latest changes, newest first."""
        statement = f"""SELECT unix_millis(action_date_time) AS at_ms, who, action, target, detail FROM {self._audit}
ORDER BY action_date_time DESC LIMIT :limit"""
        return [AuditAction(at_ms=int(r["at_ms"]), who=r["who"] or "", action=r["action"] or "",
                            target=r["target"] or "", detail=_object(r["detail"]))
                for r in self._sql("read API actions", statement, {"limit": limit})]


def _object(text: str | None) -> dict[str, object]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}


def records_from_config(spark: SparkSession, config: Config, permit: Permit | None = None) -> ApiRecords:
    """The admin tables named in ``config.admin``, the audit table beside ``admin.incremental``; each statement
    under ``permit`` when given (Spark admission control)."""
    return admin_from_config(spark, config, ApiRecords, permit=permit)
