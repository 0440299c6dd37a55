"""The exact statements a worker runs for one task, with the model's write strategy applied (SPEC §7).

- ``sql``: the rendered statements as written (the author owns idempotency, e.g. ``INSERT INTO … REPLACE WHERE``);
- ``replace``: the last statement is a SELECT, written as ``INSERT INTO target REPLACE WHERE <predicate> <select>``,
  one Delta commit, so a re-run replaces exactly the interval's rows;
- ``append`` + ``unique_key``: ``MERGE INTO target USING (<select>) ON keys WHEN NOT MATCHED THEN INSERT *``,
  one Delta commit in which rows whose key exists are not inserted again.
Earlier statements (temporary views, settings) run before the write. Pure, so ``cbt render`` shows the same SQL.
"""

from __future__ import annotations

from cbt.models.render import render_replace_where, render_statements
from cbt.models.spec import IncrementalModel, Transformation
from cbt.models.templates import RenderSettings, TaskContext, quote_part


def task_statements(model: Transformation, task: TaskContext, settings: RenderSettings) -> list[str]:
    """Every statement for one task, in order; the write strategy wraps the last one.

    A batch (``task.step``, SPEC §5.6) in batch mode ``bounds`` is one run over its whole range; in mode ``union``
    one write of every interval's SELECT, ``UNION ALL``-ed under one ``REPLACE WHERE`` of the intervals' own
    predicates — the rows and the replaced range the runs one by one would give, in one Delta commit. When its
    intervals' earlier statements differ (a temporary view of the bounds), or in mode ``off``, each interval's
    statements follow one another: still the same result, in one task but several commits.
    """
    if not isinstance(model, IncrementalModel) or not task.is_batch or model.batch_mode == "bounds":
        return _one_run(model, task, settings)
    intervals = task.intervals()
    runs = [render_statements(model, interval, settings) for interval in intervals]
    if model.batch_mode == "union" and model.write.strategy == "replace" and len({tuple(r[:-1]) for r in runs}) == 1:
        predicates = [render_replace_where(model, interval, settings) for interval in intervals]
        selects = [run[-1] for run in runs]
        return [*runs[0][:-1], _replace(model, " OR ".join(f"({p})" for p in predicates),
                                        "\nUNION ALL\n".join(f"({select})" for select in selects))]
    return [statement for interval in intervals for statement in _one_run(model, interval, settings)]


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
    target = _target(model)
    keys = " AND ".join(f"t.{quote_part(k)} <=> s.{quote_part(k)}" for k in model.write.unique_key)
    return [*prelude, f"MERGE INTO {target} AS t USING (\n{select}\n) AS s ON {keys} WHEN NOT MATCHED THEN INSERT *"]


def _replace(model: IncrementalModel, predicate: str, query: str) -> str:
    return f"INSERT INTO {_target(model)} REPLACE WHERE {predicate}\n{query}"


def _target(model: IncrementalModel) -> str:
    return f"{quote_part(model.database)}.{quote_part(model.table)}"
