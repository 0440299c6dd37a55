"""Wall-clock schedules: which models' forward fill, backfill or scheduled run is due (times in unix s)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from cbt.base.cron import next_fire, previous_fire
from cbt.models.spec import IncrementalModel, ModelId, ScheduledModel
from cbt.observability import metrics
from cbt.observability.metrics import Labels

Fill = Literal["forward", "backfill"]
Kind = Literal[Fill, "scheduled"]
log = logging.getLogger("cbt.coordinator")


@dataclass
class DueTracker:
    """Next fire time per (model, kind), aligned to the schedule (not "every N from start-up")."""

    next_at: dict[tuple[ModelId, Kind], int] = field(default_factory=dict)
    schedules: dict[tuple[ModelId, Kind], str] = field(default_factory=dict)
    broken: dict[tuple[ModelId, Kind], str] = field(default_factory=dict)
    """Schedules whose fire times cannot be computed, with the reason: that model's problem alone (it stops firing
    and is reported), never the tick's, so every other model keeps its schedule."""

    @classmethod
    def for_models(cls, incrementals: list[IncrementalModel], scheduled: list[ScheduledModel], now: int) -> DueTracker:
        tracker = cls()
        for model in incrementals:
            fills: tuple[tuple[Kind, str], ...] = (("forward", model.schedules.forwardfill),
                                                   ("backfill", model.schedules.backfill))
            for kind, schedule in fills:
                if schedule:
                    tracker.add(model.id, kind, schedule, now)
        for sched in scheduled:
            tracker.add(sched.id, "scheduled", sched.schedule, now)
        return tracker

    def add(self, model_id: ModelId, kind: Kind, schedule: str, now: int) -> None:
        key = (model_id, kind)
        self.schedules[key] = schedule
        try:
            self.next_at[key] = next_fire(schedule, now)
        except Exception as e:
            self._break(key, e)

    def due(self, now: int) -> list[tuple[ModelId, Kind, int]]:
        """Everything due at ``now`` with its (latest) fire time; each is advanced past ``now`` — missed fires
        collapse into one. A schedule whose fire times fail is set aside (``broken``), the others fire."""
        fired = []
        for key, at in sorted(self.next_at.items()):
            if at <= now:
                try:
                    fire_time, upcoming = previous_fire(self.schedules[key], now), next_fire(self.schedules[key], now)
                except Exception as e:
                    self._break(key, e)
                    continue
                fired.append((key[0], key[1], fire_time))
                self.next_at[key] = upcoming
        return fired

    def _break(self, key: tuple[ModelId, Kind], error: Exception) -> None:
        self.next_at.pop(key, None)
        self.broken[key] = str(error)[:300] or type(error).__name__
        log.error("a schedule has no fire time: this model's runs of this kind stop until its schedule is fixed; "
                  "every other schedule keeps firing",
                  extra={"model": key[0], "operation": key[1], "schedule": self.schedules[key],
                         "error": self.broken[key]})

    def retry(self, model_id: ModelId, kind: Kind, now: int) -> None:
        """A due run could not be enqueued: make it due again at the next tick (same fire time, unless a newer
        one has passed by then)."""
        key = (model_id, kind)
        self.next_at[key] = min(self.next_at[key], now)

    async def run_due(self, now: int, run_scheduled: Callable[[ModelId, int], Awaitable[object]],
                      plan_fills: Callable[[Fill, list[ModelId]], Awaitable[object]]) -> None:
        """Run everything due at ``now``: each scheduled run on its own, and the fills due of one kind together, in
        one planning pass (one batched read of the state for all of them, not one per model). A run that raises (a
        publish failed, Redis blinked) is retried at the next tick instead of waiting for the schedule's next fire
        time — or never, for a scheduled model."""
        fills: dict[Fill, list[ModelId]] = {}
        for model_id, kind, fire_time in self.due(now):
            if kind == "forward" or kind == "backfill":
                fills.setdefault(kind, []).append(model_id)
                continue
            try:
                await run_scheduled(model_id, fire_time)
            except Exception:
                log.warning("a scheduled run could not be enqueued; retrying at the next tick", exc_info=True,
                            extra={"model": model_id, "fire_time": fire_time})
                self.retry(model_id, kind, now)
                _count_executions([model_id], kind, "failure")
            else:
                _count_executions([model_id], kind, "success")
        for kind, model_ids in fills.items():
            try:
                await plan_fills(kind, model_ids)
            except Exception:
                log.warning("planning a tick's fills failed; retrying at the next tick", exc_info=True,
                            extra={"kind": kind, "models": len(model_ids)})
                for model_id in model_ids:
                    self.retry(model_id, kind, now)
                _count_executions(model_ids, kind, "failure")
            else:
                _count_executions(model_ids, kind, "success")

    def registered(self) -> dict[Labels, float]:
        """``cbt_scheduled_tasks_registered``'s series: 1 per schedule this tracker fires."""
        return {(("model", model_id), ("operation", kind)): 1 for model_id, kind in self.schedules
                if (model_id, kind) not in self.broken}

    def broken_series(self) -> dict[Labels, float]:
        """``cbt_schedule_broken``'s series: 1 per schedule set aside because its fire times fail."""
        return {(("model", model_id), ("operation", kind)): 1 for model_id, kind in self.broken}


def _count_executions(model_ids: list[ModelId], kind: Kind, status: str) -> None:
    for model_id in model_ids:
        metrics.scheduled_task_executions.add(1, {"model": model_id, "operation": kind, "status": status})


def missed_run(schedule: str, last_run: int | None, now: int) -> int | None:
    """The fire time to run once on recovery when the service was down over a scheduled time, else None."""
    latest = previous_fire(schedule, now)
    if last_run is None or latest > last_run:
        return latest
    return None
