"""Runs one task's work on Spark Connect or as a subprocess: the worker's only contact with compute.

The statements come from ``cbt.models.writes.task_statements`` (the write strategy applied), the exec environment
from ``cbt.models.render.exec_environment`` — the same functions ``cbt render`` prints.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace

from pyspark.sql import SparkSession

from cbt.adapters.delta_admin import is_conflict
from cbt.adapters.scripts import ScriptError, run_script
from cbt.adapters.spark import QueryTimeout, SessionPool, is_session_lost, run_tagged
from cbt.adapters.target_tables import TargetTables
from cbt.base.errors import CbtError
from cbt.concurrency.slots import PrioritySlots
from cbt.models.render import command_argv, exec_environment
from cbt.models.spec import IncrementalModel, ModelId, Transformation, is_whole_hour_zone
from cbt.models.target_tables import owns_table
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import only_writes, task_statements
from cbt.scheduling.admission import PRIORITIES, Admission, PriorityClass, hand_off_s, task_priority

CONFLICT_RETRIES = 20
log = logging.getLogger("cbt.worker")


class TaskExecutionError(CbtError):
    """The model's SQL or script failed; the message carries the cause (stderr tail for scripts)."""


SHARED_SESSION = "shared"
"""The ``SessionPool`` key of the session models share when their tasks only write (``writes.only_writes``)."""


