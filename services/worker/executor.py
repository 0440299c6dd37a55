"""Runs one task's work on Spark Connect or as a subprocess: the worker's only contact with compute.

The statements come from ``cbt.models.writes.task_statements`` (the write strategy applied), the exec environment
from ``cbt.models.render.exec_environment`` — the same functions ``cbt render`` prints.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from cbt.adapters.delta_admin import is_conflict
from cbt.adapters.scripts import ScriptError, run_script
from cbt.errors import CbtError
from cbt.models.render import exec_argv, exec_environment
from cbt.models.spec import Transformation
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import task_statements

CONFLICT_RETRIES = 20


class TaskExecutionError(CbtError):
    """The model's SQL or script failed; the message carries the cause (stderr tail for scripts)."""


@dataclass(frozen=True)
class SparkExecutor:
    """Executes transformations through one long-lived Spark Connect session (thread-safe for concurrent tasks)."""

    spark: SparkSession
    settings: RenderSettings
    exec_timeout_s: float
    workdir: str | None = None
    """Where exec commands run: the config file's folder."""

    async def run(self, model: Transformation, task: TaskContext) -> None:
        """Run one task. A Delta write conflict (another task committed to the same table while this one read it)
        re-runs the task after a short random pause: every strategy is idempotent, and a conflict is not the
        model's failure, so it does not use up an attempt."""
        for conflicts in range(CONFLICT_RETRIES + 1):
            try:
                if model.exec is not None:
                    await self._run_exec(model, task)
                else:
                    await asyncio.to_thread(self._run_sql, task_statements(model, task, self.settings))
                return
            except (TaskExecutionError, ScriptError) as e:
                if not is_conflict(e) or conflicts == CONFLICT_RETRIES:
                    raise
            await asyncio.sleep(random.uniform(0.05, 0.05 * 2 ** min(conflicts, 4)))

    def _run_sql(self, statements: Sequence[str]) -> None:
        for statement in statements:
            try:
                self.spark.sql(statement).collect()
            except Exception as e:  # Spark Connect raises many exception types; keep the server's message
                raise TaskExecutionError(f"{type(e).__name__}: {_first_lines(str(e))}") from e

    async def _run_exec(self, model: Transformation, task: TaskContext) -> None:
        assert model.exec is not None
        await run_script(exec_argv(model.exec), exec_environment(model, task, self.settings), self.exec_timeout_s,
                         self.workdir)


def _first_lines(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[:lines])
