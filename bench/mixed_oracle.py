"""Bench (h) after the run: every table against a per-range oracle, and each model's job alone on a quiet server.

- Oracle: the same transformations, each run once per range its pipeline table covers (one statement over the whole
  range), into a database of their own, reading the same sources; the scheduled model runs once. Every pipeline
  table must equal its oracle row for row (``EXCEPT ALL`` both ways) inside the ranges it covers; rows outside
  them (a task stopped before it recorded its coverage, when the run never got quiet) are counted apart.
- Alone: each model's statements (or script) for one interval — its last full interval — run directly on the Spark
  Connect server with nothing else running, ``RUNS`` times after one warm-up; the median is the model's time alone.
  Re-running an interval leaves the table as it was (every strategy here is idempotent per interval).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from cbt.adapters.scripts import run_script
from cbt.config.settings import Config, load_config
from cbt.dev.ddl import apply_ddl
from cbt.models.dag import ModelSet
from cbt.models.loader import load_models
from cbt.models.render import command_argv, exec_environment
from cbt.models.spec import IncrementalModel, ScheduledModel, Transformation
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import task_statements
from cbt.scheduling.coverage import Coverage, Range

RUNS = 3
SCRIPT_TIMEOUT_S = 300


@dataclass(frozen=True)
class Runner:
    """Runs one model's task — its statements on ``spark``, or its script — as the worker would."""

    spark: SparkSession
    config: Config
    models: ModelSet

    @classmethod
    def load(cls, spark: SparkSession, config_path: Path, environ: dict[str, str]) -> Runner:
        config = load_config(config_path, environ={**os.environ, **environ})
        return cls(spark, config, load_models(config))

    def run(self, model: Transformation, rng: Range | None, task_start_unix: int) -> None:
        start, end = rng if rng is not None else (None, None)
        task = TaskContext(model_id=model.id, task_start_unix=task_start_unix, start=start, end=end)
        settings = RenderSettings.from_config(self.config)
        if model.exec is not None:
            env = exec_environment(model, task, settings)
            asyncio.run(run_script(command_argv(model), env, SCRIPT_TIMEOUT_S, str(self.config.base_dir),
                                   inherit_env=model.exec_options.inherit_env))
            return
        for statement in task_statements(model, task, settings):
            self.spark.sql(statement).collect()

    def transformations(self) -> list[Transformation]:
        """Incremental and scheduled models, dependencies first."""
        return [m for m in (self.models.models[i] for i in self.models.topological_order())
                if isinstance(m, IncrementalModel | ScheduledModel)]


def build_oracle(spark: SparkSession, config_path: Path, environ: dict[str, str], ddl: Path, source_db: str,
                 database: str, coverage: dict[str, Coverage], task_start_unix: int) -> None:
    """Every transformation once per range the pipeline's table covers (``coverage`` by table), into ``database``."""
    runner = Runner.load(spark, config_path, {**environ, "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": database})
    apply_ddl(spark, ddl, source_db, database)
    for model in runner.transformations():
        ranges: list[Range | None] = [None] if isinstance(model, ScheduledModel) else [*coverage.get(model.table, ())]
        for rng in ranges:
            runner.run(model, rng, task_start_unix)


def differences(spark: SparkSession, ours: str, oracle: str, where: str = "true") -> tuple[int, int]:
    """Rows only in ``ours``, rows only in ``oracle`` (both filtered by ``where``)."""
    def count(a: str, b: str) -> int:
        return int(spark.sql(f"SELECT count(*) AS n FROM (SELECT * FROM {a} WHERE {where} "
                             f"EXCEPT ALL SELECT * FROM {b} WHERE {where})").collect()[0]["n"])

    return count(ours, oracle), count(oracle, ours)


def in_coverage(column: str, covered: Coverage) -> str:
    """A predicate: ``column`` (a timestamp of the position) inside one of the covered ranges."""
    ranges = [f"({column} >= timestamp_seconds({start}) AND {column} < timestamp_seconds({end}))"
              for start, end in covered]
    return " OR ".join(ranges) or "false"


def count_where(spark: SparkSession, table: str, where: str) -> int:
    return int(spark.sql(f"SELECT count(*) AS n FROM {table} WHERE {where}").collect()[0]["n"])


def alone_interval(model: IncrementalModel, covered: Coverage) -> Range | None:
    """The model's last full interval inside its coverage (the whole last range when shorter)."""
    if not covered:
        return None
    start, end = covered[-1]
    return (max(start, end - model.interval.max), end)


def time_alone(runner: Runner, model: Transformation, rng: Range | None, task_start_unix: int) -> dict[str, object]:
    """One warm-up, then ``RUNS`` timed runs of the same task: their median and every time (ms)."""
    runner.run(model, rng, task_start_unix)
    took = []
    for _ in range(RUNS):
        began = time.perf_counter()
        runner.run(model, rng, task_start_unix)
        took.append(round((time.perf_counter() - began) * 1000, 1))
    return {"interval": None if rng is None else rng[1] - rng[0], "median_ms": statistics.median(took),
            "runs_ms": took}
