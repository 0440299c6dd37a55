"""``cbt_retries``: every attempt of a task that failed and was tried again (the last failed attempt is in
``cbt_failures``)."""

from __future__ import annotations

from collections.abc import Collection

from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, model_filter, timestamp
from cbt.adapters.admin_tables.failures import failed_task_columns
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.models.spec import ModelId
from cbt.state.admin_records import RetriedAttempt, split_model_id

RETRIES = TableSpec(
    columns=(
        *failed_task_columns("when the attempt failed"),
        Column("attempt", "BIGINT", "which attempt failed (1 is the first)"),
        Column("error", "STRING"),
        Column("direction", "STRING", "forward, backfill, rerun or scheduled"),
        Column("worker", "STRING"),
        Column("duration_ms", "BIGINT", "how long the failed attempt ran"),
    ),
    comment="cbt: every attempt of a task that failed and was tried again (the last failed attempt is in cbt_failures)",
)


class RetriesTable:
    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, RETRIES)

    def record_retry(self, retried: RetriedAttempt) -> None:
        """Append an attempt that failed and was tried again."""
        self._session.append("record retried attempt", self.name, RETRIES.schema(), [RETRIES.row(retry_row(retried))])

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        """Recorded retried attempts, newest first."""
        where, params = model_filter(model_ids)
        statement = f"""SELECT {RETRIES.select()}
FROM {self.name} WHERE {where} ORDER BY failed_date_time DESC, task_id, attempt DESC LIMIT :limit"""
        rows = self._session.sql("read retried attempts", statement, {**params, "limit": limit})
        return [retried_from(row) for row in rows]


def retry_row(retried: RetriedAttempt) -> dict[str, object]:
    database, table = split_model_id(retried.model)
    return {
        "failed_date_time": timestamp(retried.failed_at_ms), "database": database, "table": table,
        "position": retried.position, "interval": retried.interval, "scheduled_unix": retried.scheduled_unix,
        "task_id": retried.task_id, "attempt": retried.attempt, "error": retried.error,
        "direction": retried.direction, "worker": retried.worker, "duration_ms": retried.duration_ms,
    }  # fmt: skip


def retried_from(row: ReadRow) -> RetriedAttempt:
    return RetriedAttempt(
        model=f"{row['database']}.{row['table']}", task_id=row["task_id"], attempt=int(row["attempt"]),
        error=row["error"] or "", position=row["position"], interval=row["interval"],
        scheduled_unix=row["scheduled_unix"], direction=row["direction"] or "", worker=row["worker"] or "",
        duration_ms=int(row["duration_ms"] or 0), failed_at_ms=int(row["failed_ms"]),
    )