@dataclass
class SparkExecutor:
    """Executes transformations on Spark Connect, in sessions from a ``SessionPool`` (a lost session is replaced,
    which is how the worker reconnects after a Spark Connect restart).

    A model whose statements can change its session (a ``SET`` or a temporary view before its SELECT, strategy
    ``sql``, a scheduled model) has a session of its own, so that state never reaches another model's statements.
    Every other model runs in one shared session: a session's first run of each kind of statement pays a set-up on
    the server (0.4-0.8 s measured on 2 cores, Delta's write path among it), which a shared, warmed session pays
    once per process instead of once per model.

    At most ``slots`` tasks run at once in this process. Delta commits to one table are serial anyway, and an
    unpartitioned table's ``REPLACE WHERE`` or ``MERGE`` conflicts with any commit that lands while it runs; so this
    process runs one task per target table at a time. A task waits for its table *before* it takes a slot: a hung or
    slow model occupies one slot, its other tasks queue behind it, and every other model keeps the remaining slots.

    Slots go to waiting tasks by their direction's priority class (``cbt.scheduling.admission``: forward fill and
    scheduled runs, then re-runs, then backfill; first come first served within a class). With ``admission``
    (``spark.max_concurrent_statements``), a task with a slot then holds one of the Spark cluster's permits — shared
    by every worker — while its statements run, in order (an exec model's script counts as one), at the same
    priority, queued ahead by its model's chain of transformations (``lead_levels``); a forward task of a model with
    dependents (``feeding``) hands its permit on ``HAND_OFF_S`` after its statements end, to the dependent it
    unblocks when that one ranks first. A permit is
    taken only by a task that has its slot, so no permit sits idle in a process whose slots are full; a forward task
    arriving then waits for one local task to end at most.
    """

    sessions: SessionPool
    settings: RenderSettings
    exec_timeout_s: float
    workdir: str | None = None
    """Where exec commands run: the config file's folder."""
    query_timeout_s: float = 600.0
    """Longest a statement may run (``spark.query_timeout``, or the model's ``timeout``); past it, it is interrupted
    on the server."""
    slots: int = 4
    admission: Admission | None = None
    lead_levels: Mapping[ModelId, int] = field(default_factory=dict)
    """Per model, its longest chain of transformations (``ModelSet.chain_length``): its tasks queue that far ahead
    for a permit (``cbt.scheduling.admission.order_score``)."""
    feeding: frozenset[ModelId] = frozenset()
    """The models other models depend on: their forward tasks hand their permit on (``HAND_OFF_S``)."""
    _table_locks: dict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))
    _session_keys: dict[str, str] = field(default_factory=dict)
    _zones: dict[int, bool] = field(default_factory=dict)
    targets: TargetTables = field(default_factory=TargetTables)
    """The target tables made sure of (created, or given added columns) in this process."""
    """Per session (by identity): whether its time zone is whole hours from UTC."""
    _slots: PrioritySlots = field(init=False)

    def __post_init__(self) -> None:
        self._slots = PrioritySlots(self.slots)

    async def run(self, model: Transformation, task: TaskContext) -> float:
        """Run one task. A Delta write conflict (another process committed to the same table while this one read
        it) re-runs the task after a short random pause: every strategy is idempotent, and a conflict is not the
        model's failure, so it does not use up an attempt. Returns the seconds the last run took once it had its
        table, a slot and a permit."""
        async with self._table_locks[model.id]:
            for conflicts in range(CONFLICT_RETRIES + 1):
                try:
                    async with self._slots.held(PRIORITIES.index(_priority(task))), self._admitted(task):
                        began = time.monotonic()
                        await self._run_once(model, task)
                        return time.monotonic() - began
                except (TaskExecutionError, ScriptError) as e:
                    if not is_conflict(e) or conflicts == CONFLICT_RETRIES:
                        raise
                log.info("delta write conflict; running the task again", extra={"task_id": task.task_id,
                                                                                 "conflicts": conflicts + 1})
                await asyncio.sleep(random.uniform(0.05, 0.05 * 2 ** min(conflicts, 4)))
        raise AssertionError("unreachable: the last conflict is raised in the loop")

    def _admitted(self, task: TaskContext) -> AbstractAsyncContextManager[object]:
        if self.admission is None:
            return nullcontext()
        priority = _priority(task)
        return self.admission.held(priority, task.task_id, self.lead_levels.get(task.model_id, 0),
                                   hand_off_s(priority, task.model_id in self.feeding))

    async def _run_once(self, model: Transformation, task: TaskContext) -> None:
        if model.exec is not None:  # a batch not in mode bounds runs its intervals in turn
            whole = not isinstance(model, IncrementalModel) or model.batch_mode == "bounds"
            for run in [task] if whole else task.intervals():
                await run_script(command_argv(model), exec_environment(model, run, self.settings),
                                 model.timeout_s or self.exec_timeout_s, self.workdir,
                                 inherit_env=model.exec_options.inherit_env)
        else:
            key = self._session_keys.get(model.id)
            if key is None:  # decided once per model: its SQL keeps its shape from task to task
                key = SHARED_SESSION if only_writes(model, task, self.settings) else model.id
                self._session_keys[model.id] = key
            settings = self.settings
            if isinstance(model, IncrementalModel) and task.is_batch and model.batch_choice.needs_whole_hour_zone:
                settings = replace(settings, is_whole_hour_zone=await self._is_whole_hour_zone(key))
            await self._ensure_table(model, key)
            await self._run_sql(model, key, task_statements(model, task, settings))

    async def _ensure_table(self, model: Transformation, session_key: str) -> None:
        """Before the model's first task here: its table created from its query, or given the columns a non-breaking
        change added (``cbt.adapters.target_tables``)."""
        if not owns_table(model):
            return
        spark = await asyncio.to_thread(self.sessions.session, session_key)
        try:
            done, differences = await asyncio.to_thread(self.targets.ensure, spark, model, self.settings)
        except Exception as e:  # Spark Connect raises many exception types; keep the server's message
            raise TaskExecutionError(f"preparing {model.id}'s table: {type(e).__name__}: {_first_lines(str(e))}") from e
        for statement in done:
            log.info("target table: %s", statement.split("(")[0].strip(), extra={"model": model.id})
        if differences:
            log.warning("target table: its columns differ from the query's (rows are written by position; nothing "
                        "altered)", extra={"model": model.id, "differences": list(differences)})

    async def _is_whole_hour_zone(self, session_key: str) -> bool:
        """Whether the session's time zone is whole hours from UTC (asked once per session): a batch proven over
        ``date_trunc('HOUR', …)`` runs over its whole range only then, else as ``union``."""
        spark = await asyncio.to_thread(self.sessions.session, session_key)
        known = self._zones.get(id(spark))
        if known is None:
            zone = str(await asyncio.to_thread(spark.conf.get, "spark.sql.session.timeZone"))
            known = self._zones[id(spark)] = is_whole_hour_zone(zone, time.gmtime().tm_year)
            if not known:
                log.info("the Spark session's time zone is not whole hours from UTC: hour-bucketed batches run as "
                         "union", extra={"zone": zone})
        return known

    async def _run_sql(self, model: Transformation, session_key: str, statements: Sequence[str]) -> None:
        """Each statement under its own operation tag: when it outlives the query timeout, or the run is cancelled
        (lease lost), it is interrupted on the Spark Connect server, so it stops there too instead of writing after
        the task has ended."""
        timeout_s = model.timeout_s or self.query_timeout_s
        limit = f"{model.id}'s timeout" if model.timeout_s else "spark.query_timeout"
        spark = await asyncio.to_thread(self.sessions.session, session_key)
        for statement in statements:
            try:
                await run_tagged(spark, functools.partial(_collect, spark, statement), timeout_s, "a statement", limit)
            except QueryTimeout as e:
                raise TaskExecutionError(str(e)) from e
            except TaskExecutionError as e:
                if is_session_lost(e):  # the next attempt gets a new session (the server restarted)
                    await asyncio.to_thread(self.sessions.discard, session_key, spark)
                raise


def _priority(task: TaskContext) -> PriorityClass:
    return task_priority(task.direction, is_scheduled=task.start is None)


def _collect(spark: SparkSession, statement: str) -> None:
    try:
        spark.sql(statement).collect()
    except Exception as e:  # Spark Connect raises many exception types; keep the server's message
        raise TaskExecutionError(f"{type(e).__name__}: {_first_lines(str(e))}") from e


def _first_lines(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[:lines])
