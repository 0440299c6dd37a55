"""Shared test fixtures.

Integration and e2e tests get one set of real services per run: Kafka, Redis and Spark Connect at the endpoints
in ``CBT_TEST_KAFKA_BOOTSTRAP`` / ``CBT_TEST_REDIS_URL`` / ``CBT_TEST_SPARK_REMOTE`` when all three are given,
in containers of the project's images started with testcontainers when ``CBT_TEST_CONTAINERS=1`` (and removed at
the end), otherwise started with the project's launcher (``cbt dev up``) and stopped again at the end if this run
started them. Each test gets its own topic prefix, Redis key prefix and Spark database.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from redis import Redis

    from cbt.adapters.spark import SessionPool


@dataclass(frozen=True)
class Endpoints:
    kafka_bootstrap: str
    redis_url: str
    spark_remote: str


ENV_VARS = ("CBT_TEST_KAFKA_BOOTSTRAP", "CBT_TEST_REDIS_URL", "CBT_TEST_SPARK_REMOTE")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """An asyncio loop still running in the main thread when a test starts was left by an earlier one (Playwright's
    sync API runs one until it is stopped); every asyncio.run() would fail with a message naming neither."""
    uses_playwright = "playwright" in getattr(item, "fixturenames", ())
    if not uses_playwright and asyncio._get_running_loop() is not None:  # pyright: ignore[reportPrivateUsage]
        raise RuntimeError(f"{item.nodeid}: an asyncio loop left running by an earlier test (a fixture not stopped)")


@pytest.fixture(scope="session")
def endpoints() -> Iterator[Endpoints]:
    if all(os.environ.get(v) for v in ENV_VARS):
        yield Endpoints(*(os.environ[v] for v in ENV_VARS))
        return
    if os.environ.get("CBT_TEST_CONTAINERS") == "1":
        from tests.containers.infra import project_containers

        with project_containers() as (kafka, redis_url, spark_remote):
            yield Endpoints(kafka, redis_url, spark_remote)
        return
    from cbt.dev import stack

    already_up = {s.name for s in stack.status() if s.is_up}
    stack.up()
    from cbt.dev.layout import Layout

    layout = Layout.from_env()
    yield Endpoints(layout.kafka_bootstrap, layout.redis_url, layout.spark_remote)
    if not already_up and os.environ.get("CBT_TEST_KEEP_INFRA") != "1":
        stack.down()


@pytest.fixture(scope="session")
def spark_sessions(endpoints: Endpoints) -> Iterator[SessionPool]:
    """The tests' Spark Connect session, replaced when a test restarted the server (chaos)."""
    from cbt.adapters.spark import SessionPool

    pool = SessionPool(endpoints.spark_remote)
    yield pool
    pool.close()


@pytest.fixture
def spark(spark_sessions: SessionPool) -> SparkSession:
    return spark_sessions.session("tests")


def _unique(kind: str) -> str:
    return f"t{kind}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def topic_prefix(endpoints: Endpoints) -> Iterator[str]:
    """A fresh topic prefix with every topic (docs/design/services.md#topics) created under it; deleted afterwards."""
    from cbt.adapters.kafka_admin import delete_topics, ensure_topics
    from cbt.contract.topics import Topics

    prefix = _unique("k") + "."
    names = Topics(prefix).all()
    ensure_topics(endpoints.kafka_bootstrap, names)
    yield prefix
    delete_topics(endpoints.kafka_bootstrap, names)


@pytest.fixture
def redis_prefix() -> str:
    return _unique("r") + ":"


@pytest.fixture
def redis_client(endpoints: Endpoints, redis_prefix: str) -> Iterator[Redis]:
    from redis import Redis

    client = Redis.from_url(endpoints.redis_url)
    yield client
    keys = list(client.scan_iter(match=redis_prefix + "*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def spark_database(spark: SparkSession) -> Iterator[str]:
    """A fresh Spark database for one test, dropped with its tables afterwards."""
    name = _unique("db")
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
