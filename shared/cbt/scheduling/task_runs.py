"""Task runs: the stored form of a set of tasks (what an invalidation re-runs). Pure.

A ``TaskRun(start, end, step)`` stands for the tasks ``[start + k·step, start + (k+1)·step)`` that start before
``end``, the last one cut at ``end`` — exactly how a consolidated row keeps its tasks (``cbt.scheduling.protocol
.Piece``). A year of one-minute tasks of a model is one run, not 525,600 ranges: an invalidation's record, its
Redis script arguments and its pending re-runs grow with the number of runs, and the tasks are derived only where
one is planned or shown (``tasks``).

Every function keeps the *task set* of its input: ``set(tasks(normalize(runs)))`` is the union of the runs' tasks.
Ranges are half-open.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range


class TaskRun(NamedTuple):
    """Tasks of length ``step`` from ``start``, the last one cut at ``end``."""

    start: int
    end: int
    step: int

    @classmethod
    def single(cls, task: Range) -> TaskRun:
        """One task: the whole range."""
        return cls(task[0], task[1], max(task[1] - task[0], 1))

    @property
    def span(self) -> Range:
        return (self.start, self.end)

    @property
    def task_count(self) -> int:
        return max(-(-(self.end - self.start) // self.step), 0)

    @property
    def is_full(self) -> bool:
        """Whether its last task has the whole ``step`` (its end lies on its task grid)."""
        return (self.end - self.start) % self.step == 0


def tasks(run: TaskRun) -> Iterator[Range]:
    """The run's tasks, first to last."""
    start, end, step = run
    for s in range(start, end, step):
        yield (s, s + step if s + step < end else end)


def all_tasks(runs: Iterable[TaskRun]) -> tuple[Range, ...]:
    """Every task of ``runs``, sorted, each once."""
    return tuple(sorted({t for run in runs for t in tasks(run)}))


def count(runs: Iterable[TaskRun]) -> int:
    """How many tasks ``runs`` hold (a task in two runs counts twice)."""
    return sum(run.task_count for run in runs)


def spans(runs: Iterable[TaskRun]) -> Coverage:
    """The positions ``runs`` cover, merged."""
    return cov.merge(run.span for run in runs)


def clip(run: TaskRun, within: Range) -> TaskRun | None:
    """The run's tasks that overlap ``within``, as a run (``None`` when none does)."""
    start, end, step = run
    low = within[0] if within[0] > start else start
    high = within[1] if within[1] < end else end
    if low >= high:
        return None
    first = start + (low - start) // step * step
    last_start = start + (high - 1 - start) // step * step
    return TaskRun(first, min(last_start + step, end), step)


def _joins(a: TaskRun, b: TaskRun) -> bool:
    """Whether ``b`` (sorted after ``a``) folds into ``a`` keeping the task set: same step and grid, touching or
    overlapping, and no task cut short at one run's end while the other runs on past it."""
    if a.step != b.step or (b.start - a.start) % a.step or b.start > a.end:
        return False
    return b.end == a.end or (b.is_full and b.end <= a.end) or (a.is_full and b.end >= a.end)


def normalize(runs: Iterable[TaskRun]) -> tuple[TaskRun, ...]:
    """Equal, overlapping and touching runs of one step and grid merged, empty ones dropped; sorted. The same
    tasks in any order and grouping give the same result when they lie on one grid per step."""
    ordered = sorted(
        {r for r in runs if r.start < r.end and r.step > 0}, key=lambda r: (r.step, r.start % r.step, r.start, r.end)
    )
    out: list[TaskRun] = []
    for run in ordered:
        last = out[-1] if out else None
        if last is not None and _joins(last, run):
            out[-1] = TaskRun(last.start, max(last.end, run.end), last.step)
        else:
            out.append(run)
    return tuple(sorted(out))


def compress(task_ranges: Iterable[Range]) -> tuple[TaskRun, ...]:
    """Tasks given one by one, as few runs as possible (``normalize`` of one run per task)."""
    return normalize(TaskRun.single(t) for t in task_ranges)


def not_held(run: TaskRun, coverage: Coverage) -> tuple[TaskRun, ...]:
    """The run's tasks that ``coverage`` (canonical) does not hold whole, as runs. Work grows with the coverage
    ranges over the run and the tasks at their edges, not with the run's tasks."""
    out: list[TaskRun] = []
    cursor = run.start  # the first position of the run not yet decided
    for low, high in coverage:
        if high <= cursor or low >= run.end:
            continue
        # the tasks wholly inside [low, high): from the first task start >= low to the last task end <= high
        held = clip(run, (max(low, cursor), high))
        if held is None:
            continue
        first = held.start if held.start >= low else held.start + run.step
        last_start = run.start + (held.end - 1 - run.start) // run.step * run.step
        last_end = held.end if held.end <= high else last_start
        if first >= last_end:
            continue
        if cursor < first:
            out.append(TaskRun(cursor, first, run.step))
        cursor = last_end
    if cursor < run.end:
        out.append(TaskRun(cursor, run.end, run.step))
    return tuple(out)
