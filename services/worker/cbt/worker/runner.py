"""The worker's use case: run one requested task at most once at a time, and record it only if still valid.

Order of effects for an incremental task (each step makes a crash at any point safe):
0. while the hot index is being rebuilt (Redis emptied) → wait: "not covered" cannot be trusted yet;
1. already covered in the hot index (for a scheduled run: its fire time already ran), or covered but for intervals
   a failed check holds (docs/checks.md) → acknowledge without running (a redelivered duplicate);
2. take the task's lease and its fencing token (a duplicate running elsewhere waits for it or for its coverage);
   a heartbeat renews it, through transient Redis errors, and stops the run when the lease is lost;
3. read the model's invalidation sequence, then re-check every dependency (never fail open);
4. run the statements (retried with backoff; after the last attempt publish ``task-failed``);
5. check the lease is still held, then append the completion to the admin table (group commit) — durable before
   anything says it happened;
6. add the range to the hot index unless a newer invalidation overlaps it or the lease was taken over — checked
   atomically with the token (invalidation wins: the task is then requeued to run again on the new data); for a
   scheduled run, flag the model as having run;
7. publish ``interval-completed``, release the ledger entry and the lease; then the offset is committed.

A run whose lease was lost records nothing: the run that took the lease over records the task, or, when nobody
did (Redis unreachable past the ttl, or restarted), the task is requeued (``docs/protocol.md``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cbt.base.tasks import incremental_task_id
from cbt.contract.messages import IntervalCompleted, TaskFailed, TaskRequested, now_ms
from cbt.contract.topics import Topics
from cbt.models.dag import ModelSet
from cbt.models.interval_checks import CheckedRun, IntervalCheck
from cbt.models.spec import IncrementalModel, ModelId, ScheduledModel, Transformation
from cbt.models.templates import TaskContext
from cbt.observability import metrics, tracing
from cbt.planning.live import LiveStateReader
from cbt.scheduling import bounds as bnd
from cbt.scheduling.coverage import Range, covers, merge, union
from cbt.scheduling.message_checks import task_problem
from cbt.scheduling.snapshot import StateSnapshot
from cbt.service.lease import LeaseHolder
from cbt.state.admin_records import CheckedInterval, RetriedAttempt
from cbt.state.ports import BoundsStore, CheckHolds, HeldInterval, HotIndex, Leases, Publisher, TaskLedger

log = logging.getLogger("cbt.worker")

Outcome = Literal["completed", "already-covered", "not-ready", "superseded", "busy", "failed", "unknown-model",
                  "lease-lost", "handed-back", "stale-version", "checks-failed", "held", "rechecked",
                  "recheck-failed"]
HAND_BACK_PAUSE_S = 2.0
"""How long a worker whose files are not the deployed version waits before handing a task back (so, in a rolling
update, the task goes round the workers at that pace until one has the deployed files)."""


def published_runs(checked: CheckedRun) -> list[Range]:
    """The runs of adjacent intervals that were written (no ``error`` check failed)."""
    runs: list[Range] = []
    for verdict in checked.intervals:
        if not verdict.is_published:
            continue
        if runs and runs[-1][1] == verdict.start:
            runs[-1] = (runs[-1][0], verdict.end)
        else:
            runs.append((verdict.start, verdict.end))
    return runs


def task_range(task: TaskRequested) -> Range | None:
    """``[position, position + interval)`` of an incremental task; ``None`` for a scheduled one."""
    return None if task.position is None or task.end is None else (task.position, task.end)


class Executor(Protocol):
    async def run(self, model: Transformation, task: TaskContext) -> float | CheckedRun | None:
        """Run the task; returns the seconds the work itself took (not waiting for its table or a slot), or
        ``None`` to let the caller time the whole call; for a model with checks, with each interval's verdicts
        (only the intervals no ``error`` check failed were written)."""
        ...

    async def recheck(self, model: IncrementalModel, task: TaskContext,
                      checks: Sequence[IntervalCheck]) -> CheckedRun:
        """Run ``checks`` over the rows the task's intervals hold in the model's table now; nothing is written."""
        ...


@dataclass(frozen=True)
class Executed:
    """A task's work done; what recording it needs."""

    invalidation_seq: int
    duration_ms: int
    checked: CheckedRun | None = None


