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
    """Every statement for one task, in order; the write strategy wraps the last one."""
    statements = render_statements(model, task, settings)
    if not isinstance(model, IncrementalModel) or model.write.strategy == "sql":
        return statements
    *prelude, select = statements
    target = f"{quote_part(model.database)}.{quote_part(model.table)}"
    if model.write.strategy == "replace":
        predicate = render_replace_where(model, task, settings)
        return [*prelude, f"INSERT INTO {target} REPLACE WHERE {predicate}\n{select}"]
    keys = " AND ".join(f"t.{quote_part(k)} <=> s.{quote_part(k)}" for k in model.write.unique_key)
    return [*prelude, f"MERGE INTO {target} AS t USING (\n{select}\n) AS s ON {keys} WHEN NOT MATCHED THEN INSERT *"]
