"""Bench (h) after the run: each model's job alone on the quiet server, for the same task length as under load.

Each model's statements (or script) for one task — the length most of its tasks had under load, ending at its
coverage's end — run directly on the Spark Connect server with nothing else running, ``RUNS`` times after one
warm-up; the median is the model's time alone. Re-running a task leaves the table as it was (every strategy here is
idempotent per interval). (The rows are judged by ``bench.mixed_expected``, SQL written apart from the product.)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from cbt.adapters.scripts import run_script
from cbt.config.settings import Config, load_config
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


def alone_interval(lengths: Sequence[int], covered: Coverage) -> Range | None:
    """The task to time alone: as long as most tasks under load were (``lengths``: each task's), ending at the
    coverage's end; None when there were no tasks or the last covered range is shorter."""
    if not covered or not lengths:
        return None
    length = Counter(lengths).most_common(1)[0][0]
    start, end = covered[-1]
    return (end - length, end) if end - start >= length else None


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
