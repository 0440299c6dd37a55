"""A model's task history from the durable record: completed intervals, retried attempts, final failures and
scheduled runs, merged newest first: every attempt of a task. Pure; the rows come from the admin tables
(``cbt.api.records``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cbt.api.schemas import TaskItem
from cbt.contract.messages import TaskFailed
from cbt.state.admin_records import RetriedAttempt, ScheduledRun


@dataclass(frozen=True)
class Completion:
    """One row of ``cbt_incremental``: a task (or, consolidated, a run of touching tasks) that completed."""

    task_id: str
    position: int
    interval: int
    direction: str
    worker: str
    duration_ms: int
    at_ms: int


def from_completion(row: Completion) -> TaskItem:
    return TaskItem(task_id=row.task_id, range=(row.position, row.position + row.interval), scheduled_unix=None,
                    status="success", error=None, duration_ms=row.duration_ms, worker=row.worker,
                    direction=row.direction, at_ms=row.at_ms, attempts=None)


def from_failure(failed: TaskFailed) -> TaskItem:
    span = None if failed.position is None or failed.interval is None else (
        failed.position, failed.position + failed.interval)
    return TaskItem(task_id=failed.task_id, range=span, scheduled_unix=failed.scheduled_unix, status="failed",
                    error=failed.error, duration_ms=None, worker=failed.worker, direction=None,
                    at_ms=failed.failed_at_ms, attempts=failed.attempts)


def from_retry(retried: RetriedAttempt) -> TaskItem:
    span = None if retried.position is None or retried.interval is None else (
        retried.position, retried.position + retried.interval)
    return TaskItem(task_id=retried.task_id, range=span, scheduled_unix=retried.scheduled_unix, status="retried",
                    error=retried.error, duration_ms=retried.duration_ms, worker=retried.worker,
                    direction=retried.direction or None, at_ms=retried.failed_at_ms, attempts=retried.attempt)


def from_scheduled_run(run: ScheduledRun) -> TaskItem:
    return TaskItem(task_id=run.task_id, range=None, scheduled_unix=run.scheduled_unix, status=run.status,
                    error=run.error or None, duration_ms=run.duration_ms, worker="", direction="scheduled",
                    at_ms=run.updated_at_ms, attempts=None)


def failures_known(recorded: Iterable[TaskFailed], hot: Iterable[TaskFailed], limit: int) -> list[TaskFailed]:
    """The recorded failures plus those the coordinator's failure log (Redis) already has and the admin table not
    yet: the worker appends its row after publishing, best-effort, on a Spark that may be busy with a backlog, so
    without them ``/failures`` lagged the failed ranges ``/coverage`` shows. Newest first, at most ``limit``."""
    known = {(f.task_id, f.failed_at_ms): f for f in (*hot, *recorded)}
    return sorted(known.values(), key=lambda f: (-f.failed_at_ms, f.task_id))[:limit]


def merged(completions: Iterable[Completion], failures: Iterable[TaskFailed], runs: Iterable[ScheduledRun],
           limit: int, retries: Iterable[RetriedAttempt] = ()) -> list[TaskItem]:
    """Every entry, newest first (ties by task id, then the later attempt first), at most ``limit``."""
    items = [*map(from_completion, completions), *map(from_failure, failures), *map(from_scheduled_run, runs),
             *map(from_retry, retries)]
    return sorted(items, key=lambda t: (-t.at_ms, t.task_id, -(t.attempts or 0)))[:limit]
