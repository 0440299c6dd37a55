"""Durable completion records: incremental intervals are group-committed to the admin table, one Delta commit
for every completion that arrives while the previous commit runs; scheduled runs, tasks that failed their last
attempt and attempts that were retried are appended as they finish."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from cbt.adapters.admin_tables.check_results import CheckResultsTable
from cbt.adapters.admin_tables.file_tables import CheckResultsFiles
from cbt.adapters.delta_admin import DeltaAdmin
from cbt.concurrency.groupcommit import GroupCommitter
from cbt.contract.messages import TaskFailed
from cbt.observability import metrics
from cbt.state.admin_records import CheckedInterval, CompletedInterval, RetriedAttempt, ScheduledRun
from cbt.worker.runner import CompletionRow


@dataclass
class AdminRecorder:
    admin: DeltaAdmin
    worker_id: str
    _intervals: GroupCommitter[CompletedInterval] = field(init=False)
    _checks: CheckResultsTable | CheckResultsFiles | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._intervals = GroupCommitter(self._flush)

    async def record(self, row: CompletionRow) -> None:
        task = row.task
        if task.position is not None and task.interval is not None:
            await self._intervals.submit(CompletedInterval(
                model=task.model, position=task.position, interval=task.interval, task_id=task.task_id,
                direction=task.direction, invalidation_seq=row.invalidation_seq, worker=self.worker_id,
                duration_ms=row.duration_ms, task_interval=task.step, version=row.version,
            ))
        elif task.scheduled_unix is not None:
            await asyncio.to_thread(self.admin.record_scheduled_run, ScheduledRun(
                model=task.model, scheduled_unix=task.scheduled_unix, task_id=task.task_id, status=row.status,
                error=row.error, duration_ms=row.duration_ms,
            ))

    async def record_failure(self, failed: TaskFailed) -> None:
        await asyncio.to_thread(self.admin.record_failure, failed)

    async def record_retry(self, retried: RetriedAttempt) -> None:
        await asyncio.to_thread(self.admin.record_retry, retried)

    async def record_checks(self, results: list[CheckedInterval]) -> None:
        if results:
            await asyncio.to_thread(self._check_results().record_check_results, results)

    def _check_results(self) -> CheckResultsTable | CheckResultsFiles:
        if self._checks is None:
            self._checks = self.admin.check_results_record()
        return self._checks

    async def close(self) -> None:
        await self._intervals.close()

    async def _flush(self, rows: list[CompletedInterval]) -> None:
        began = time.monotonic()
        await asyncio.to_thread(self.admin.record_completed, rows)
        metrics.admin_commit_duration.record(time.monotonic() - began)
