"""Bounds queries: from the Delta log when it can answer them exactly, else on Spark Connect (SQL externals) or as a
subprocess (exec externals), each under a timeout.

A SQL external whose bounds query is a plain min and max of one column of its own Delta table
(``cbt.models.log_bounds``) gets its bounds from the table's log (``cbt.adapters.delta_log_bounds``): no Spark
statement, so new data is seen without waiting behind the jobs. When the log cannot prove them exact, the scan goes
to Spark. A hung Spark query is interrupted on the server (a script's process group is killed) and the scan fails,
so one external model never stops the others' scans for longer than its timeout. Each model's queries run in a
session of its own, replaced when it is lost. A Spark scan holds one of the cluster's admission permits while it
runs, at the priority of forward fill (it finds new data), ahead of backfill; a script's does not (what it runs is
its own)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from cbt.adapters.delta_log_bounds import DeltaLogBounds, NotExact
from cbt.adapters.scripts import run_script
from cbt.adapters.spark import SessionPool, is_session_lost, run_tagged
from cbt.base.errors import CbtError
from cbt.bounds_cache.scanner import parse_bounds_output
from cbt.concurrency.admission import SparkAdmission
from cbt.models.log_bounds import LogBoundsPlan, SparkOnly, log_bounds_plan
from cbt.models.render import command_argv, external_exec_environment, render_bounds_query
from cbt.models.spec import ExternalModel, ModelId
from cbt.models.templates import RenderSettings, ScanContext
from cbt.scheduling.scanning import ScanResult


class BoundsQueryError(CbtError):
    """A bounds query failed or returned something other than one row with ``min`` and ``max``."""


log = logging.getLogger("cbt.bounds_cache")

BOUNDS_TIMEOUT_S = 120.0
"""Longest a bounds query (or script) may run unless the external model sets its own ``timeout``."""


@dataclass(frozen=True)
class SparkBoundsQuery:
    sessions: SessionPool
    settings: RenderSettings
    timeout_s: float = BOUNDS_TIMEOUT_S
    workdir: str | None = None
    admission: SparkAdmission | None = None
    delta_log: DeltaLogBounds | None = None
    """Reads bounds from the Delta log where it can (``None``: every SQL scan runs on Spark)."""
    _plans: dict[ModelId, LogBoundsPlan | SparkOnly] = field(default_factory=dict)
    _spark_only: dict[ModelId, str] = field(default_factory=dict)
    """Why each model's last scan went to Spark (logged once per reason)."""

    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        if model.exec is not None:
            return await self._scan_exec(model, scan)
        if self.delta_log is not None:
            plan = self._plans.get(model.id)
            if plan is None:  # (the rendered query and its parse do not change while the process runs)
                plan = self._plans[model.id] = bounds_plan(model, self.settings)
            reason = plan.reason if isinstance(plan, SparkOnly) else None
            if isinstance(plan, LogBoundsPlan):
                try:
                    return await asyncio.to_thread(self.delta_log.bounds, model, plan)
                except NotExact as e:
                    reason = str(e)
            if reason is not None and self._spark_only.get(model.id) != reason:
                log.info("bounds scanned by Spark", extra={"model": model.id, "reason": reason})
                self._spark_only[model.id] = reason
        statements = render_bounds_query(model, scan, self.settings)
        spark = await asyncio.to_thread(self.sessions.session, model.id)
        permit = (self.admission.held("forward", f"{model.id}'s bounds query") if self.admission is not None
                  else contextlib.nullcontext())
        try:
            async with permit:
                return await run_tagged(spark, lambda: self._scan_sql(spark, model, statements),
                                        model.timeout_s or self.timeout_s, f"{model.id}'s bounds query",
                                        f"{model.id}'s timeout" if model.timeout_s else "the bounds query timeout")
        except Exception as e:
            if is_session_lost(e):  # the next scan gets a new session (the server restarted)
                await asyncio.to_thread(self.sessions.discard, model.id, spark)
            raise

    @staticmethod
    def _scan_sql(spark: SparkSession, model: ExternalModel, statements: list[str]) -> ScanResult:
        for statement in statements[:-1]:
            spark.sql(statement).collect()
        rows = spark.sql(statements[-1]).collect()
        if len(rows) != 1 or not {"min", "max"} <= set(rows[0].asDict()):
            raise BoundsQueryError(f"{model.id}: the bounds query must return one row with columns min and max")
        row = rows[0].asDict()
        return ScanResult(_position(row["min"], model, "min"), _position(row["max"], model, "max"))

    async def _scan_exec(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        assert model.exec is not None
        env = external_exec_environment(model, scan, self.settings)
        try:
            return parse_bounds_output(await run_script(command_argv(model), env, model.timeout_s or self.timeout_s,
                                                   self.workdir, inherit_env=model.exec_options.inherit_env))
        except ValueError as e:
            raise BoundsQueryError(f"{model.id}: {e}") from e


def _position(value: object, model: ExternalModel, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BoundsQueryError(f"{model.id}: bounds column {name} must be an integer position, got {value!r}")
    return int(value)


def bounds_plan(model: ExternalModel, settings: RenderSettings) -> LogBoundsPlan | SparkOnly:
    """Whether the Delta log can answer ``model``'s bounds query (its full scan, rendered), or why not."""
    if model.sql is None:
        return SparkOnly("an exec model runs its own command")
    statements = render_bounds_query(model, ScanContext(is_incremental_scan=False), settings)
    return log_bounds_plan(statements, model.database, model.table)