def _is_cancelling() -> bool:
    """Whether the running task itself is being cancelled (not just something it awaited)."""
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def _finished(outcome: Outcome) -> asyncio.Future[Outcome]:
    future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
    future.set_result(outcome)
    return future


@dataclass(frozen=True)
class CompletionRow:
    task: TaskRequested
    invalidation_seq: int
    duration_ms: int
    status: Literal["success", "failed"] = "success"
    error: str = ""
    version: str | None = None
    """The model's version that computed it (``cbt.models.versions``)."""


class CompletionRecorder(Protocol):
    async def record(self, row: CompletionRow) -> None:
        """Returns once the row is durable in the admin tables."""
        ...

    async def record_failure(self, failed: TaskFailed) -> None:
        """Returns once the failure is in the admin tables' history."""
        ...

    async def record_retry(self, retried: RetriedAttempt) -> None:
        """Returns once the failed attempt is in the admin tables' history."""
        ...

    async def record_checks(self, results: list[CheckedInterval]) -> None:
        """Returns once the check results are durable (``cbt_check_results``)."""
        ...


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    multiplier: float = 2.0

    def delay_s(self, attempt: int) -> float:
        return float(min(self.backoff_initial_s * self.multiplier ** (attempt - 1), self.backoff_max_s))


@dataclass(frozen=True)
class WorkerPorts:
    coverage: HotIndex
    bounds: BoundsStore
    ledger: TaskLedger
    leases: Leases
    publisher: Publisher
    recorder: CompletionRecorder
    holds: CheckHolds | None = None
    """Where an interval a failed check stopped is held (not planned again until its inputs or definition change)."""


