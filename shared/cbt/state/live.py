"""A ``StateReader`` over the live ports: bounds store, hot coverage index, task ledger and skipped ranges."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Protocol

from cbt.models.dag import ModelSet
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, ScheduledModel
from cbt.scheduling.coverage import Range
from cbt.scheduling.state import StateSnapshot
from cbt.state.ports import BoundsStore, CoverageReader, InFlightTask, SkippedRanges, TaskLedger


class StatePorts(Protocol):
    """The ports a snapshot is read from, together (``RedisState``, ``MemoryState``)."""

    @property
    def coverage(self) -> CoverageReader: ...
    @property
    def bounds(self) -> BoundsStore: ...
    @property
    def ledger(self) -> TaskLedger: ...
    @property
    def skips(self) -> SkippedRanges: ...


@dataclass(frozen=True)
class LiveStateReader:
    """Reads what planning ``model_ids`` needs: their own coverage and in-flight tasks, and their dependencies'."""

    models: ModelSet
    coverage: CoverageReader
    bounds: BoundsStore
    ledger: TaskLedger
    skips: SkippedRanges | None = None

    @classmethod
    def of(cls, models: ModelSet, state: StatePorts) -> LiveStateReader:
        return cls(models, state.coverage, state.bounds, state.ledger, state.skips)

    def read_snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        involved = set(model_ids)
        for model_id in model_ids:
            involved.update(self.models.dependencies(model_id))
        now_ms = int(time.time() * 1000)
        in_flight = self.ledger.in_flight(list(model_ids), now_ms)
        return replace(
            read_models_state(self.models, involved, self.coverage, self.bounds),
            in_flight={m: _ranges(tasks) for m, tasks in in_flight.items()},
            reruns=self.coverage.reruns([m for m in model_ids if isinstance(self.models.models.get(m),
                                                                              IncrementalModel)]),
            skipped=self.skips.skipped(list(model_ids)) if self.skips is not None else {},
            now=now_ms // 1000,
        )


def read_models_state(models: ModelSet, ids: Collection[ModelId], coverage: CoverageReader,
                      bounds: BoundsStore) -> StateSnapshot:
    """What the given models offer their dependents now: external bounds, incremental coverage, scheduled models
    without a successful run yet, and whether the coverage index can be trusted (no in-flight tasks)."""

    def of_kind(kind: type[Model]) -> list[ModelId]:
        return [m for m in ids if isinstance(models.models.get(m), kind)]

    scheduled = of_kind(ScheduledModel)
    return StateSnapshot(
        bounds=bounds.bounds(of_kind(ExternalModel)),
        coverage=coverage.coverages(of_kind(IncrementalModel)),
        never_ran=frozenset(scheduled) - coverage.scheduled_ran(scheduled) if scheduled else frozenset(),
        coverage_known=coverage.is_built(),
    )


def _ranges(tasks: Collection[InFlightTask]) -> tuple[Range, ...]:
    return tuple(t.range for t in tasks if t.range is not None)
