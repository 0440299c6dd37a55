"""``cbt_failures``: every task that failed its last attempt (history is kept; it is tried again on a later backfill
tick)."""

from __future__ import annotations

from collections.abc import Collection

from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, model_filter, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.state.admin_records import split_model_id


def failed_task_columns(failed: str) -> tuple[Column, ...]:
    """When and which task failed: the leading columns of ``cbt_failures`` and ``cbt_retries`` (``failed`` says
    what the time is of)."""
    return (
        Column("failed_date_time", "TIMESTAMP", failed, read_as="failed_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("position", "BIGINT"),
        Column("interval", "BIGINT", "the task [position, position + interval); null for a scheduled run"),
        Column("scheduled_unix", "BIGINT", "the cron time of a scheduled run"),
        Column("task_id", "STRING"),
    )


FAILURES = TableSpec(
    columns=(
        *failed_task_columns("when the last attempt failed"),
        Column("attempts", "BIGINT", "attempts made (0: the task could not be run at all)"),
        Column("error", "STRING"),
        Column("worker", "STRING"),
    ),
    comment="cbt: every task that failed its last attempt (it is tried again on a later backfill tick)",
)


class FailuresTable:
    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, FAILURES)

    def record_failure(self, failed: TaskFailed) -> None:
        """Append a task that failed its last attempt (history is kept)."""
        self._session.append("record failure", self.name, FAILURES.schema(), [FAILURES.row(failure_row(failed))])

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        """Recorded failures, newest first."""
        where, params = model_filter(model_ids)
        statement = f"""SELECT {FAILURES.select()}
FROM {self.name} WHERE {where} ORDER BY failed_date_time DESC, task_id LIMIT :limit"""
        return [failure_from(row) for row in self._session.sql("read failures", statement, {**params, "limit": limit})]


def failure_row(failed: TaskFailed) -> dict[str, object]:
    database, table = split_model_id(failed.model)
    return {
        "failed_date_time": timestamp(failed.failed_at_ms), "database": database, "table": table,
        "position": failed.position, "interval": failed.interval, "scheduled_unix": failed.scheduled_unix,
        "task_id": failed.task_id, "attempts": failed.attempts, "error": failed.error, "worker": failed.worker,
    }  # fmt: skip


def failure_from(row: ReadRow) -> TaskFailed:
    return TaskFailed(
        task_id=row["task_id"], model=f"{row['database']}.{row['table']}", position=row["position"],
        interval=row["interval"], scheduled_unix=row["scheduled_unix"], attempts=int(row["attempts"]),
        error=row["error"] or "", failed_at_ms=int(row["failed_ms"]), worker=row["worker"] or "",
    )
