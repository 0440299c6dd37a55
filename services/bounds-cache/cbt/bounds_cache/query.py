"""Bounds queries on Spark Connect (SQL externals) or as a subprocess (exec externals)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pyspark.sql import SparkSession

from cbt.adapters.scripts import run_script
from cbt.bounds_cache.scanner import parse_bounds_output
from cbt.errors import CbtError
from cbt.models.render import exec_argv, external_exec_environment, render_bounds_query
from cbt.models.spec import ExternalModel
from cbt.models.templates import RenderSettings, ScanContext
from cbt.scheduling.scanning import ScanResult


class BoundsQueryError(CbtError):
    """A bounds query failed or returned something other than one row with ``min`` and ``max``."""


@dataclass(frozen=True)
class SparkBoundsQuery:
    spark: SparkSession
    settings: RenderSettings
    exec_timeout_s: float = 120.0
    workdir: str | None = None

    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        if model.exec is not None:
            return await self._scan_exec(model, scan)
        statements = render_bounds_query(model, scan, self.settings)
        return await asyncio.to_thread(self._scan_sql, model, statements)

    def _scan_sql(self, model: ExternalModel, statements: list[str]) -> ScanResult:
        for statement in statements[:-1]:
            self.spark.sql(statement).collect()
        rows = self.spark.sql(statements[-1]).collect()
        if len(rows) != 1 or not {"min", "max"} <= set(rows[0].asDict()):
            raise BoundsQueryError(f"{model.id}: the bounds query must return one row with columns min and max")
        row = rows[0].asDict()
        return ScanResult(_position(row["min"], model, "min"), _position(row["max"], model, "max"))

    async def _scan_exec(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        assert model.exec is not None
        env = external_exec_environment(model, scan, self.settings)
        try:
            return parse_bounds_output(await run_script(exec_argv(model.exec), env, self.exec_timeout_s, self.workdir))
        except ValueError as e:
            raise BoundsQueryError(f"{model.id}: {e}") from e


def _position(value: object, model: ExternalModel, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BoundsQueryError(f"{model.id}: bounds column {name} must be an integer position, got {value!r}")
    return int(value)
