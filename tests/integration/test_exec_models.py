"""The worker's exec path on a real Spark Connect server, run as CBT ran commands (docs/design/models.md#exec-models):
with ``exec.shell`` the command goes through ``sh -c`` (a pipe, ``&&``, ``$VAR``), with ``exec.inherit_env`` it sees
the service's own environment; without them it sees neither."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.scripts import ScriptError
from cbt.adapters.spark import SessionPool
from cbt.models.spec import ExecOptions, IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration

WRITE_ROW = """\
import os, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
spark.sql(f"INSERT INTO {sys.argv[1]} VALUES ({int(os.environ['BOUNDS_START'])}, '{sys.argv[2]}')")
print("written")
"""
# A pipe, && and $VAR: only a shell runs this; MODEL_SERVICE_NOTE is only in the worker's own environment (a name
# of the infrastructure's, CBT_*, would be withheld: docs/design/models.md#exec-models).
COMMAND = 'python3 write_row.py "$TARGET" "$MODEL_SERVICE_NOTE" | grep -q written && echo ok'


@pytest.fixture
def sessions(endpoints: Endpoints) -> Iterator[SessionPool]:
    pool = SessionPool(endpoints.spark_remote)
    yield pool
    pool.close()


def _model(target: str, options: ExecOptions) -> IncrementalModel:
    return replace(inc("an.script", imax=60), exec=COMMAND, exec_options=options, env={"TARGET": target})


def _run(executor: SparkExecutor, model: IncrementalModel) -> None:
    task = TaskContext(model_id=model.id, task_start_unix=int(time.time()), start=120, end=180)
    asyncio.run(executor.run(model, task))


def test_a_shell_command_with_the_services_environment_writes_through_spark(
    spark: SparkSession,
    spark_database: str,
    sessions: SessionPool,
    endpoints: Endpoints,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "write_row.py").write_text(WRITE_ROW)
    target = f"{spark_database}.out"
    spark.sql(f"CREATE TABLE {target} (position BIGINT, note STRING) USING DELTA")
    monkeypatch.setenv("MODEL_SERVICE_NOTE", "from-the-worker")
    executor = SparkExecutor(
        sessions, RenderSettings(spark_remote=endpoints.spark_remote), exec_timeout_s=300, workdir=str(tmp_path)
    )

    _run(executor, _model(target, ExecOptions(shell=True, inherit_env=True)))

    rows = [(r["position"], r["note"]) for r in spark.sql(f"SELECT * FROM {target}").collect()]
    assert rows == [(120, "from-the-worker")]


def test_without_shell_the_pipe_is_an_argument_and_the_command_fails(
    spark_database: str, sessions: SessionPool, endpoints: Endpoints, tmp_path: Path
) -> None:
    (tmp_path / "write_row.py").write_text(WRITE_ROW)
    executor = SparkExecutor(
        sessions, RenderSettings(spark_remote=endpoints.spark_remote), exec_timeout_s=300, workdir=str(tmp_path)
    )

    with pytest.raises(ScriptError, match="exited with"):  # write_row.py gets "|" "grep" … as arguments
        _run(executor, _model(f"{spark_database}.missing", ExecOptions()))
