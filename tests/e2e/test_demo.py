"""``make demo`` end to end, bounded: the demo runs in a namespace of its own (``--tag``), exits 0, and its
summary shows a model that covered something."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest
from pyspark.sql import SparkSession

from cbt.config.settings import load_config
from cbt.dev.demo import namespace_overrides
from cbt.dev.demo_ops import Namespace, clear
from tests.conftest import Endpoints
from tests.e2e.harness import CONFIG, PROJECT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
COVERED = re.compile(r"covered \[\d\d:\d\d:\d\d, \d\d:\d\d:\d\d\) in [1-9]\d* range")


def test_demo_runs_for_a_while_and_models_catch_up(endpoints: Endpoints, spark: SparkSession) -> None:
    tag = f"tdemo{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "CBT__KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka_bootstrap,
           "CBT__REDIS__URL": endpoints.redis_url, "CBT__SPARK__REMOTE": endpoints.spark_remote}
    argv = [sys.executable, "-m", "cbt.dev.demo", "--tag", tag, "--no-stack", "--duration", "90",
            "--backlog", "300", "--refresh", "10"]
    try:
        done = subprocess.run(argv, env=env, cwd=PROJECT, capture_output=True, text=True, timeout=480)
    finally:
        config = load_config(CONFIG, environ={**env, **namespace_overrides(tag)})
        clear(Namespace.from_config(config), spark, config)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    summary = output[output.rfind("cbt demo ran"):]
    assert COVERED.search(summary), summary
    assert "services stopped" in summary
