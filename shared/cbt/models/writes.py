"""The exact statements a worker runs for one task, with the model's write strategy applied
(docs/design/state.md#write-strategies).

- ``sql``: the rendered statements as written (the author owns idempotency, e.g. ``INSERT INTO … REPLACE WHERE``);
- ``replace``: the last statement is a SELECT, written as ``INSERT INTO target REPLACE WHERE <predicate> <select>``,
  one Delta commit, so a re-run replaces exactly the interval's rows;
- ``append`` + ``unique_key``: ``MERGE INTO target USING (<select>) ON keys WHEN NOT MATCHED THEN INSERT *``,
  one Delta commit in which rows whose key exists are not inserted again (keys compared null-safe, ``<=>``).
Earlier statements (temporary views, settings) run before the write. A batch of intervals
(docs/design/scheduling.md#batched-runs) is written by its batch mode (``Batch``): one run over its range, one statement
of every interval's SELECT, or the intervals in turn. Pure, so ``cbt render`` shows the same SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from cbt.models.batch_choice import batch_choice
from cbt.models.interval_checks import STAGED, interval_index
from cbt.models.render import render_replace_where, render_statements
from cbt.models.spec import IncrementalModel, Transformation
from cbt.models.templates import RenderSettings, TaskContext, quote_part


def task_statements(model: Transformation, task: TaskContext, settings: RenderSettings) -> list[str]:
    """Every statement for one task, in order; the write strategy wraps the last one.

    A batch (``task.step``, docs/design/scheduling.md#batched-runs) in batch mode ``bounds`` is one run over its whole
    range (a mode ``auto`` chose over buckets of the position only when the batch's intervals start on a bucket:
    ``BatchChoice.align``). In mode ``union`` it is one write of every interval's SELECT: for ``replace`` ``UNION
    ALL``-ed under one ``REPLACE WHERE`` of the intervals' own predicates, for ``append`` one ``MERGE`` of the rows the
    runs one by one would insert (``first_runs``) — the table the runs one by one give, in one Delta commit. When its
    intervals' earlier statements differ (a temporary view of the bounds), or in mode ``off``, each interval's
    statements follow one another in run order: still the same result, in one task but several commits.
    """
    if not isinstance(model, IncrementalModel) or not task.is_batch or task.start is None or task.step is None:
        return _one_run(model, task, settings)
    choice = batch_choice(model)
    if choice.runs_whole(task.start, task.step, settings.is_whole_hour_zone):
        return _one_run(model, task, settings)
    intervals = run_order(task)
    runs = [render_statements(model, interval, settings) for interval in intervals]
    if choice.mode != "off" and model.write.strategy != "sql" and len({tuple(r[:-1]) for r in runs}) == 1:
        selects = [run[-1] for run in runs]
        if model.write.strategy == "append":
            return [*runs[0][:-1], _merge(model, first_runs(model.write.unique_key, selects))]
        predicates = [render_replace_where(model, interval, settings) for interval in intervals]
        return [*runs[0][:-1], _replace(model, " OR ".join(f"({p})" for p in predicates),
                                        "\nUNION ALL\n".join(f"({select})" for select in selects))]
    return [statement for interval in intervals for statement in _one_run(model, interval, settings)]


@dataclass(frozen=True)
class StagedRun:
    """A task's rows computed once under a name of its own (``interval_checks.staged_name``), checked, then written
    for the intervals that passed
    (write, audit, publish: docs/checks.md). ``predicates``: each interval's rows (strategy ``replace``); ``None``
    for ``append``, whose intervals are checked and published together."""

    before: tuple[str, ...]
    select: str
    intervals: tuple[TaskContext, ...]
    predicates: tuple[str, ...] | None
    whole: str | None = None
    """The predicate of every interval at once (a batch run over its whole range), when there is one."""

    by_interval: str = "0"
    """The index of a staged row's interval in ``intervals`` (``interval_checks.interval_index``); "0": one
    verdict for the whole run."""

    @property
    def verdicts(self) -> int:
        """How many verdicts the checks give: one per interval, or one for the whole run."""
        return 1 if self.by_interval == "0" else len(self.intervals)

    def publish(self, model: IncrementalModel, passed: Sequence[int], staged: str = STAGED) -> str | None:
        """The one write of the rows staged as ``staged`` of the intervals ``passed`` (indexes into
        ``intervals``); None when none passed."""
        if not passed:
            return None
        if self.predicates is None:
            return _merge(model, f"SELECT * FROM {staged}")
        if len(passed) == len(self.intervals):
            every = self.whole or " OR ".join(f"({p})" for p in self.predicates)
            return _replace(model, every, f"SELECT * FROM {staged}")
        chosen = " OR ".join(f"({self.predicates[i]})" for i in passed)
        return _replace(model, chosen, f"SELECT * FROM {staged} WHERE {chosen}")


    def publish_checked(self, model: IncrementalModel, guard: Callable[[str], str]) -> str:
        """The one write of every interval's rows with each row checked as it is computed (``guard``:
        ``interval_checks.guarded``), no staging."""
        if self.predicates is None:
            return _merge(model, guard(self.select))
        return _replace(model, self.whole or " OR ".join(f"({p})" for p in self.predicates), guard(self.select))


def staged_runs(model: IncrementalModel, task: TaskContext, settings: RenderSettings) -> list[StagedRun]:
    """``task_statements``' runs, each staged for its checks (``write.strategy`` ``replace`` or ``append``): one run
    for a task or a batch that runs whole or as one union, one run per interval when the intervals run in turn."""
    if task.is_batch and task.start is not None and task.step is not None \
            and not batch_choice(model).runs_whole(task.start, task.step, settings.is_whole_hour_zone):
        intervals = run_order(task)
        runs = [render_statements(model, interval, settings) for interval in intervals]
        if batch_choice(model).mode == "off" or len({tuple(r[:-1]) for r in runs}) != 1:
            return [_staged(model, interval, settings, [interval]) for interval in intervals]
        selects = [run[-1] for run in runs]
        if model.write.strategy == "append":
            return [StagedRun(tuple(runs[0][:-1]), first_runs(model.write.unique_key, selects), tuple(intervals),
                              None)]
        predicates = tuple(render_replace_where(model, interval, settings) for interval in intervals)
        return [StagedRun(tuple(runs[0][:-1]), "\nUNION ALL\n".join(f"({select})" for select in selects),
                          tuple(intervals), predicates, by_interval=_by_interval(model, intervals, settings))]
    return [_staged(model, task, settings, task.intervals())]


def _staged(model: IncrementalModel, task: TaskContext, settings: RenderSettings,
            intervals: Sequence[TaskContext]) -> StagedRun:
    *prelude, select = render_statements(model, task, settings)
    if model.write.strategy == "append":
        return StagedRun(tuple(prelude), select, tuple(intervals), None)
    predicates = tuple(render_replace_where(model, interval, settings) for interval in intervals)
    return StagedRun(tuple(prelude), select, tuple(intervals), predicates, render_replace_where(model, task, settings),
                     _by_interval(model, intervals, settings))


def published_run(model: IncrementalModel, task: TaskContext, settings: RenderSettings) -> StagedRun:
    """The rows the task's intervals hold in the model's table now — each interval's by its ``replace_where`` — as a
    run to check again (a deployment changed the model's checks); only for ``replace`` models: an ``append``
    model's rows carry no interval predicate."""
    if model.write.strategy != "replace":
        raise ValueError(f"{model.id}: only a replace model's published rows can be told apart by interval")
    intervals = task.intervals()
    whole = render_replace_where(model, replace(task, step=None), settings)
    predicates = tuple(render_replace_where(model, interval, settings) for interval in intervals)
    return StagedRun((), f"SELECT * FROM {_target(model)} WHERE {whole}", tuple(intervals), predicates, whole,
                     _by_interval(model, intervals, settings))


def _by_interval(model: IncrementalModel, intervals: Sequence[TaskContext], settings: RenderSettings) -> str:
    """Which of the adjacent ``intervals`` a staged row belongs to, by their ``replace_where`` over joined ranges."""

    def span(lo: int, hi: int) -> str:
        part = intervals[lo:hi]
        start, end = min(i.start or 0 for i in part), max(i.end or 0 for i in part)
        return render_replace_where(model, replace(part[0], start=start, end=end, step=None), settings)

    return interval_index(len(intervals), span)


def run_order(task: TaskContext) -> list[TaskContext]:
    """A batch's intervals in the order its runs one by one would take: newest first for a backfill
    (docs/design/scheduling.md#backfill), ascending positions otherwise (forward fill, reruns, and a backlog joined to
    the head's interval)."""
    intervals = task.intervals()
    return intervals[::-1] if task.direction == "backfill" else intervals


RUN, FIRST_RUN = quote_part("cbt_batch_run"), quote_part("cbt_batch_first_run")


def first_runs(unique_key: tuple[str, ...], selects: list[str]) -> str:
    """The rows ``MERGE … WHEN NOT MATCHED THEN INSERT *`` runs one by one over ``selects`` (in run order) would
    insert, as one query to MERGE once: a run inserts every row of its SELECT whose key is not in the target yet —
    duplicates within the run included — and no later run inserts that key again; so of each key only the rows of
    the first run that has it are kept. ``PARTITION BY`` groups NULL keys together, as ``<=>`` matches them."""
    keys = ", ".join(quote_part(k) for k in unique_key)
    tagged = "\nUNION ALL\n".join(f"SELECT *, {order} AS {RUN} FROM (\n{select}\n) AS {quote_part(f'cbt_run_{order}')}"
                                   for order, select in enumerate(selects))
    ranked = f"SELECT *, min({RUN}) OVER (PARTITION BY {keys}) AS {FIRST_RUN} FROM (\n{tagged}\n) AS `cbt_runs`"
    return f"SELECT * EXCEPT ({RUN}, {FIRST_RUN}) FROM (\n{ranked}\n) AS `cbt_ranked` WHERE {RUN} = {FIRST_RUN}"


def only_writes(model: Transformation, task: TaskContext, settings: RenderSettings) -> bool:
    """Whether the task's statements are writes this module makes and nothing else: one SELECT wrapped by the
    strategy, no earlier statement (a ``SET``, a temporary view) and not the author's own (strategy ``sql``, a
    scheduled model). Such statements leave the Spark session as they found it, so models can share one."""
    if not isinstance(model, IncrementalModel) or model.write.strategy == "sql":
        return False
    return len(render_statements(model, task.intervals()[0], settings)) == 1


def _one_run(model: Transformation, task: TaskContext, settings: RenderSettings) -> list[str]:
    statements = render_statements(model, task, settings)
    if not isinstance(model, IncrementalModel) or model.write.strategy == "sql":
        return statements
    *prelude, select = statements
    if model.write.strategy == "replace":
        return [*prelude, _replace(model, render_replace_where(model, task, settings), select)]
    return [*prelude, _merge(model, select)]


def _merge(model: IncrementalModel, query: str) -> str:
    keys = " AND ".join(f"t.{quote_part(k)} <=> s.{quote_part(k)}" for k in model.write.unique_key)
    return f"MERGE INTO {_target(model)} AS t USING (\n{query}\n) AS s ON {keys} WHEN NOT MATCHED THEN INSERT *"


def _replace(model: IncrementalModel, predicate: str, query: str) -> str:
    return f"INSERT INTO {_target(model)} REPLACE WHERE {predicate}\n{query}"


def _target(model: IncrementalModel) -> str:
    return f"{quote_part(model.database)}.{quote_part(model.table)}"
