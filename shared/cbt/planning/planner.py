"""Plan models now and enqueue exactly the tasks the plan allows: the coordinator's cascade and ticks, and the
invalidator's re-plan after an event, the api's scheduled runs (its log lines use the logger ``cbt.planning``).

Planning itself is pure (``cbt.scheduling.plan``); this module reads a live snapshot, claims each task id in the
ledger (dedup among in-flight tasks, across coordinators) and publishes the claimed ones to their pool's topic.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from cbt.base.tasks import FILL_DIRECTIONS, FillDirection, scheduled_task_id
from cbt.config.settings import Config
from cbt.contract.messages import MessageRejected, TaskRequested
from cbt.contract.topics import Topics
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel, ModelId, ScheduledModel
from cbt.observability import metrics, tracing
from cbt.scheduling.batching import BatchSizer
from cbt.scheduling.plan import Task, plan_model
from cbt.scheduling.snapshot import StateReader
from cbt.state.ports import InFlightTask, Publisher, TaskLedger

log = logging.getLogger("cbt.planning")
PUBLISH_GRACE_MS = 30_000
"""How long a task claimed but not yet published blocks its interval (a coordinator dying in between)."""


Published = tuple[ModelId, TaskRequested]
"""A task request with the model it is for."""


@dataclass
class Planner:
    models: ModelSet
    reader: StateReader
    ledger: TaskLedger
    publisher: Publisher
    topics: Topics
    pool_for: Callable[[tuple[str, ...]], str]
    model_concurrency: int
    task_deadline_ms: int
    batch: BatchSizer = field(default_factory=BatchSizer)
    """Each model's batch size (how many intervals of a backlog one task holds), from its measured runs."""
    paused: frozenset[ModelId] = frozenset()
    """Models a live override disabled (``enabled: false``): never planned until it is cleared."""
    versions: Mapping[ModelId, str] = field(default_factory=dict)
    """Each loaded model's version (``Fingerprint.short``), set on its tasks."""
    _upstream: dict[ModelId, tuple[ModelId, ...]] = field(default_factory=dict)
    """Per planned model, the ids ``_with_upstream`` adds (the models never change in a process's life)."""

    @functools.cached_property
    def _sources(self) -> frozenset[ModelId]:
        return frozenset(m.id for m in self.models.externals)

    @classmethod
    def from_config(cls, config: Config, models: ModelSet, reader: StateReader, ledger: TaskLedger,
                    publisher: Publisher) -> Planner:
        batch = config.scheduler.batch
        return cls(models, reader, ledger, publisher, Topics(config.kafka.topic_prefix), config.worker.pool_for,
                   config.worker.model_concurrency,
                   int(config.worker.task_timeout_s * config.worker.retry.max_attempts * 1000),
                   BatchSizer(batch.max_intervals, batch.job_budget_s, batch.first_intervals))

    async def replan(self, model_ids: Iterable[ModelId],
                     directions: Collection[FillDirection] = FILL_DIRECTIONS) -> int:
        """Plan the given incremental models and enqueue what is ready; returns how many tasks were published."""
        return len(await self._replan(model_ids, directions))

    async def _replan(self, model_ids: Iterable[ModelId], directions: Collection[FillDirection]) -> list[Published]:
        wanted = [m for m in dict.fromkeys(model_ids)
                  if isinstance(self.models.models.get(m), IncrementalModel) and m not in self.paused]
        if not wanted:
            return []
        with tracing.new_trace("plan", **{"cbt.models": len(wanted)}) as span:
            published = await self._plan_and_enqueue(wanted, directions)
            span.set_attribute("cbt.tasks_published", len(published))
        return published

    async def _plan_and_enqueue(self, wanted: list[ModelId], directions: Collection[FillDirection]) -> list[Published]:
        snapshot = self.reader.read_snapshot(self._with_upstream(wanted))
        planned: list[tuple[IncrementalModel, Task]] = []
        unplannable: list[Exception] = []
        for model_id in wanted:
            model = self.models.models[model_id]
            assert isinstance(model, IncrementalModel)
            try:  # one model that cannot be planned (a bug, a value it chokes on) holds up no other
                plan = plan_model(model, self.models.models, snapshot, concurrency=self.model_concurrency,
                                  directions=directions, batch_size=self.batch.size(model))
            except Exception as e:
                log.exception("planning a model failed", extra={"model": model_id})
                unplannable.append(e)
                continue
            metrics.count_backfill_gaps(model_id, plan.backfill_gaps)
            planned += [(model, task) for task in plan.tasks]
        published = await self._enqueue_all(planned)
        if unplannable:
            raise unplannable[0]
        return published

    def _with_upstream(self, wanted: list[ModelId]) -> list[ModelId]:
        """``wanted`` and what backfill asks of their upstream (``cbt.scheduling.backfill.Upstream``): the sources
        behind them, whose scanned minimums say how far down their valid range can still move, and their direct
        dependencies, whose in-flight tasks say which holes are being filled. A few more ids in the same reads."""
        more: dict[ModelId, None] = {}
        for model_id in wanted:
            if model_id not in self._upstream:
                ancestors = self.models.ancestors(model_id)
                self._upstream[model_id] = (*self.models.dependencies(model_id),
                                            *(m for m in ancestors if m in self._sources))
            more.update(dict.fromkeys(self._upstream[model_id]))
        planned = set(wanted)
        return [*wanted, *(m for m in more if m not in planned)]

    async def _enqueue_all(self, planned: list[tuple[IncrementalModel, Task]]) -> list[Published]:
        return await self._claim_and_publish([(model.id, self._request(model, task)) for model, task in planned])

    async def replan_dependents(self, model_id: ModelId) -> int:
        """Cascade: a model gained data, so its dependents (and itself, for its next interval) may run now. Returns
        how many of the published tasks are its dependents'."""
        if model_id not in self.models:
            return 0
        published = await self._replan([model_id, *self.models.dependents(model_id)], FILL_DIRECTIONS)
        return sum(1 for published_for, _ in published if published_for != model_id)

    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        """Enqueue one scheduled run for ``fire_unix`` unless that run is already in flight."""
        request = TaskRequested(task_id=scheduled_task_id(model.id, fire_unix), model=model.id,
                                scheduled_unix=fire_unix, pool=self.pool_for(model.tags),
                                version=self.versions.get(model.id))
        return len(await self._claim_and_publish([(model.id, request)])) == 1

    def observe_run(self, model_id: ModelId, intervals: int, duration_ms: int) -> None:
        """A task of ``intervals`` intervals of the model ran in ``duration_ms``: its batch size follows."""
        self.batch.observe(model_id, intervals, duration_ms)

    def observe_failure(self, model_id: ModelId, intervals: int) -> None:
        """A task of ``intervals`` intervals of the model failed its last attempt: its next batches are smaller."""
        self.batch.failed(model_id, intervals)

    async def publish_rejected(self, message: MessageRejected) -> None:
        """A body the rejecting service cannot use, to ``message-rejected`` (keyed by that service)."""
        await self.publisher.publish(self.topics.message_rejected, message, key=message.service)

    def _request(self, model: IncrementalModel, task: Task) -> TaskRequested:
        return TaskRequested(task_id=task.id, model=model.id, position=task.position, interval=task.interval,
                             direction=task.direction, pool=self.pool_for(model.tags), step=task.step,
                             version=self.versions.get(model.id))

    async def _claim_and_publish(self, requests: list[Published]) -> list[Published]:
        """Claim every task in the ledger (one call), publish the claimed ones, then extend their claims to the
        task's full deadline (one call); returns the published ones.

        The first claim is short-lived: if this process dies before the broker has a task, its interval is planned
        again after ``PUBLISH_GRACE_MS`` instead of being blocked for the whole task deadline. The publishes are in
        flight together (one at a time, each waiting for the broker's ack, took 0.7 ms per task on a local broker,
        20 s for a 29k-task recovery tick; together the producer batches them). Every publish settles before the
        first failure, if any, is raised; a failed one has released its claim."""
        claimed_ms = int(time.time() * 1000)
        claims = self.ledger.claim_all([(m, _in_flight(r, claimed_ms + PUBLISH_GRACE_MS)) for m, r in requests])
        claimed = [request for request, won in zip(requests, claims, strict=True) if won]
        results = await asyncio.gather(*(self._publish(m, r) for m, r in claimed), return_exceptions=True)
        published = [request for request, result in zip(claimed, results, strict=True) if result is None]
        for model_id, request in published:
            metrics.tasks_enqueued.add(1, {"model": model_id, "direction": request.direction or "scheduled"})
        self.ledger.extend_all([(m, _in_flight(r, claimed_ms + self.task_deadline_ms)) for m, r in published])
        failed = [result for result in results if isinstance(result, BaseException)]
        if failed:
            raise failed[0]
        return published

    async def _publish(self, model_id: ModelId, request: TaskRequested) -> None:
        try:
            await self.publisher.publish(self.topics.task_requested(request.pool), request, key=request.task_id)
        except Exception:
            self.ledger.release(model_id, request.task_id)
            raise
        log.debug("task enqueued", extra={"task_id": request.task_id})


def _in_flight(request: TaskRequested, deadline_ms: int) -> InFlightTask:
    rng = None if request.position is None or request.end is None else (request.position, request.end)
    return InFlightTask(request.task_id, rng, deadline_ms)
