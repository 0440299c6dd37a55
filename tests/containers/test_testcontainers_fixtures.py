"""The test fixtures on containers: with ``CBT_TEST_CONTAINERS=1`` the ``endpoints`` fixture starts the project's
Kafka, Redis and Spark images with testcontainers, and the smoke integration modules (Kafka redelivery and commits,
Redis claims and its append-only file, Delta through Spark Connect) pass against them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.compose import ROOT
from tests.containers.conftest import skip_unless_enabled
from tests.containers.infra import REPORT_ENV

pytestmark = [pytest.mark.containers, skip_unless_enabled(), pytest.mark.timeout(900)]
MODULES = ["tests/integration/test_smoke_kafka.py", "tests/integration/test_smoke_redis.py",
           "tests/integration/test_smoke_spark.py"]


def test_the_smoke_integration_modules_pass_on_containers_started_by_testcontainers(
    images: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "containers.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CBT_TEST_")}
    env |= {"CBT_TEST_CONTAINERS": "1", REPORT_ENV: str(report)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MODULES], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=840, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " skipped" not in run.stdout, run.stdout[-2000:]
    started = json.loads(report.read_text())
    assert sorted(c["image"] for c in started["containers"]) == ["cbt/kafka:0.1.0", "cbt/redis:0.1.0",
                                                                 "cbt/spark:0.1.0"]
    assert all(e.startswith(("127.0.0.1:", "sc://127.0.0.1:")) or (e.startswith("redis://cbt:") and "@127.0.0.1:" in e)
               for e in started["endpoints"])
    leftover = subprocess.run(["/usr/bin/docker", "ps", "-aq", *[f"--filter=id={c['id']}" for c in
                                                                   started["containers"]]],
                              capture_output=True, text=True, check=True).stdout.split()
    assert leftover == [], "the fixture removes the containers it started"
