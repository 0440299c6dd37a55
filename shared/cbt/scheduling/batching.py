"""Batched runs of a backlog (docs/design/scheduling.md#batched-runs): how many ready intervals one task may hold, and
which ones it holds.

A backlog (backfill, catch-up after downtime) of a model whose batching is on runs as few Spark jobs: touching
full-length intervals (``interval.max`` each) are grouped into one task of up to ``size`` intervals. At the head only
one interval is ready at a time, so tasks stay single and cascades stay immediate. Pure: the coordinator feeds
``BatchSizer`` the durations its workers report and asks it for each model's size when planning.

The size comes from measurements, per model: a job's time is fitted as ``fixed + per_interval * intervals`` over its
recent runs, and the size is the most intervals that fit ``budget_s`` (capped by ``max_intervals``, the model's
own ``batch.max_intervals`` first). Before a model has run in two sizes only the average per interval is known,
which over-counts the fixed cost; sizes then grow run by run until the fit takes over. Before its first run, a
``bounds`` model's batch is the cap (one statement over the range, as SQLMesh runs a backlog), a ``union`` model's
``first_size`` — and so is a model ``auto`` put in ``bounds`` over buckets of the position: a batch whose intervals do
not start on a bucket runs as ``union`` (``BatchChoice.align``), which planning cannot tell beforehand. A failed batch
halves the model's batches until batches complete again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from cbt.models.batch_choice import batch_choice
from cbt.models.spec import IncrementalModel, ModelId
from cbt.scheduling.coverage import Range

KEEP_RUNS = 16
"""Runs per model the fit looks at (the newest)."""


def group(ranges: Sequence[Range], step: int, size: int) -> list[tuple[Range, int]]:
    """``ranges`` (in planning order: ascending for forward fill, newest first for backfill) with touching ranges of
    exactly ``step`` positions merged into runs of at most ``size`` of them; each with how many intervals it holds.
    Shorter (widened or partial) ranges stay on their own."""
    out: list[tuple[Range, int]] = []
    for start, end in ranges:
        if out and end - start == step:
            (low, high), count = out[-1]
            if count < size and (high - low) == count * step and (start == high or end == low):
                out[-1] = ((min(low, start), max(high, end)), count + 1)
                continue
        out.append(((start, end), 1))
    return out


@dataclass
class BatchSizer:
    """Each model's batch size from its measured job times (see the module docstring)."""

    max_intervals: int = 1024
    budget_s: float = 60.0
    first_size: int = 16
    """Before any run of the model was measured, in mode ``union`` (each interval is a SELECT of its own) or
    ``bounds`` over buckets; mode ``bounds`` otherwise starts at the cap."""
    _runs: dict[ModelId, deque[tuple[int, float]]] = field(default_factory=dict)
    _after_failure: dict[ModelId, int] = field(default_factory=dict)
    """A cap per model, halved by each failed batch and doubled back by each batch that completes at it."""

    def size(self, model: IncrementalModel) -> int:
        """How many intervals one task of ``model`` may hold now (1: no batching)."""
        choice = batch_choice(model)
        if choice.mode == "off":
            return 1
        cap = max(1, min(self.max_intervals, model.batch.max_intervals or self.max_intervals,
                         self._after_failure.get(model.id, self.max_intervals)))
        runs = self._runs.get(model.id)
        if not runs:  # one run over a range costs about what one interval does: start as SQLMesh does, whole
            return cap if choice.mode == "bounds" and choice.align <= 1 else min(self.first_size, cap)
        fixed, per_interval = self.fit(model.id)
        fitting = int((self.budget_s - fixed) / per_interval) if per_interval > 0 else cap
        return max(1, min(cap, fitting))

    def observe(self, model_id: ModelId, intervals: int, duration_ms: int) -> None:
        """A task of ``intervals`` intervals took ``duration_ms`` (its own run, as the worker measured it)."""
        if intervals > 0 and duration_ms >= 0:
            self._runs.setdefault(model_id, deque(maxlen=KEEP_RUNS)).append((intervals, duration_ms / 1000))
        cap = self._after_failure.get(model_id)
        if cap is not None and intervals >= cap:
            if cap * 2 >= self.max_intervals:
                del self._after_failure[model_id]
            else:
                self._after_failure[model_id] = cap * 2

    def failed(self, model_id: ModelId, intervals: int) -> None:
        """A task of ``intervals`` intervals failed its last attempt. A batch is not planned again as it was: one
        bad interval (or a job past the query timeout) would fail it forever and stall the model's backlog; the
        model's batches halve, down to single intervals, so the good ones complete and the bad one fails alone."""
        if intervals > 1:
            self._after_failure[model_id] = min(self._after_failure.get(model_id, intervals), max(1, intervals // 2))

    def fit(self, model_id: ModelId) -> tuple[float, float]:
        """``(fixed_s, per_interval_s)`` by least squares over the recent runs; with one size only, no fixed part
        and the average per interval."""
        runs = self._runs.get(model_id) or deque()
        if not runs:
            return 0.0, 0.0
        n = len(runs)
        mean_k = sum(k for k, _ in runs) / n
        mean_t = sum(t for _, t in runs) / n
        spread = sum((k - mean_k) ** 2 for k, _ in runs)
        if spread == 0:
            return 0.0, mean_t / mean_k
        slope = sum((k - mean_k) * (t - mean_t) for k, t in runs) / spread
        if slope <= 0:  # noise: bigger batches looked no slower; trust the average instead
            return 0.0, mean_t / mean_k
        return max(0.0, mean_t - slope * mean_k), slope


@dataclass(frozen=True)
class Estimate:
    """What recomputing a model's ranges takes: its intervals, the tasks they run as, and the time the model's
    recorded runs say those tasks take (``None``: no run recorded)."""

    intervals: int
    tasks: int
    seconds: float | None


def estimate(model: IncrementalModel, ranges: Sequence[Range], runs: Sequence[tuple[int, int]],
             sizer: BatchSizer) -> Estimate:
    """Recomputing ``ranges`` of ``model`` as the coordinator would plan it: full intervals grouped into batches of
    the size ``sizer`` gives once it has seen ``runs`` (each: intervals in the task, its duration in ms, newest
    last), each batch timed by the runs' fit (``fixed + per_interval * intervals``). ``sizer`` is changed."""
    for intervals, duration_ms in runs[-KEEP_RUNS:]:
        sizer.observe(model.id, intervals, duration_ms)
    size, (fixed, per_interval) = sizer.size(model), sizer.fit(model.id)
    intervals = tasks = 0
    seconds = 0.0
    for start, end in ranges:
        count = -(-(end - start) // model.interval.max)
        whole, rest = divmod(count, size)
        intervals, tasks = intervals + count, tasks + whole + (1 if rest else 0)
        seconds += whole * (fixed + per_interval * size) + ((fixed + per_interval * rest) if rest else 0.0)
    return Estimate(intervals, tasks, round(seconds, 1) if runs else None)