@dataclass
class TaskRunner:
    models: ModelSet
    ports: WorkerPorts
    executor: Executor
    topics: Topics
    worker_id: str
    retry: RetryPolicy = RetryPolicy()
    lease_ttl_s: float = 30.0
    index_poll_s: float = 0.5
    pools: Collection[str] = ("default",)
    """Every configured pool (``message_checks``: a task names one of them)."""
    max_batch_intervals: int = 1024
    """``scheduler.batch.max_intervals``: no batch the planner makes is longer."""
    milestone: Callable[[str], None] = lambda _: None
    """Records a start-up milestone (``first task started``, ``first completion``: ``cbt.service.startup``)."""
    versions: Mapping[ModelId, str] = field(default_factory=dict)
    """Each loaded model's version (``Fingerprint.short``): every completion says which computed it."""
    deployed_version: Callable[[ModelId], str | None] = lambda _: None
    """The model's deployed version (``Fingerprint.short``), read from the versions record; ``None``: unknown."""
    running: Callable[[], tuple[ModelSet, Mapping[ModelId, str]]] | None = None
    """The models to run now with their versions — the files' with the builds in progress beside them
    (``cbt.models.builds``) — read when a task names a model or a version this worker does not run yet."""
    hand_back_pause_s: float = HAND_BACK_PAUSE_S

    def why_unusable(self, task: TaskRequested) -> str | None:
        """Why ``task`` cannot be a task the planner made for a loaded model (``cbt.scheduling.message_checks``):
        it is rejected before any work. A task of a model that is not loaded is not rejected here: it fails as
        before, visibly in the failure log (the model may have been removed while its tasks were queued)."""
        if task.model not in self.models.models:
            return None
        return task_problem(task, self.models.models, self.pools, self.max_batch_intervals)

    async def handle(self, task: TaskRequested) -> Outcome:
        """Run one task to the end (steps 0 to 7), counted in the task metrics by its outcome."""
        labels = {"model": task.model if task.model in self.models else "unknown"}
        began = time.monotonic()
        running = {**labels, "worker": self.worker_id}
        metrics.tasks_running.add(1, running)
        try:
            outcome = await (await self.begin(task))
        finally:
            metrics.tasks_running.add(-1, running)
        status = {"completed": "success", "failed": "failed"}.get(outcome, outcome)
        metrics.tasks.add(1, {**labels, "status": status})
        if outcome in ("completed", "failed"):
            metrics.task_duration.record(time.monotonic() - began, {**labels, "status": status})
        if outcome == "completed" and task.interval is not None:
            metrics.positions_completed.add(task.interval, labels)
        return outcome

    async def begin(self, task: TaskRequested) -> asyncio.Future[Outcome]:
        """Do the task's work (steps 0 to 4) and return the rest — recording it, steps 5 to 7 — as a running future
        (what ``handle`` awaits). Outcomes decided early come back as finished futures."""
        if self.running is not None and (task.model not in self.models.models or task.version not in (
                None, self.versions.get(task.model))):
            self.models, self.versions = await asyncio.to_thread(self.running)
        model = self.models.models.get(task.model)
        if not isinstance(model, IncrementalModel | ScheduledModel):
            await self._fail(task, 0, f"no transformation {task.model!r} in the loaded models")
            return _finished("unknown-model")
        other_version = await self._other_version(model, task)
        if other_version is not None:
            return _finished(other_version)
        if task.recheck is not None:
            return _finished(await self._recheck(model, task, task.recheck))
        await self._wait_for_index()
        if self._is_covered(model, task):
            self.ports.ledger.release(task.model, task.task_id)
            return _finished("already-covered")
        if self._is_held(model, task):
            self.ports.ledger.release(task.model, task.task_id)
            return _finished("held")
        held = await self._acquire(f"task:{task.task_id}", model, task)
        if held is None:
            if self._is_covered(model, task):
                return _finished("already-covered")
            if self._is_held(model, task):
                return _finished("held")
            # Still held elsewhere. This copy is acknowledged, so it must not be the last one: if the holder then
            # fails to record, nothing would run the task until its claim expires (hours). Publish it again.
            await self._requeue(task)
            return _finished("busy")
        work = asyncio.ensure_future(self._execute_leased(model, task))

        def stop_the_run() -> None:
            log.error("task lease lost while running; stopping the run", extra={"lease": held.name})
            work.cancel()

        heartbeat = asyncio.create_task(held.keep(self.lease_ttl_s / 3, on_lost=stop_the_run))
        try:
            executed = await work
        except asyncio.CancelledError:
            await self._end_lease(held, heartbeat)
            if not held.is_lost or _is_cancelling():
                raise
            return _finished(await self._lease_lost(task, held))
        except BaseException:
            await self._end_lease(held, heartbeat)
            raise
        if not isinstance(executed, Executed):
            await self._end_lease(held, heartbeat)
            return _finished(executed)
        return asyncio.ensure_future(self._record_then_end_lease(model, task, executed, held, heartbeat))

    async def _execute_leased(self, model: IncrementalModel | ScheduledModel,
                              task: TaskRequested) -> Executed | Outcome:
        seq = self.ports.coverage.invalidation_seq(model.id)
        superseded = self._superseded(model, task)
        if superseded is not None:
            return superseded
        with tracing.tracer.start_as_current_span("dependency check"):
            checked = time.monotonic()
            why = self._why_not_ready(model, task)
        metrics.dependency_validation.add(1, {"model": model.id, "result": "not_satisfied" if why else "satisfied"})
        metrics.dependency_validation_duration.record(time.monotonic() - checked, {"model": model.id})
        if why is not None:
            log.info("task not ready at execution time", extra={"task_id": task.task_id, "reason": why})
            self.ports.ledger.release(model.id, task.task_id)
            return "not-ready"
        log.debug("task started", extra={"task_id": task.task_id, "model": model.id})  # (bench (b) reads it)
        self.milestone("first task started")
        started = time.monotonic()
        error, worked_s, verdicts = await self._execute_with_retries(model, task)
        duration_ms = int((time.monotonic() - started if worked_s is None else worked_s) * 1000)
        if error is not None:
            if isinstance(model, ScheduledModel):
                await self.ports.recorder.record(CompletionRow(task, seq, duration_ms, "failed", error))
            await self._fail(task, self.retry.max_attempts, error)
            return "failed"
        return Executed(seq, duration_ms, verdicts)

    async def _record_then_end_lease(self, model: IncrementalModel | ScheduledModel, task: TaskRequested,
                                     executed: Executed, held: LeaseHolder, heartbeat: asyncio.Task[None]) -> Outcome:
        try:
            return await self._record(model, task, executed, held)
        finally:
            await self._end_lease(held, heartbeat)

    async def _record(self, model: IncrementalModel | ScheduledModel, task: TaskRequested,
                      executed: Executed, held: LeaseHolder) -> Outcome:
        seq, duration_ms = executed.invalidation_seq, executed.duration_ms
        if not self._still_holds(held):
            return await self._lease_lost(task, held)
        superseded = self._superseded(model, task)  # (again: a version announced while it ran — its range may lie
        # beyond what the change's invalidation covered, and the next run of its version rewrites its rows)
        if superseded is not None:
            return superseded
        if executed.checked is not None and isinstance(model, IncrementalModel):
            await self._record_checks(model, task, executed.checked)
            if executed.checked.failed:
                return await self._record_published_parts(model, task, executed, held)
        version = self.versions.get(model.id)
        with tracing.tracer.start_as_current_span("admin commit"):
            await self.ports.recorder.record(CompletionRow(task, seq, duration_ms, version=version))
        if isinstance(model, ScheduledModel) and task.scheduled_unix is not None:
            self.ports.coverage.record_scheduled_run(model.id, task.scheduled_unix)
        done = task_range(task) if isinstance(model, IncrementalModel) else None
        if done is not None and not self.ports.coverage.record_completed(model.id, done, seq, held.fence, version):
            if not self._still_holds(held):
                return await self._lease_lost(task, held)
            # It may have read data the invalidation declared stale: run it again now, on the new data (its ledger
            # claim stays, so the coordinator does not enqueue it a second time).
            log.info("completion superseded by an invalidation; task requeued", extra={"task_id": task.task_id})
            await self._requeue(task)
            return "superseded"
        if done is not None and executed.checked is not None and isinstance(model, IncrementalModel):
            self._release_accepted(model, done)
        await self.ports.publisher.publish(self.topics.interval_completed, IntervalCompleted(
            task_id=task.task_id, model=task.model, position=task.position, interval=task.interval,
            scheduled_unix=task.scheduled_unix, direction=task.direction, duration_ms=duration_ms,
            enqueued_at_ms=task.enqueued_at_ms, worker=self.worker_id, step=task.step, version=version,
        ), key=task.model)
        self.ports.ledger.release(model.id, task.task_id)
        self.milestone("first completion")
        return "completed"

    async def _recheck(self, model: IncrementalModel | ScheduledModel, task: TaskRequested,
                       checks: Sequence[IntervalCheck]) -> Outcome:
        """Run the checks a deployment changed over the task's published intervals and record their verdicts
        (task ``recheck:<task id>``, docs/checks.md#when-a-check-changes): nothing is written or covered, and a
        failed one holds nothing — the rows were published before. One copy at a time (a lease); a failure is
        logged, not retried: the checks run again at the next change or re-run of those intervals."""
        if not isinstance(model, IncrementalModel) or model.write.strategy != "replace" or task.position is None:
            log.warning("a re-check of a model whose published rows cannot be told apart by interval; dropped",
                        extra={"task_id": task.task_id})
            return "recheck-failed"
        held = LeaseHolder(self.ports.leases, f"recheck:{task.task_id}", f"{self.worker_id}/{uuid.uuid4().hex[:12]}",
                           self.lease_ttl_s)
        if held.acquire() is None:
            return "busy"
        try:
            context = TaskContext(model_id=model.id, task_start_unix=int(time.time()), start=task.position,
                                  end=task.end, direction=task.direction, step=task.step)
            checked = await self.executor.recheck(model, context, checks)
            await self._record_checks(model, task, checked, f"recheck:{task.task_id}")
        except Exception as e:  # a re-check must never take the worker down
            log.warning("re-checking published intervals failed", extra={"task_id": task.task_id,
                                                                         "error": str(e)[:500]})
            return "recheck-failed"
        finally:
            held.release()
        log.info("published intervals checked again", extra={
            "task_id": task.task_id, "checks": [c.name for c in checks],
            "failed": [f"[{v.start}, {v.end}): {v.reason()}" for v in checked.failed][:20]})
        return "rechecked"

    async def _record_checks(self, model: IncrementalModel, task: TaskRequested, checked: CheckedRun,
                             recorded_as: str | None = None) -> None:
        """Every verdict in ``cbt_check_results`` (durable before the intervals are covered or held), counted."""
        version = self.versions.get(model.id)
        rows = [CheckedInterval(model.id, v.start, v.end, r.check, r.severity, r.status, r.violations, v.rows,
                                r.sample, version, recorded_as or task.task_id, int(checked.check_s * 1000))
                for v in checked.intervals for r in v.results]
        with tracing.tracer.start_as_current_span("check results"):
            await self.ports.recorder.record_checks(rows)
        for row in rows:
            metrics.check_results.add(1, {"model": model.id, "check": row.check, "status": row.status})

    async def _record_published_parts(self, model: IncrementalModel, task: TaskRequested, executed: Executed,
                                      held: LeaseHolder) -> Outcome:
        """A task some of whose intervals failed an ``error`` check: those were not written; they are held (not
        planned again until their inputs or definition change). The runs of intervals that were written are
        recorded as tasks of their own (covered, published); the task's claim is released."""
        checked = executed.checked
        assert checked is not None
        version = self.versions.get(model.id)
        failed = checked.failed
        log.warning("interval checks failed: intervals not published", extra={
            "task_id": task.task_id, "model": model.id,
            "failed": [f"[{v.start}, {v.end}): {v.reason()}" for v in failed][:20]})
        if self.ports.holds is not None:
            self.ports.holds.hold(model.id, [HeldInterval(v.start, v.end, version, v.reason()) for v in failed])
        for start, end in published_runs(checked):
            part = TaskRequested(**{**task.model_dump(), "task_id": incremental_task_id(model.id, start, end - start),
                                    "position": start, "interval": end - start,
                                    "step": task.step if task.step and end - start > task.step else None})
            await self.ports.recorder.record(CompletionRow(part, executed.invalidation_seq, executed.duration_ms,
                                                           version=version))
            if not self.ports.coverage.record_completed(model.id, (start, end), executed.invalidation_seq,
                                                        held.fence, version):
                if not self._still_holds(held):
                    return await self._lease_lost(task, held)
                await self._requeue(part)  # (an invalidation overlapped it meanwhile: run it again on the new data)
                continue
            self._release_accepted(model, (start, end))
            await self.ports.publisher.publish(self.topics.interval_completed, IntervalCompleted(
                task_id=part.task_id, model=part.model, position=part.position, interval=part.interval,
                direction=part.direction, duration_ms=executed.duration_ms, enqueued_at_ms=part.enqueued_at_ms,
                worker=self.worker_id, step=part.step, version=version), key=part.model)
            metrics.positions_completed.add(end - start, {"model": model.id})
        self.ports.ledger.release(model.id, task.task_id)
        return "checks-failed"

    async def _end_lease(self, held: LeaseHolder, heartbeat: asyncio.Task[None]) -> None:
        heartbeat.cancel()
        try:
            await asyncio.wait({heartbeat})  # (a cancellation of this task itself still propagates)
        finally:
            held.release()

    def _still_holds(self, held: LeaseHolder) -> bool:
        """Whether the lease is still this run's (renewed now, so it also lasts through the recording)."""
        return held.renew()

    async def _lease_lost(self, task: TaskRequested, held: LeaseHolder) -> Outcome:
        """The run records nothing. If another run holds the lease, it records the task; if nobody does (Redis was
        unreachable past the ttl, or restarted), the task is requeued so it is not left to the ledger deadline."""
        probe = f"{self.worker_id}/probe-{uuid.uuid4().hex[:8]}"
        if self.ports.leases.acquire(held.name, probe, held.ttl_ms) is None:
            log.warning("task lease taken over; this run is not recorded", extra={"task_id": task.task_id})
            return "lease-lost"
        self.ports.leases.release(held.name, probe)
        log.warning("task lease lost and not taken over; task requeued", extra={"task_id": task.task_id})
        await self._requeue(task)
        return "lease-lost"

    async def _other_version(self, model: Transformation, task: TaskRequested) -> Outcome | None:
        """A task planned with another version of the model than this worker's files define (a rolling update): when
        this worker's version is the deployed one, the task was planned from files no longer deployed — it is
        dropped and its claim released, so the coordinator plans it again; otherwise this worker's files are not
        (yet) the deployed ones, and the task is handed back for a worker that has them. Never run with the wrong
        definition."""
        mine, planned = self.versions.get(model.id), task.version
        if mine is None or planned is None or mine == planned:
            return None
        deployed = await asyncio.to_thread(self.deployed_version, model.id)
        if deployed == mine:
            log.info("task planned with a version no longer deployed; dropped",
                     extra={"task_id": task.task_id, "planned": planned, "deployed": deployed})
            self.ports.ledger.release(model.id, task.task_id)
            return "stale-version"
        log.info("task of another version than this worker's files; handed back",
                 extra={"task_id": task.task_id, "planned": planned, "mine": mine, "deployed": deployed})
        await asyncio.sleep(self.hand_back_pause_s)
        await self._requeue(task, key=f"{task.task_id}#{uuid.uuid4().hex[:8]}")  # (another partition, maybe another
        # worker's: the task's own key would bring it back to this one)
        return "handed-back"

    def _superseded(self, model: Transformation, task: TaskRequested) -> Outcome | None:
        """A task of a version other than the one the coordinator announced for the model (a deployment, a switch or
        a rollback since it was planned: ``announce_versions``) — or, planned without one, a model this worker
        defines otherwise — is dropped and its claim released, never run. Read after the model's sequence: an
        announcement made after this check comes before the invalidation it precedes, whose epoch then refuses this
        run's completion."""
        planned = task.version if task.version is not None else self.versions.get(model.id)
        announced = self.ports.coverage.deployed_versions([model.id]).get(model.id)
        if announced is None or planned is None or announced == planned:
            return None
        log.info("task planned with a version since superseded; dropped",
                 extra={"task_id": task.task_id, "planned": task.version, "announced": announced})
        self.ports.ledger.release(model.id, task.task_id)
        return "stale-version"

    async def _requeue(self, task: TaskRequested, key: str | None = None) -> None:
        """Publish the task again (its ledger claim stays, so the coordinator does not enqueue a second copy)."""
        await self.ports.publisher.publish(self.topics.task_requested(task.pool),
                                           task.model_copy(update={"enqueued_at_ms": now_ms()}),
                                           key=key or task.task_id)

    async def _execute_with_retries(self, model: Transformation,
                                    task: TaskRequested) -> tuple[str | None, float | None, CheckedRun | None]:
        """``(None, seconds the successful attempt's work took, its check verdicts)``, else ``(the last error, None,
        None)``. Only the work is timed — not failed attempts, backoff, or waiting for the table or a slot — since
        the batch sizes are fitted on it. A failed check is not an error: retrying the same inputs cannot help."""
        error = ""
        accepted = self._accepted(model, task)
        for attempt in range(1, self.retry.max_attempts + 1):
            context = TaskContext(
                model_id=model.id, task_start_unix=int(time.time()), start=task.position, end=task.end,
                direction=task.direction, attempt=attempt, step=task.step, accepted=accepted,
            ) if task.scheduled_unix is None else TaskContext(
                model_id=model.id, task_start_unix=task.scheduled_unix, direction=task.direction, attempt=attempt,
            )
            began = time.monotonic()
            try:
                with tracing.tracer.start_as_current_span("spark job" if model.exec is None else "script",
                                                          attributes={"cbt.attempt": attempt}):
                    ran = await self.executor.run(model, context)
                checked = ran if isinstance(ran, CheckedRun) else None
                worked_s = ran.seconds if isinstance(ran, CheckedRun) else ran
                worked_s = time.monotonic() - began if worked_s is None else worked_s
                metrics.spark_job_duration.record(worked_s, {"model": model.id})
                return None, worked_s, checked
            except Exception as e:  # a model's failure must never take the worker down
                error = str(e) or type(e).__name__
                log.warning("task attempt failed", extra={"task_id": task.task_id, "attempt": attempt,
                                                          "error": error[:500]})
                metrics.errors.add(1, {"component": "worker", "error_type": type(e).__name__})
            if attempt < self.retry.max_attempts:
                metrics.tasks.add(1, {"model": model.id, "status": "retried"})
                retried = RetriedAttempt(
                    model=model.id, task_id=task.task_id, attempt=attempt, error=error[-4000:],
                    position=task.position, interval=task.interval, scheduled_unix=task.scheduled_unix,
                    direction=task.direction, worker=self.worker_id,
                    duration_ms=int((time.monotonic() - began) * 1000))
                await asyncio.gather(self._record_retry(retried), asyncio.sleep(self.retry.delay_s(attempt)))
        return error, None, None

    def _why_not_ready(self, model: IncrementalModel | ScheduledModel, task: TaskRequested) -> str | None:
        wanted = task_range(task)
        if not isinstance(model, IncrementalModel) or wanted is None:
            return None
        snapshot = self._dependency_state(model)
        return bnd.why_not_ready(bnd.readiness(model, self.models.models, snapshot), wanted)

    def _dependency_state(self, model: IncrementalModel) -> StateSnapshot:
        deps = self.models.dependencies(model.id)
        reader = LiveStateReader(self.models, self.ports.coverage, self.ports.bounds, self.ports.ledger)
        return reader.read_offers(deps)

    async def _wait_for_index(self) -> None:
        """Hold the task (its offset uncommitted) until the coordinator has rebuilt the hot index."""
        if self.ports.coverage.is_built():
            return
        log.warning("waiting for the coordinator to rebuild the hot coverage index before running tasks")
        while not self.ports.coverage.is_built():
            await asyncio.sleep(self.index_poll_s)

    def _is_covered(self, model: IncrementalModel | ScheduledModel, task: TaskRequested) -> bool:
        """Already done: an interval covered, or a scheduled run for this fire time succeeded."""
        if isinstance(model, ScheduledModel):
            return task.scheduled_unix is not None and self.ports.coverage.has_fired(model.id, task.scheduled_unix)
        wanted = task_range(task)
        return wanted is not None and covers(self.ports.coverage.coverage(model.id), wanted)

    def _is_held(self, model: IncrementalModel | ScheduledModel, task: TaskRequested) -> bool:
        """Covered, but for intervals a failed check holds in this version (a redelivered task of a held interval:
        the same inputs would fail the same way; an invalidation over it releases it and plans it again)."""
        wanted = task_range(task)
        if wanted is None or self.ports.holds is None or not isinstance(model, IncrementalModel) or not model.checks:
            return False
        version = self.versions.get(model.id)
        held = [(h.start, h.end) for h in self.ports.holds.held([model.id]).get(model.id, ())
                if h.version in (None, version) and not h.is_accepted]
        return bool(held) and covers(union(self.ports.coverage.coverage(model.id), merge(held)), wanted)

    def _accepted(self, model: Transformation, task: TaskRequested) -> tuple[Range, ...]:
        """The intervals of the task an operator accepted despite failed checks (``cbt checks accept``)."""
        wanted = task_range(task)
        if wanted is None or self.ports.holds is None or not isinstance(model, IncrementalModel) or not model.checks:
            return ()
        version = self.versions.get(model.id)
        return tuple((h.start, h.end) for h in self.ports.holds.held([model.id]).get(model.id, ())
                     if h.is_accepted and h.version in (None, version) and h.start < wanted[1] and wanted[0] < h.end)

    def _release_accepted(self, model: IncrementalModel, published: Range) -> None:
        """Accepted intervals, once published, are held no more."""
        if self.ports.holds is None:
            return
        accepted = [h for h in self.ports.holds.held([model.id]).get(model.id, ())
                    if h.is_accepted and published[0] <= h.start and h.end <= published[1]]
        for h in accepted:
            self.ports.holds.release(model.id, (h.start, h.end))
            log.info("an accepted interval was published", extra={"model": model.id, "range": [h.start, h.end],
                                                                    "accepted_by": h.accepted_by})

    async def _acquire(self, lease: str, model: IncrementalModel | ScheduledModel,
                       task: TaskRequested) -> LeaseHolder | None:
        """Take the lease, waiting while a duplicate holds it (it may finish, or its holder may have died). ``None``
        when it stays held, or when the task turns out done once it is taken: the holder recorded it just before
        releasing the lease, and running it again would repeat a scheduled fire time."""
        deadline = time.monotonic() + self.lease_ttl_s * 2
        # The owner is this run, not the process: the process may take the task again.
        held = LeaseHolder(self.ports.leases, lease, f"{self.worker_id}/{uuid.uuid4().hex[:12]}", self.lease_ttl_s)
        while held.acquire() is None:
            if time.monotonic() > deadline or self._is_covered(model, task) or self._is_held(model, task):
                return None
            await asyncio.sleep(0.2)
        if self._is_covered(model, task) or self._is_held(model, task):
            held.release()
            return None
        return held

    async def _record_retry(self, retried: RetriedAttempt) -> None:
        try:  # history for operators, like a failure's record
            await self.ports.recorder.record_retry(retried)
        except Exception as e:
            log.warning("recording a retried attempt in the admin tables failed",
                        extra={"task_id": retried.task_id, "error": str(e)[:300]})

    async def _fail(self, task: TaskRequested, attempts: int, error: str) -> None:
        log.error("task failed", extra={"task_id": task.task_id, "error": error[:500]})
        failed = TaskFailed(
            task_id=task.task_id, model=task.model, position=task.position, interval=task.interval,
            scheduled_unix=task.scheduled_unix, attempts=attempts, error=error[-4000:], worker=self.worker_id,
        )
        await self.ports.publisher.publish(self.topics.task_failed, failed, key=task.model)
        self.ports.ledger.release(task.model, task.task_id)
        metrics.archived_tasks_deleted.add(1, {"queue": task.pool, "model": task.model})
        try:  # the history for operators; the published message is what the system acts on
            await self.ports.recorder.record_failure(failed)
        except Exception as e:
            log.warning("recording a failure in the admin tables failed; it was published",
                        extra={"task_id": task.task_id, "error": str(e)[:300]})
