"""Re-runs (docs/design/invalidations.md#re-runs): the tasks an invalidation removed, each run again whole and once, as
soon as it is ready.

Rules, all on half-open ranges:

- The pending re-runs come from the hot index (``CoverageReader.reruns``): exactly the tasks that ran over the
  invalidated range (``cbt.scheduling.invalidation``), with their own boundaries — not the gap they left.
- A re-run that overlaps a task in flight waits for it (that task is the re-run, requeued after its completion
  was refused, or work planned before the event).
- A re-run is planned whole only when it is ready: inside the valid range and covered by every transformation
  dependency. It is never split around a dependency that is itself still re-running, so a dependent re-runs each
  of its tasks once, after its dependencies' re-runs.
- Newest first, as many as there are free task slots. Forward fill and backfill treat pending re-runs as taken,
  so they never plan over one.
"""

from __future__ import annotations

from collections.abc import Iterable

from cbt.scheduling import bounds as bnd
from cbt.scheduling.backfill import summarize
from cbt.scheduling.bounds import Readiness
from cbt.scheduling.coverage import Range
from cbt.scheduling.forward import FillPlan


def plan_reruns(ready: Readiness, pending: Iterable[Range], in_flight: Iterable[Range], slots: int) -> FillPlan:
    """Up to ``slots`` ready re-runs among ``pending``, newest first."""
    running = tuple(in_flight)
    tasks: list[Range] = []
    notes: list[str] = []
    for task in sorted(set(pending), reverse=True):
        if any(max(task[0], r[0]) < min(task[1], r[1]) for r in running):
            continue
        why = bnd.why_not_ready(ready, task)
        if why is not None:
            notes.append(f"re-run [{task[0]}, {task[1]}) waits: {why}")
        elif len(tasks) >= slots:
            return FillPlan(tuple(tasks), f"more re-runs are ready, next [{task[0]}, {task[1]})",
                            is_out_of_slots=True)
        else:
            tasks.append(task)
    return FillPlan(tuple(tasks), summarize(notes))
