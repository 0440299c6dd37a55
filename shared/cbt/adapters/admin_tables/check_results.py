"""``cbt_check_results``: every check's verdict on every interval it ran on (docs/checks.md), history kept."""

from __future__ import annotations

import json
from collections.abc import Collection

from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, model_filter, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.models.spec import ModelId
from cbt.state.admin_records import CheckedInterval, split_model_id
from cbt.state.ports import ALL_RESULTS, CheckFilter

CHECK_RESULTS_TABLE = "cbt_check_results"
CHECK_RESULTS = TableSpec(
    columns=(
        Column("checked_date_time", "TIMESTAMP", "when the check ran", read_as="checked_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("position", "BIGINT", "the interval [position, end)"),
        Column("end", "BIGINT"),
        Column("check", "STRING", "the check's name"),
        Column("severity", "STRING", "error or warn"),
        Column("status", "STRING", "passed, warned, failed or accepted"),
        Column("violations", "BIGINT", "violating rows found (row_count: 1 when the count is out of bounds)"),
        Column("rows", "BIGINT", "the interval's rows as computed (null: not counted, the checks ran in the write)"),
        Column("sample", "STRING", "JSON array: up to five violating rows"),
        Column("model_version", "STRING", "the model's version that computed the rows"),
        Column("task_id", "STRING"),
        Column("duration_ms", "BIGINT", "how long the task's checks took (one query for all of them)"),
    ),
    comment="cbt: every check's verdict on every interval it ran on",
)


class CheckResultsTable:
    """Check results through Spark."""

    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, CHECK_RESULTS)

    def record_check_results(self, results: Collection[CheckedInterval]) -> None:
        if results:
            self._session.append("record check results", self.name, CHECK_RESULTS.schema(),
                                 [CHECK_RESULTS.row(check_row(r)) for r in results])

    def check_results(self, model_ids: Collection[ModelId] | None = None, limit: int = 100,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]:
        """Recorded results that ``where`` selects, newest first."""
        selected, params = model_filter(model_ids)
        if where.status is not None:
            selected, params = f"{selected} AND status = :status", {**params, "status": where.status}
        if where.check is not None:
            selected, params = f"{selected} AND `check` = :check", {**params, "check": where.check}
        if where.window is not None:
            selected = f"{selected} AND position < :high AND `end` > :low"
            params = {**params, "low": where.window[0], "high": where.window[1]}
        statement = f"""SELECT {CHECK_RESULTS.select()} FROM {self.name} WHERE {selected}
ORDER BY checked_date_time DESC, position DESC, `check` LIMIT :limit"""
        return [check_from(row) for row in self._session.sql("read check results", statement,
                                                             {**params, "limit": limit})]


def check_row(result: CheckedInterval) -> dict[str, object]:
    database, table = split_model_id(result.model)
    return {"checked_date_time": timestamp(result.checked_at_ms), "database": database, "table": table,
            "position": result.position, "end": result.end, "check": result.check, "severity": result.severity,
            "status": result.status, "violations": result.violations, "rows": result.rows,
            "sample": json.dumps(list(result.sample)), "model_version": result.version, "task_id": result.task_id,
            "duration_ms": result.duration_ms}


def check_from(row: ReadRow) -> CheckedInterval:
    return CheckedInterval(
        model=f"{row['database']}.{row['table']}", position=int(row["position"]), end=int(row["end"]),
        check=row["check"], severity=row["severity"], status=row["status"], violations=int(row["violations"]),
        rows=None if row["rows"] is None else int(row["rows"]),
        sample=tuple(json.loads(row["sample"] or "[]")), version=row["model_version"],
        task_id=row["task_id"] or "", duration_ms=int(row["duration_ms"] or 0),
        checked_at_ms=int(row["checked_ms"] or 0))
