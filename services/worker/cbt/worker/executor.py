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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import SparkSession

from cbt.adapters.delta_admin import is_conflict
from cbt.adapters.scripts import ScriptError, run_script
from cbt.adapters.spark import QueryTimeout, SessionPool, is_session_lost, run_tagged
from cbt.adapters.target_tables import TargetTables
from cbt.base.errors import CbtError
from cbt.concurrency.slots import PrioritySlots
from cbt.models.batch_choice import batch_choice, batch_mode
from cbt.models.interval_checks import (
    CheckedRun,
    CheckResult,
    IntervalCheck,
    IntervalVerdict,
    accepted_anyway,
    check_queries,
    checks_in_the_write,
    guarded,
    judge,
    keep_failed,
    passed_in_the_write,
    row_counts,
    staged_name,
    verdict_rows,
)
from cbt.models.render import command_argv, exec_environment
from cbt.models.spec import IncrementalModel, ModelId, Transformation, is_whole_hour_zone
from cbt.models.target_tables import owns_table
from cbt.models.templates import RenderSettings, TaskContext, quote_part
from cbt.models.writes import StagedRun, only_writes, published_run, staged_runs, task_statements
from cbt.scheduling.admission import PRIORITIES, Admission, PriorityClass, hand_off_s, task_priority

