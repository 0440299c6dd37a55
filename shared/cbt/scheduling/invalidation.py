"""What an invalidation re-runs (docs/design/invalidations.md#what-an-invalidation-re-runs): per model, the tasks to
remove from coverage and run again. Pure.

Ranges are half-open ``[start, end)``. Every model of a pipeline shares one position domain (the loader checks that
a model's ``interval.type`` equals its dependencies'), so positions ``[s, e)`` of a dependency feed positions
``[s, e)`` of its dependents.

The rule, per incremental model M (the named one, then with ``cascade`` every descendant, parents first):

* M's *input* is the invalidated range if M is the named model, plus the input and the re-run tasks of every
  affected dependency of M (a dependency re-run over a task counts as changed over all of it);
* M re-runs exactly the tasks that ran over its input — the live pieces of its completion rows, cut at their own
  task boundaries (``cbt.scheduling.protocol.Piece``) — and every in-flight task of M that overlaps it (so that task's
  completion is refused). Positions nothing ran over need no re-run. A task that only overlaps a re-run one (rows
  overlap where a short gap was widened to ``interval.min``) read no changed data: it keeps what the re-run does
  not rewrite.
* A row consolidated before task boundaries were kept has unknown boundaries: there, the input is widened to
  multiples of M's ``interval.max``, as earlier versions did.

The result depends on what ran when the event arrived; a redelivered event is applied as first recorded
(``DurableRecord.record_invalidation``), so it re-runs the same tasks. External models have no coverage: only
their descendants re-run. Scheduled models have no positions: they are listed, keep their runs, and the cascade
does not pass through them (they refresh on their own schedule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cbt.contract.messages import Invalidation
from cbt.models.dag import ModelSet, UnknownModel
from cbt.models.spec import ExternalModel, IncrementalModel, ModelId
from cbt.scheduling.coverage import Coverage, Range, merge
from cbt.scheduling.protocol import UNKNOWN_STEP, Piece
from cbt.scheduling.task_runs import TaskRun, clip, normalize


@dataclass(frozen=True)
class Impact:
    """The tasks an invalidation re-runs per incremental model, and the scheduled models it reached."""

    ranges: Mapping[ModelId, tuple[TaskRun, ...]] = field(default_factory=dict)
    """Every affected incremental model, in topological order (parents first), with its tasks as runs
    (``cbt.scheduling.task_runs``), sorted."""
    scheduled: tuple[ModelId, ...] = ()

    @property
    def models(self) -> tuple[ModelId, ...]:
        return tuple(self.ranges)

    @property
    def task_count(self) -> int:
        return sum(run.task_count for runs in self.ranges.values() for run in runs)


def snap(r: Range, interval: int) -> Range:
    """``r`` widened outward to multiples of ``interval`` (an empty range stays as it is)."""
    start, end = r
    if start >= end:
        return r
    return (start // interval * interval, -(-end // interval) * interval)


def _tasks_over(model: IncrementalModel, r: Range, ran: Sequence[Piece], in_flight: Sequence[Range]) -> list[TaskRun]:
    """M's tasks that overlap ``r`` as runs: ran (live pieces, cut at their tasks), or in flight. It runs for every
    model of a cascade (thousands), so overlaps are plain comparisons and a piece away from ``r`` costs no call; a
    piece's tasks are never listed one by one."""
    start, end = r
    if start >= end:
        return []
    found = [TaskRun.single(t) for t in in_flight if t[0] < end and start < t[1] and t[0] < t[1]]
    for piece in ran:
        low, high = piece.range
        if low >= end or high <= start or low >= high:
            continue
        if piece.step == UNKNOWN_STEP:
            found.append(TaskRun.single(snap((max(start, low), min(end, high)), model.interval.max)))
        else:
            clipped = clip(TaskRun(low, high, piece.step), r)
            if clipped is not None:
                found.append(clipped)
    return found


def rerun_tasks(model: IncrementalModel, inputs: Coverage, ran: Sequence[Piece],
                in_flight: Sequence[Range]) -> tuple[TaskRun, ...]:
    """The tasks of ``model`` to re-run for ``inputs`` (see the module docstring), as sorted runs."""
    return normalize(run for r in inputs for run in _tasks_over(model, r, ran, in_flight))


