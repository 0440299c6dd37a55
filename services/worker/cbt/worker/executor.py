"""Runs one task's work on Spark Connect or as a subprocess: the worker's only contact with compute.

The statements come from ``cbt.models.writes.task_statements`` (the write strategy applied), the exec environment
from ``cbt.models.render.exec_environment`` — the same functions ``cbt render`` prints.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from cbt.adapters.delta_admin import is_conflict
from cbt.adapters.scripts import ScriptError, run_script
from cbt.errors import CbtError
from cbt.models.render import exec_argv, exec_environment
from cbt.models.spec import Transformation
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import task_statements

CONFLICT_RETRIES = 20
INTERRUPT_WAIT_S = 30.0
"""How long an interrupted statement's call is waited for before the task moves on regardless."""
log = logging.getLogger("cbt.worker")


class TaskExecutionError(CbtError):
    """The model's SQL or script failed; the message carries the cause (stderr tail for scripts)."""


@dataclass(frozen=True)
class SparkExecutor:
    """Executes transformations through one long-lived Spark Connect session (thread-safe for concurrent tasks).

    Delta commits to one table are serial anyway, and an unpartitioned table's ``REPLACE WHERE`` or ``MERGE``
    conflicts with any commit that lands while it runs; so this process runs one task per target table at a time
    (tasks of different models still run in parallel) instead of wasting Spark work on conflicts.
    """

    spark: SparkSession
    settings: RenderSettings
    exec_timeout_s: float
    workdir: str | None = None
    """Where exec commands run: the config file's folder."""
    query_timeout_s: float = 600.0
    """Longest a statement may run (``spark.query_timeout``); past it, it is interrupted on the server."""
    _table_locks: dict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))

    async def run(self, model: Transformation, task: TaskContext) -> None:
        """Run one task. A Delta write conflict (another process committed to the same table while this one read
        it) re-runs the task after a short random pause: every strategy is idempotent, and a conflict is not the
        model's failure, so it does not use up an attempt."""
        async with self._table_locks[model.id]:
            for conflicts in range(CONFLICT_RETRIES + 1):
                try:
                    await self._run_once(model, task)
                    return
                except (TaskExecutionError, ScriptError) as e:
                    if not is_conflict(e) or conflicts == CONFLICT_RETRIES:
                        raise
                log.info("delta write conflict; running the task again", extra={"task_id": task.task_id,
                                                                                 "conflicts": conflicts + 1})
                await asyncio.sleep(random.uniform(0.05, 0.05 * 2 ** min(conflicts, 4)))

    async def _run_once(self, model: Transformation, task: TaskContext) -> None:
        if model.exec is not None:
            await self._run_exec(model, task)
        else:
            await self._run_sql(task_statements(model, task, self.settings))

    async def _run_sql(self, statements: Sequence[str]) -> None:
        """Each statement under its own operation tag: when it outlives the query timeout, or the run is cancelled
        (lease lost), the tag is interrupted on the Spark Connect server, so the statement stops there
        too instead of writing after the task has ended."""
        for statement in statements:
            tag = f"cbt-{uuid.uuid4().hex}"
            running = asyncio.ensure_future(asyncio.to_thread(self._collect, statement, tag))
            try:
                await asyncio.wait_for(asyncio.shield(running), self.query_timeout_s)
            except TimeoutError:
                await self._interrupt(tag, running)
                raise TaskExecutionError(
                    f"query timeout: a statement ran longer than spark.query_timeout ({self.query_timeout_s:g} s) "
                    "and was interrupted on the Spark Connect server"
                ) from None
            except asyncio.CancelledError:
                await self._interrupt(tag, running)
                raise

    def _collect(self, statement: str, tag: str) -> None:
        self.spark.addTag(tag)  # tags are per thread: this statement's only
        try:
            self.spark.sql(statement).collect()
        except Exception as e:  # Spark Connect raises many exception types; keep the server's message
            raise TaskExecutionError(f"{type(e).__name__}: {_first_lines(str(e))}") from e
        finally:
            self.spark.removeTag(tag)

    async def _interrupt(self, tag: str, running: asyncio.Future[None]) -> None:
        """Interrupt the tagged statement on the server and wait (bounded) for its call to return."""
        running.add_done_callback(_retrieve)  # its error (interrupted) is expected: not worth a warning
        try:
            await asyncio.shield(asyncio.to_thread(self.spark.interruptTag, tag))
        except Exception as e:  # the server may be gone: the statement then dies with its session
            log.warning("interrupting a statement failed", extra={"tag": tag, "error": str(e)[:300]})
        await asyncio.wait({running}, timeout=INTERRUPT_WAIT_S)
        if not running.done():
            log.warning("an interrupted statement has not returned; moving on", extra={"tag": tag})

    async def _run_exec(self, model: Transformation, task: TaskContext) -> None:
        assert model.exec is not None
        await run_script(exec_argv(model.exec), exec_environment(model, task, self.settings), self.exec_timeout_s,
                         self.workdir)


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _first_lines(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[:lines])
