"""A ``StateReader`` over the live ports: bounds store, hot coverage index and task ledger."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass

from cbt.models.dag import ModelSet
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, ScheduledModel
from cbt.ports import BoundsStore, CoverageReader, InFlightTask, TaskLedger
from cbt.scheduling.coverage import Range
from cbt.scheduling.state import StateSnapshot


@dataclass(frozen=True)
class LiveStateReader:
    """Reads what planning ``model_ids`` needs: their own coverage and in-flight tasks, and their dependencies'."""

    models: ModelSet
    coverage: CoverageReader
    bounds: BoundsStore
    ledger: TaskLedger

    def read_snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        involved = set(model_ids)
        for model_id in model_ids:
            involved.update(self.models.dependencies(model_id))
        now_ms = int(time.time() * 1000)
        in_flight = self.ledger.in_flight(list(model_ids), now_ms)
        return StateSnapshot(
            bounds=self.bounds.bounds(self._of_kind(involved, ExternalModel)),
            coverage=self.coverage.coverages(self._of_kind(involved, IncrementalModel)),
            in_flight={m: _ranges(tasks) for m, tasks in in_flight.items()},
            now=now_ms // 1000,
            never_ran=never_ran(self.coverage, self._of_kind(involved, ScheduledModel)),
            coverage_known=self.coverage.is_built(),
        )

    def _of_kind(self, ids: Collection[ModelId], kind: type[Model]) -> list[ModelId]:
        return [m for m in ids if isinstance(self.models.models.get(m), kind)]


def never_ran(coverage: CoverageReader, scheduled: Collection[ModelId]) -> frozenset[ModelId]:
    """The scheduled models among ``scheduled`` without a successful run yet."""
    return frozenset(scheduled) - coverage.scheduled_ran(scheduled) if scheduled else frozenset()


def _ranges(tasks: Collection[InFlightTask]) -> tuple[Range, ...]:
    return tuple(t.range for t in tasks if t.range is not None)