def impact(
    models: ModelSet,
    model_id: ModelId,
    rng: Range,
    *,
    cascade: bool = True,
    in_flight: Mapping[ModelId, Sequence[Range]] | None = None,
    ran: Mapping[ModelId, Sequence[Piece]] | None = None,
) -> Impact:
    """The tasks to re-run when ``rng`` of ``model_id`` is invalidated, given what ``ran`` (each model's live
    pieces near the range) and what is ``in_flight`` (see the module docstring)."""
    running, pieces = in_flight or {}, ran or {}
    order = (model_id, *models.descendants(model_id)) if cascade else (model_id,)
    inputs: dict[ModelId, set[Range]] = {model_id: {rng}}  # a set: a range reaches a model from each dependency
    ranges: dict[ModelId, tuple[TaskRun, ...]] = {}
    scheduled: list[ModelId] = []
    for current in order:
        model = models.models[current]
        received = merge(inputs.get(current, ()))
        if not received:
            continue
        if isinstance(model, IncrementalModel):
            ranges[current] = rerun_tasks(model, received, pieces.get(current, ()), running.get(current, ()))
            changed = merge({*received, *(run.span for run in ranges[current])})
        elif isinstance(model, ExternalModel):
            changed = received
        else:
            scheduled.append(current)
            continue
        if cascade:
            for dependent in models.dependents(current):
                inputs.setdefault(dependent, set()).update(changed)
    return Impact(ranges, tuple(scheduled))


def reach(models: ModelSet, model_id: ModelId, rng: Range, *, cascade: bool = True) -> Range:
    """A window that holds every task ``impact`` can reach from ``rng``: the range widened by twice the
    ``interval.max`` of every incremental model along the longest dependency path down from ``model_id`` (a
    re-run widens only along paths; the durable record is read over the window). O(descendants + their edges)."""

    def own(member: ModelId) -> int:
        model = models.models[member]
        return 2 * model.interval.max if isinstance(model, IncrementalModel) else 0

    widest = {model_id: own(model_id)}
    for member in models.descendants(model_id) if cascade else ():  # dependencies first (ordered by rank)
        widest[member] = own(member) + max((widest[d] for d in models.dependencies(member) if d in widest), default=0)
    margin = max(widest.values())
    return (max(rng[0] - margin, 0), rng[1] + margin)


def most_tasks(models: ModelSet, model_id: ModelId, rng: Range, *, cascade: bool = True) -> int:
    """At most about how many tasks ``impact`` can list for ``rng``, without reading what ran: per incremental
    model reached, its window (``reach``) in tasks of ``interval.min``, plus one at each end. O(descendants)."""
    start, end = reach(models, model_id, rng, cascade=cascade)
    members = (model_id, *models.descendants(model_id)) if cascade else (model_id,)
    lengths = [m.interval.min or m.interval.max for m in map(models.models.__getitem__, members)
               if isinstance(m, IncrementalModel)]
    return sum(-(-(end - start) // max(length, 1)) + 2 for length in lengths)


def why_rejected(models: ModelSet, event: Invalidation, max_range: int, max_tasks: int) -> str | None:
    """Why a well-formed event cannot be applied here (unknown model, range too wide, too many tasks to re-run),
    or ``None``. Checked before anything is read or computed, so a decade-wide event costs nothing but its refusal."""
    try:
        model_id = models.resolve(event.model)
    except UnknownModel as e:  # no such model, or a table name several databases have
        return f"model: {e}"
    if event.end - event.start > max_range:
        return (f"range [{event.start}, {event.end}) spans {event.end - event.start} positions, more than "
                f"invalidator.max_range ({max_range}); split it or raise the limit")
    tasks = most_tasks(models, model_id, (event.start, event.end), cascade=event.cascade)
    if tasks > max_tasks:
        return (f"range [{event.start}, {event.end}) could re-run up to {tasks} tasks over "
                f"{1 + len(models.descendants(model_id)) if event.cascade else 1} models, more than "
                f"invalidator.max_tasks ({max_tasks}); split it or raise the limit")
    return None
