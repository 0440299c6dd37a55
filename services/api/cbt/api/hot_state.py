"""What the API reads from Redis: the same hot state the coordinator plans from (coverage index, bounds, in-flight
tasks, pending re-runs, the failure log), and where it asks the bounds-cache for a scan. Blocking; the routes call
it from threads."""

from __future__ import annotations

import time
from collections.abc import Collection

from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.redis_state import RedisState
from cbt.contract.messages import TaskFailed
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel, ModelId, ScheduledModel
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.state import RawBounds, StateSnapshot
from cbt.state.live import read_models_state


class RedisReads:
    """``HotState`` over the services' Redis state."""

    def __init__(self, models: ModelSet, state: RedisState, refresh: RedisRefreshRequests) -> None:
        self._models = models
        self._state = state
        self._refresh = refresh

    def snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        """Bounds, coverage, in-flight tasks, pending re-runs and skipped ranges of exactly ``model_ids``; a scheduled
        model's
        in-flight tasks have no positions and are listed as empty ranges (only their number means something)."""
        ids = [m for m in dict.fromkeys(model_ids) if m in self._models]
        base = read_models_state(self._models, ids, self._state.coverage, self._state.bounds)
        tasks = [m for m in ids if isinstance(self._models.models[m], IncrementalModel | ScheduledModel)]
        running = self._state.ledger.in_flight(tasks, int(time.time() * 1000))
        incrementals = [m for m in ids if isinstance(self._models.models[m], IncrementalModel)]
        return StateSnapshot(
            bounds=base.bounds, coverage=base.coverage, never_ran=base.never_ran, coverage_known=base.coverage_known,
            in_flight={m: tuple(t.range if t.range is not None else (0, 0) for t in ts) for m, ts in running.items()},
            reruns=self._state.coverage.reruns(incrementals), skipped=self._state.skips.skipped(incrementals),
            now=int(time.time()),
        )

    def failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]:
        return self._state.failures.recent_failures(list(model_ids))

    def bounds(self, model_ids: Collection[ModelId]) -> dict[ModelId, RawBounds]:
        return self._state.bounds.bounds(list(model_ids))

    def request_refresh(self, model_id: ModelId) -> None:
        self._refresh.request(model_id)

    def skip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._state.skips.skip(model_id, r)

    def unskip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._state.skips.unskip(model_id, r)
