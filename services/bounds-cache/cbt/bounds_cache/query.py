"""Bounds queries on Spark Connect (SQL externals) or as a subprocess (exec externals), each under a timeout: a hung
query is interrupted on the server (a script's process group is killed) and the scan fails, so one external model
never stops the others' scans for longer than its timeout. Each model's queries run in a session of its own,
replaced when it is lost. A SQL scan holds one of the Spark cluster's admission permits while it runs, at the
priority of forward fill (it finds new data); a script's does not (what it runs is its own).

An incremental scan of a query that reads one Delta table alone (``cbt.models.scan_source``) first asks the table
for its state (``DESCRIBE DETAIL``: when its last commit landed, its files and bytes — a tenth of a scan's cost): when
that is what the last scan saw, nothing can lie outside the known bounds that did not before, and the query is
skipped. A busy source's scans then cost Spark only when it has new data, and an idle one's almost nothing. Full scans
always run, so a change this could miss (two commits in one millisecond leaving the same files and bytes) is found
by the next full scan at the latest."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from cbt.adapters.scripts import run_script
from cbt.adapters.spark import SessionPool, is_session_lost, run_tagged
from cbt.base.errors import CbtError
from cbt.bounds_cache.scanner import parse_bounds_output
from cbt.concurrency.admission import SparkAdmission
from cbt.models.render import exec_argv, external_exec_environment, render_bounds_query
from cbt.models.scan_source import sole_source_table
from cbt.models.spec import ExternalModel
from cbt.models.templates import RenderSettings, ScanContext, quote_id
from cbt.scheduling.scanning import ScanResult

log = logging.getLogger("cbt.bounds_cache")


class BoundsQueryError(CbtError):
    """A bounds query failed or returned something other than one row with ``min`` and ``max``."""


BOUNDS_TIMEOUT_S = 120.0
"""Longest a bounds query (or script) may run unless the external model sets its own ``timeout``."""


TableState = tuple[object, ...]
"""What ``DESCRIBE DETAIL`` says of a Delta table that changes with every commit: its id, last commit time, files
and bytes."""


@dataclass(frozen=True)
class SparkBoundsQuery:
    sessions: SessionPool
    settings: RenderSettings
    timeout_s: float = BOUNDS_TIMEOUT_S
    workdir: str | None = None
    admission: SparkAdmission | None = None
    _seen: dict[str, TableState] = field(default_factory=dict)
    """Per model: its source table's state when its last scan ran."""
    _unversioned: set[str] = field(default_factory=set)
    """Source tables ``DESCRIBE DETAIL`` gives no state for (not Delta, a view): their scans always run."""

    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        if model.exec is not None:
            return await self._scan_exec(model, scan)
        statements = render_bounds_query(model, scan, self.settings)
        spark = await asyncio.to_thread(self.sessions.session, model.id)
        permit = (self.admission.held("forward", f"{model.id}'s bounds query") if self.admission is not None
                  else contextlib.nullcontext())
        try:
            async with permit:
                return await run_tagged(spark, lambda: self._scan_unless_unchanged(spark, model, scan, statements),
                                        model.timeout_s or self.timeout_s, f"{model.id}'s bounds query",
                                        f"{model.id}'s timeout" if model.timeout_s else "the bounds query timeout")
        except Exception as e:
            if is_session_lost(e):  # the next scan gets a new session (the server restarted)
                await asyncio.to_thread(self.sessions.discard, model.id, spark)
            raise

    def _scan_unless_unchanged(self, spark: SparkSession, model: ExternalModel, scan: ScanContext,
                               statements: list[str]) -> ScanResult:
        source = sole_source_table(statements)
        state = self._table_state(spark, source) if source is not None else None
        if scan.is_incremental_scan and state is not None and self._seen.get(model.id) == state:
            return ScanResult(None, None, is_skipped=True)
        result = self._scan_sql(spark, model, statements)
        if state is not None:  # read before the query: a commit landing during it makes the next scan run
            self._seen[model.id] = state
        return result

    def _table_state(self, spark: SparkSession, table: str) -> TableState | None:
        if table in self._unversioned:
            return None
        try:
            row = spark.sql(f"DESCRIBE DETAIL {quote_id(table)}").collect()[0].asDict()
        except Exception as e:  # a view, or no such table yet: the query itself will say what is wrong
            if is_session_lost(e):
                raise
            row = {}
        if row.get("format") != "delta" or row.get("lastModified") is None:
            log.info("bounds source has no Delta state; its incremental scans always run", extra={"table": table})
            self._unversioned.add(table)
            return None
        return row["id"], row["lastModified"], row["numFiles"], row["sizeInBytes"]

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
            return parse_bounds_output(await run_script(exec_argv(model.exec), env, model.timeout_s or self.timeout_s,
                                                   self.workdir))
        except ValueError as e:
            raise BoundsQueryError(f"{model.id}: {e}") from e


def _position(value: object, model: ExternalModel, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BoundsQueryError(f"{model.id}: bounds column {name} must be an integer position, got {value!r}")
    return int(value)
