"""``cbt_scheduled``: every run of every scheduled model, successful or failed (history is kept)."""

from __future__ import annotations

from collections.abc import Collection

from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, model_filter, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.models.spec import ModelId
from cbt.state.admin_records import ScheduledRun, split_model_id

SCHEDULED = TableSpec(
    columns=(
        Column("updated_date_time", "TIMESTAMP", read_as="updated_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("scheduled_unix", "BIGINT", "the cron time this run was for"),
        Column("task_id", "STRING"),
        Column("status", "STRING", "success | failed"),
        Column("error", "STRING"),
        Column("duration_ms", "BIGINT"),
    ),
    comment="cbt: every run of every scheduled model",
)


class ScheduledRunsTable:
    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, SCHEDULED)

    def record_scheduled_run(self, run: ScheduledRun) -> None:
        """Append one run (history is kept: every run, successful or failed)."""
        self._session.append("record scheduled run", self.name, SCHEDULED.schema(),
                             [SCHEDULED.row(scheduled_row(run))])

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]:
        """Each model's latest run (highest scheduled time, then latest write), or latest successful one."""
        where, params = model_filter(model_ids)
        if successful_only:
            where = f"({where}) AND status = 'success'"
        rows = self._session.sql("read last scheduled runs", self._query(where, latest_only=True), params)
        runs = (scheduled_run_from(row) for row in rows)
        return {run.model: run for run in runs}

    def scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]:
        """Each model's latest ``limit`` runs, newest first per model."""
        where, params = model_filter(model_ids)
        rows = self._session.sql("read scheduled runs", self._query(where, latest_only=False),
                                 {**params, "limit": limit})
        return [scheduled_run_from(row) for row in rows]

    def _query(self, where: str, latest_only: bool) -> str:
        """Runs newest first (by scheduled time, then write time); with ``latest_only`` one per model."""
        order = "scheduled_unix DESC, updated_date_time DESC"
        keep = "WHERE rn = 1" if latest_only else "WHERE rn <= :limit"
        return f"""SELECT * FROM (
  SELECT {SCHEDULED.select()}, row_number() OVER (PARTITION BY `database`, `table` ORDER BY {order}) AS rn
  FROM {self.name} WHERE {where}
) {keep} ORDER BY `database`, `table`, rn"""


def scheduled_row(run: ScheduledRun) -> dict[str, object]:
    database, table = split_model_id(run.model)
    return {
        "updated_date_time": timestamp(run.updated_at_ms), "database": database, "table": table,
        "scheduled_unix": run.scheduled_unix, "task_id": run.task_id, "status": run.status, "error": run.error,
        "duration_ms": run.duration_ms,
    }  # fmt: skip


def scheduled_run_from(row: ReadRow) -> ScheduledRun:
    return ScheduledRun(
        model=f"{row['database']}.{row['table']}",
        scheduled_unix=int(row["scheduled_unix"]),
        task_id=row["task_id"] or "",
        status="success" if row["status"] == "success" else "failed",
        error=row["error"] or "",
        duration_ms=int(row["duration_ms"] or 0),
        updated_at_ms=int(row["updated_ms"]),
    )
