"""The e2e oracle is independent of the product's renderer (tests/e2e/oracle.py): the example's minute model,
rendered by the product and run over the range its sources imply, equals the oracle's SQL — and the same model
with a planted rendering error (one expression changed, as a template bug would) does not. The earlier oracle
rendered its SQL with the product's ``task_statements``, so the planted error gave equal tables and passed."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.target_tables import TargetTables
from cbt.config.settings import load_config
from cbt.dev.ddl import apply_ddl
from cbt.dev.generator import SourceTables, write_range
from cbt.models.loader import load_models
from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.writes import task_statements
from tests.e2e.harness import CONFIG, PROJECT, T0
from tests.e2e.oracle import IndependentOracle

pytestmark = pytest.mark.integration


@pytest.fixture
def databases(spark: SparkSession) -> Iterator[tuple[str, str]]:
    tag = f"toi{uuid.uuid4().hex[:8]}"
    source, output = f"{tag}_src", f"{tag}_out"
    apply_ddl(spark, PROJECT / "models" / "ddl", source, output)
    write_range(spark, SourceTables(source), T0, T0 + 300)
    yield source, output
    for database in (source, output):
        spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")


def run_minute_model(spark: SparkSession, source: str, output: str, span: tuple[int, int],
                     plant: tuple[str, str] | None = None) -> None:
    """The product's rendering of the minute model over ``span`` (one task), run; ``plant`` replaces a piece of its
    SQL first."""
    environ = {**os.environ, "CBT__MODELS__EXTERNAL__DEFAULT_DATABASE": source,
               "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": output}
    config = load_config(CONFIG, environ=environ)
    model = load_models(config).models[f"{output}.block_propagation_minute"]
    assert isinstance(model, IncrementalModel) and model.sql is not None
    if plant is not None:
        assert plant[0] in model.sql
        model = replace(model, sql=model.sql.replace(*plant))
    settings = RenderSettings.from_config(config)
    TargetTables().ensure(spark, model, settings)  # as a worker does before a model's first task
    task = TaskContext(model_id=model.id, task_start_unix=T0, start=span[0], end=span[1])
    for statement in task_statements(model, task, settings):
        spark.sql(statement).collect()


def test_the_oracle_agrees_with_a_correct_rendering_and_catches_a_planted_error(
        spark: SparkSession, databases: tuple[str, str]) -> None:
    source, output = databases
    oracle = IndependentOracle(spark, source, output)
    span = oracle.expected_ranges()["block_propagation_minute"]
    assert span == (T0, T0 + 300 - 12 + 1 - 12), "the newest slot's second + 1, less the source's lag of 12 s"
    run_minute_model(spark, source, output, span)
    assert oracle.differences("block_propagation_minute", span) == (0, 0)
    run_minute_model(spark, source, output, span,
                     plant=("max(propagation_slot_start_diff)", "max(propagation_slot_start_diff) + 1"))
    extra, missing = oracle.differences("block_propagation_minute", span)
    assert extra > 0 and missing > 0, "a planted rendering error must make the oracle check fail"