CONFLICT_RETRIES = 20
RECENT_ROWS_KEPT = 100
"""Published intervals' row counts kept per model for relative ``row_count`` checks (``of_last`` reads fewer)."""
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
    A model's tasks take its table most urgent first, and one still waiting for its slot or permit gives the table
    up to a more urgent task of its model that arrives (``_turn``).

    Slots go to waiting tasks by their direction's priority class (``cbt.scheduling.admission``: forward fill and
    scheduled runs, then re-runs, then backfill; first come first served within a class). With ``admission``
    (``spark.max_concurrent_statements``), a task with a slot then holds one of the Spark cluster's permits — shared
    by every worker — while its statements run, in order (an exec model's script counts as one), at the same
    priority, queued ahead by its model's chain of transformations (``lead_levels``); a forward task of a model with
    dependents (``feeding``) hands its permit on ``HAND_OFF_S`` after its statements end: a forward task of a model
    depending on it (``parents``), or of its own model, takes it at once, even while it waits in the queue or for a
    slot, so a chain's levels run back to back. Any other permit is taken only by a task that has its slot, so no
    permit sits idle in a process whose slots are full; a forward task arriving then waits for one local task to end
    at most.
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
    parents: Mapping[ModelId, frozenset[ModelId]] = field(default_factory=dict)
    """Per model, the models it depends on: a forward task takes a permit one of theirs (or its own model's) is
    handing on at once."""
    _tables: dict[str, PrioritySlots] = field(default_factory=lambda: defaultdict(lambda: PrioritySlots(1)))
    _session_keys: dict[str, str] = field(default_factory=dict)
    _zones: dict[int, bool] = field(default_factory=dict)
    published_rows: Callable[[ModelId], list[int]] | None = None
    """The row counts of a model's latest published intervals, newest first, from the check results (what a
    relative ``row_count`` check compares with): read once per model, then kept up here."""
    _recent_rows: dict[ModelId, list[int]] = field(default_factory=dict)
    failed_retention_s: int | None = None
    """How long the rows of an interval that failed a check are kept in ``<table>__cbt_failed`` (``checks.retention``;
    None: not kept)."""
    targets: TargetTables = field(default_factory=TargetTables)
    """The target tables made sure of (created, or given added columns) in this process."""
    """Per session (by identity): whether its time zone is whole hours from UTC."""
    _slots: PrioritySlots = field(init=False)

    def __post_init__(self) -> None:
        self._slots = PrioritySlots(self.slots)

    async def run(self, model: Transformation, task: TaskContext) -> float | CheckedRun:
        """Run one task. A Delta write conflict (another process committed to the same table while this one read
        it) re-runs the task after a short random pause: every strategy is idempotent, and a conflict is not the
        model's failure, so it does not use up an attempt. Returns the seconds the last run took once it had its
        table, a slot and a permit — with each interval's check verdicts for a model with checks."""
        for conflicts in range(CONFLICT_RETRIES + 1):
            try:
                async with self._turn(model, task):
                    began = time.monotonic()
                    checked = await self._run_once(model, task)
                    if checked is not None:
                        return replace(checked, seconds=time.monotonic() - began)
                    return time.monotonic() - began
            except (TaskExecutionError, ScriptError) as e:
                if not is_conflict(e) or conflicts == CONFLICT_RETRIES:
                    raise
            log.info("delta write conflict; running the task again", extra={"task_id": task.task_id,
                                                                             "conflicts": conflicts + 1})
            await asyncio.sleep(random.uniform(0.05, 0.05 * 2 ** min(conflicts, 4)))
        raise AssertionError("unreachable: the last conflict is raised in the loop")

    @asynccontextmanager
    async def _turn(self, model: Transformation, task: TaskContext) -> AsyncIterator[None]:
        """The task's table (most urgent task of the model first), then a slot, then a permit. A task waiting for
        its slot or permit gives its table up when a more urgent task of its model arrives, and queues for it again
        behind that one: a backfill waiting its turn for the cluster never holds back its model's forward fill."""
        rank = PRIORITIES.index(_priority(task))
        table = self._tables[model.id]
        while True:
            async with table.held(rank), AsyncExitStack() as held:
                ready = asyncio.ensure_future(self._slot_and_permit(held, rank, task))
                overtaken = asyncio.ensure_future(table.overtaken(rank))
                try:
                    await asyncio.wait({ready, overtaken}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    overtaken.cancel()
                    if not ready.done():
                        ready.cancel()
                        await asyncio.wait({ready})
                if not ready.cancelled():
                    ready.result()
                    yield
                    return
            log.debug("a more urgent task of the model arrived; waiting behind it", extra={"task_id": task.task_id})

    async def _slot_and_permit(self, held: AsyncExitStack, rank: int, task: TaskContext) -> None:
        """A slot, then a permit — or, for a forward task whose parent's task is handing its permit on here, that
        permit alone: the parent's task has given its slot back (it may be taken by a task that waits for a permit),
        and the permit is what bounds the work on the cluster. (Checked and taken in one step of the event loop:
        nothing else can take it between.)"""
        heir_of = self._heir_of(task)
        if not (self.admission is not None and self.admission.handing_on(_priority(task), heir_of)):
            await held.enter_async_context(self._slots.held(rank))
        await held.enter_async_context(self._admitted(task))

    def _admitted(self, task: TaskContext) -> AbstractAsyncContextManager[object]:
        if self.admission is None:
            return nullcontext()
        priority = _priority(task)
        return self.admission.held(priority, task.task_id, self.lead_levels.get(task.model_id, 0),
                                   hand_off_s(priority, task.model_id in self.feeding), origin=task.model_id,
                                   heir_of=self._heir_of(task))

    def _heir_of(self, task: TaskContext) -> frozenset[ModelId]:
        """Whose handed-on permits the task takes at once: its model's parents' (the next level of a chain) and its
        model's own (the head's other interval, whose completion the next level may be waiting for)."""
        return self.parents.get(task.model_id, frozenset()) | {task.model_id}

    async def _run_once(self, model: Transformation, task: TaskContext) -> CheckedRun | None:
        if model.exec is not None:  # a batch not in mode bounds runs its intervals in turn
            whole = not isinstance(model, IncrementalModel) or batch_mode(model) == "bounds"
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
            if isinstance(model, IncrementalModel) and task.is_batch and batch_choice(model).needs_whole_hour_zone:
                settings = replace(settings, is_whole_hour_zone=await self._is_whole_hour_zone(key))
            await self._ensure_table(model, key)
            if isinstance(model, IncrementalModel) and model.checks:
                return await self._write_audit_publish(model, key, task, staged_runs(model, task, settings))
            await self._run_sql(model, key, task_statements(model, task, settings))
        return None

    async def _write_audit_publish(self, model: IncrementalModel, session_key: str, task: TaskContext,
                                   runs: Sequence[StagedRun]) -> CheckedRun:
        """Each run's rows computed once (cached under a name of the task's own — lazily: the checks' pass computes
        them), the row-by-row checks in one pass (others in one more query), then one write of the intervals no
        ``error`` check failed (docs/checks.md). Checks a single violating row fails run inside the write first:
        when no row fails, that one statement is the whole run; when one does, nothing was committed, and the run is
        staged to learn which intervals failed."""
        verdicts: list[IntervalVerdict] = []
        check_s = 0.0
        staged = staged_name(task.task_id)
        in_the_write = checks_in_the_write(model.checks, appends=model.write.strategy == "append")
        for run in runs:
            if in_the_write and await self._published_checked(model, session_key, run):
                verdicts += [IntervalVerdict(i.start or 0, i.end or 0, passed_in_the_write(model.checks), None)
                             for i in run.intervals]
                continue
            await self._run_sql(model, session_key, [*run.before, f"CACHE LAZY TABLE {staged} AS\n{run.select}"])
            try:
                began = time.monotonic()
                judged, counts = await self._judge(model, session_key, run, staged, model.checks,
                                                   _target_if_append(model))
                check_s += time.monotonic() - began
                judged = [accepted_anyway(results) if _is_accepted(interval, task.accepted) else results
                          for interval, results in zip(run.intervals, judged, strict=True)]
                passed = [i for i, results in enumerate(judged) if not any(r.stops_publishing for r in results)]
                await self._keep_failed(model, session_key, run, staged, task.task_id,
                                        [i for i in range(len(run.intervals)) if i not in passed])
                publish = run.publish(model, passed, staged)
                if publish is not None:
                    await self._run_sql(model, session_key, [publish])
            finally:  # (dropping the view uncaches it)
                await self._run_sql(model, session_key, [f"DROP VIEW IF EXISTS {staged}"])
            ran = [IntervalVerdict(i.start or 0, i.end or 0, tuple(results), count)
                   for i, results, count in zip(run.intervals, judged, counts, strict=True)]
            self._remember(model, ran)
            verdicts += ran
        verdicts.sort(key=lambda v: v.start)
        return CheckedRun(0.0, tuple(verdicts), check_s)

    async def _keep_failed(self, model: IncrementalModel, session_key: str, run: StagedRun, staged: str,
                           task_id: str, failed: Sequence[int]) -> None:
        """The staged rows of the ``failed`` intervals, kept for ``failed_retention_s`` (docs/checks.md): for
        inspection only, so a failure to keep them is logged and the task goes on."""
        if not failed or self.failed_retention_s is None:
            return
        spans = [(run.intervals[i].start or 0, run.intervals[i].end or 0, run.predicates[i]) for i in failed] \
            if run.predicates is not None else [(run.intervals[0].start or 0, run.intervals[-1].end or 0, "true")]
        try:
            await self._run_sql(model, session_key, keep_failed(
                f"{quote_part(model.database)}.{quote_part(model.table)}", staged, spans, task_id,
                self.failed_retention_s))
        except TaskExecutionError as e:
            log.warning("the rows of intervals that failed a check could not be kept", extra={
                "model": model.id, "error": str(e)[:300]})

    async def _judge(self, model: IncrementalModel, session_key: str, run: StagedRun, staged: str,
                     checks: Sequence[IntervalCheck],
                     target: str | None) -> tuple[list[list[CheckResult]], list[int]]:
        """Each interval's results of ``checks`` over the rows staged as ``staged``, and its row count."""
        queries = check_queries(checks, run.by_interval, staged, target)
        one_pass = await self._query(model, session_key, queries.one_pass)
        apart = [] if queries.apart is None else [(r[0], str(r[1]), int(r[2]), list(r[3] or []))
                                                  for r in await self._query(model, session_key, queries.apart)]
        rows = verdict_rows(queries, [r.asDict() for r in one_pass], apart)
        judged, counts = judge(checks, run.verdicts, rows, await self._recent(model)), row_counts(run.verdicts, rows)
        if run.verdicts == 1:  # one verdict for every interval of the run
            judged, counts = judged * len(run.intervals), counts * len(run.intervals)
        return judged, counts

    async def recheck(self, model: IncrementalModel, task: TaskContext,
                      checks: Sequence[IntervalCheck]) -> CheckedRun:
        """Run ``checks`` over the rows the task's intervals hold in the model's table now (a deployment changed
        them, docs/checks.md#when-a-check-changes): nothing is computed or written."""
        run = published_run(model, task, self.settings)
        staged = staged_name(f"recheck:{task.task_id}")
        async with self._slots.held(PRIORITIES.index(_priority(task))), self._admitted(task):
            began = time.monotonic()
            await self._run_sql(model, SHARED_SESSION, [f"CREATE OR REPLACE TEMP VIEW {staged} AS\n{run.select}"])
            try:
                judged, counts = await self._judge(model, SHARED_SESSION, run, staged, checks, None)
            finally:
                await self._run_sql(model, SHARED_SESSION, [f"DROP VIEW IF EXISTS {staged}"])
            took = time.monotonic() - began
        return CheckedRun(took, tuple(IntervalVerdict(i.start or 0, i.end or 0, tuple(results), count)
                                      for i, results, count in zip(run.intervals, judged, counts, strict=True)), took)

    async def _published_checked(self, model: IncrementalModel, session_key: str, run: StagedRun) -> bool:
        """Write the run with each row checked as it is computed (``interval_checks.guarded``): True when it
        committed (no row failed a check). False when the write failed for any other reason than a conflict, a lost
        session or a timeout — a violating row's error, whose text may be cut — so the run is staged: a failure of
        the model's own SQL then fails there again, with its message."""
        try:
            await self._run_sql(model, session_key, [*run.before, run.publish_checked(
                model, functools.partial(guarded, model.checks))])
        except TaskExecutionError as e:
            if is_conflict(e) or is_session_lost(e) or isinstance(e.__cause__, QueryTimeout):
                raise
            log.info("a row failed a check as the write computed it (nothing committed): staging the run to see "
                     "which intervals failed", extra={"model": model.id, "error": str(e)[:300]})
            return False
        return True

    async def _recent(self, model: IncrementalModel) -> list[int]:
        """The row counts a relative ``row_count`` compares with (none needed: none read)."""
        if not any(c.within is not None for c in model.checks) or self.published_rows is None:
            return []
        if model.id not in self._recent_rows:
            self._recent_rows[model.id] = await asyncio.to_thread(self.published_rows, model.id)
        return self._recent_rows[model.id]

    def _remember(self, model: IncrementalModel, ran: Sequence[IntervalVerdict]) -> None:
        if model.id in self._recent_rows:
            published = [v.rows for v in sorted(ran, key=lambda v: -v.start) if v.is_published and v.rows is not None]
            self._recent_rows[model.id] = (published + self._recent_rows[model.id])[:RECENT_ROWS_KEPT]

    async def _query(self, model: Transformation, session_key: str, statement: str) -> list[Any]:
        """The rows of one query (under the model's timeout, interrupted on the server when cancelled)."""
        timeout_s = model.timeout_s or self.query_timeout_s
        limit = f"{model.id}'s timeout" if model.timeout_s else "spark.query_timeout"
        spark = await asyncio.to_thread(self.sessions.session, session_key)
        try:
            return await run_tagged(spark, functools.partial(_rows, spark, statement), timeout_s, "the checks", limit)
        except QueryTimeout as e:
            raise TaskExecutionError(str(e)) from e

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


def _is_accepted(interval: TaskContext, accepted: Sequence[tuple[int, int]]) -> bool:
    return any(start <= (interval.start or 0) and (interval.end or 0) <= end for start, end in accepted)


def _target_if_append(model: IncrementalModel) -> str | None:
    """The table a ``unique`` check also compares with (an ``append`` model's rows must be new to it)."""
    return f"{quote_part(model.database)}.{quote_part(model.table)}" if model.write.strategy == "append" else None


def _rows(spark: SparkSession, statement: str) -> list[Any]:
    try:
        return list(spark.sql(statement).collect())
    except Exception as e:  # Spark Connect raises many exception types; keep the server's message
        raise TaskExecutionError(f"{type(e).__name__}: {_first_lines(str(e))}") from e


def _collect(spark: SparkSession, statement: str) -> None:
    try:
        spark.sql(statement).collect()
    except Exception as e:  # Spark Connect raises many exception types; keep the server's message
        raise TaskExecutionError(f"{type(e).__name__}: {_first_lines(str(e))}") from e


def _first_lines(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[:lines])
