"""Per-model status over a state snapshot: coverage, gaps, and how far behind the valid range's end it is.

Pure, like planning, so ``cbt status --state FILE`` and the API's coverage view read the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cbt.models.spec import IncrementalModel, Model, ModelId
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.snapshot import StateSnapshot


@dataclass(frozen=True)
class ModelStatus:
    """One incremental model's state.

    ``gaps``: uncovered ranges inside the valid range below the frontier (the leading gap included) — what backfill
    has to do; without a valid range, the holes inside the coverage's span. ``lag``: positions between the frontier
    and the valid range's end (the whole valid range when nothing is covered; 0 when ahead); ``None`` without a
    valid range. ``reason``: why there is no valid range.
    """

    model_id: ModelId
    valid: Range | None
    coverage: Coverage
    in_flight: tuple[Range, ...]
    gaps: tuple[Range, ...]
    lag: int | None
    reason: str | None


def model_status(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot) -> ModelStatus:
    """The status of ``model`` in ``state``."""
    ready = bnd.readiness(model, models, state)
    covered = state.coverage.get(model.id, cov.EMPTY)
    in_flight = state.in_flight.get(model.id, ())
    end = cov.frontier(covered)
    if ready.valid is None:
        whole = cov.span(covered)
        holes = tuple(cov.gaps(covered, whole)) if whole else ()
        return ModelStatus(model.id, None, covered, in_flight, holes, None, ready.reason)
    low, high = ready.valid
    below = (low, min(high, end)) if end is not None else (low, low)
    lag = max(high - max(end if end is not None else low, low), 0)
    return ModelStatus(model.id, ready.valid, covered, in_flight, tuple(cov.gaps(covered, below)), lag, None)


def backlog(status: ModelStatus, model: IncrementalModel) -> int:
    """Intervals the model's schedules would run now and that are not enqueued: the valid range's positions neither
    covered nor in flight, each stretch rounded up to whole intervals of ``interval.max``. The stretch at the valid
    range's end is forward fill's (its partial interval waits for data until it reaches ``interval.min``), the
    others backfill's; a stretch whose schedule is disabled does not count (0 without a valid range)."""
    if status.valid is None:
        return 0
    interval, schedules = model.interval, model.schedules
    taken = cov.union(status.coverage, cov.merge(status.in_flight))
    count = 0
    for start, end in cov.gaps(taken, status.valid):
        is_head = end == status.valid[1]
        if not (schedules.forwardfill if is_head else schedules.backfill):
            continue
        full, partial = divmod(end - start, interval.max)
        waits = is_head and partial < max(interval.min, 1)
        count += full + (1 if partial and not waits else 0)
    return count
