"""Fixtures of the container suite (``make test-containers``): the images built by deploy/docker/build.sh, one compose
stack for the whole run, and the example pipeline's deployment seen from the host through the stack's published
loopback ports (the oracle runs on the stack's own Spark Connect server)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.spark import connect
from cbt.config.settings import admin_database_overrides
from tests.containers.compose import DOCKER, INFRA, ROOT, SERVICES, ComposeStack
from tests.e2e.harness import T0, Deployment

IMAGES = [*SERVICES, "spark", "kafka", "redis"]
VERSION = "0.1.0"
LOG_DIR = ROOT / "var" / "containers-logs"
SOURCE_END = T0 + 600
"""The first backlog: ten minutes of source rows (as the process-based e2e suite)."""


def skip_unless_enabled() -> pytest.MarkDecorator:
    return pytest.mark.skipif(os.environ.get("CBT_CONTAINER_TESTS") != "1",
                              reason="container suite: `make test-containers` (CBT_CONTAINER_TESTS=1, a Docker engine)")


@pytest.fixture(scope="session")
def images() -> list[str]:
    """The project's images, built beforehand by `make images` (the suite never builds: one build per run)."""
    missing = [name for name in IMAGES if subprocess.run(
        [DOCKER, "image", "inspect", f"cbt/{name}:{VERSION}"], capture_output=True, check=False).returncode != 0]
    assert not missing, f"images missing: {missing}; build them with `make images`"
    return [f"cbt/{name}:{VERSION}" for name in IMAGES]


@pytest.fixture(scope="session")
def stack(images: list[str]) -> Iterator[ComposeStack]:
    """The infrastructure of one compose project, up and healthy; the services are started by the tests."""
    compose = ComposeStack(LOG_DIR)
    try:
        compose.up(*INFRA)
        compose.wait_healthy(INFRA)
        yield compose
    finally:
        if os.environ.get("CBT_TEST_KEEP_CONTAINERS") != "1":
            compose.down()


@pytest.fixture(scope="session")
def stack_spark(stack: ComposeStack) -> Iterator[SparkSession]:
    deadline = time.monotonic() + 180
    while True:
        try:
            session = connect(stack.spark_remote)
            session.sql("SELECT 1").collect()
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(3)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def stack_deployment(stack: ComposeStack, stack_spark: SparkSession) -> Iterator[Deployment]:
    """The compose stack's pipeline as the e2e harness sees it: the same databases, topics and keys as
    deploy/compose/config.yaml (the project's defaults), reached at the published ports with the services'
    credentials; its tables created."""
    overrides = {
        "CBT__KAFKA__BOOTSTRAP_SERVERS": stack.kafka_bootstrap, "CBT__KAFKA__CLIENT": json.dumps(stack.kafka_client),
        "CBT__REDIS__URL": stack.redis_url, "CBT__SPARK__REMOTE": stack.spark_remote,
        "CBT__SPARK__WAREHOUSE": "",  # the host reads the record through Spark: the warehouse is the stack's volume
        "CBT__MODELS__EXTERNAL__DEFAULT_DATABASE": "ethereum",
        "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": "analytics",
        **admin_database_overrides("admin"),
    }
    redis = Redis.from_url(stack.redis_url)
    dep = Deployment(stack_spark, redis, overrides, LOG_DIR / stack.project)
    dep.create_tables()
    yield dep
    redis.close()
