"""A ``StateReader`` over the live ports: bounds store, hot coverage index, task ledger and skipped ranges. The one
place a live snapshot is assembled: the coordinator and the invalidator plan from it, the api shows it, the worker
checks a task's dependencies with it, ``cbt plan --live`` prints it."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, replace

from cbt.models.dag import ModelSet
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, ScheduledModel
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.snapshot import StateSnapshot
from cbt.state.holds import held_ranges
from cbt.state.ports import (
    BoundsStore,
    CheckHolds,
    CoverageReader,
    HeldInterval,
    InFlightTask,
    SkippedRanges,
    StatePorts,
    TaskLedger,
)


@dataclass(frozen=True)
class LiveStateReader:
    """Reads what planning ``model_ids`` needs: their own coverage and in-flight tasks, and their dependencies'."""

    models: ModelSet
    coverage: CoverageReader
    bounds: BoundsStore
    ledger: TaskLedger
    skips: SkippedRanges | None = None
    holds: CheckHolds | None = None

    @classmethod
    def of(cls, models: ModelSet, state: StatePorts) -> LiveStateReader:
        return cls(models, state.coverage, state.bounds, state.ledger, state.skips, state.holds)

    def held(self, model_id: ModelId) -> tuple[HeldInterval, ...]:
        """The intervals failed checks hold for the model now."""
        return () if self.holds is None else self.holds.held([model_id]).get(model_id, ())

    def left_alone(self, model_ids: list[ModelId]) -> dict[ModelId, Coverage]:
        """What planning must not schedule: the ranges an operator skipped, and the intervals a failed check holds
        in the model's deployed version (``cbt.state.holds``). Both stay gaps to dependents."""
        skipped = self.skips.skipped(model_ids) if self.skips is not None else {}
        held = self.holds.held(model_ids) if self.holds is not None else {}
        if not held:
            return skipped
        holding = held_ranges(held, self.coverage.deployed_versions(list(held)))
        return {m: cov.merge([*skipped.get(m, ()), *holding.get(m, ())]) for m in {*skipped, *holding}}

    def read_snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        involved = set(model_ids)
        for model_id in model_ids:
            involved.update(self.models.dependencies(model_id))
        now_ms = int(time.time() * 1000)
        in_flight = self.ledger.in_flight(list(model_ids), now_ms)
        return replace(
            self.read_offers(involved),
            in_flight={m: _ranges(tasks) for m, tasks in in_flight.items()},
            reruns=self.coverage.reruns([m for m in model_ids if isinstance(self.models.models.get(m),
                                                                              IncrementalModel)]),
            skipped=self.left_alone(list(model_ids)),
            now=now_ms // 1000,
        )

    def read_shown(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        """Bounds, coverage, in-flight tasks, pending re-runs and skipped ranges of exactly ``model_ids`` (those in
        the model set), as the api shows them; a scheduled model's in-flight tasks have no positions and are listed
        as empty ranges (only their number means something)."""
        ids = [m for m in dict.fromkeys(model_ids) if m in self.models]
        tasks = [m for m in ids if isinstance(self.models.models[m], IncrementalModel | ScheduledModel)]
        incrementals = [m for m in ids if isinstance(self.models.models[m], IncrementalModel)]
        return replace(
            self.read_offers(ids),
            in_flight={m: tuple(t.range if t.range is not None else (0, 0) for t in ts)
                       for m, ts in self.ledger.in_flight(tasks, int(time.time() * 1000)).items()},
            reruns=self.coverage.reruns(incrementals),
            skipped=self.skips.skipped(incrementals) if self.skips is not None else {},
            now=int(time.time()),
        )

    def read_offers(self, ids: Collection[ModelId]) -> StateSnapshot:
        """What the given models offer their dependents now: external bounds, incremental coverage, scheduled models
        without a successful run yet, and whether the coverage index can be trusted (no in-flight tasks)."""

        def of_kind(kind: type[Model]) -> list[ModelId]:
            return [m for m in ids if isinstance(self.models.models.get(m), kind)]

        scheduled = of_kind(ScheduledModel)
        return StateSnapshot(
            bounds=self.bounds.bounds(of_kind(ExternalModel)),
            coverage=self.coverage.coverages(of_kind(IncrementalModel)),
            never_ran=frozenset(scheduled) - self.coverage.scheduled_ran(scheduled) if scheduled else frozenset(),
            coverage_known=self.coverage.is_built(),
        )


def _ranges(tasks: Collection[InFlightTask]) -> tuple[Range, ...]:
    return tuple(t.range for t in tasks if t.range is not None)
