"""Fixtures for end-to-end tests: an isolated deployment of the example pipeline on the real local stack, its Spark
work run by the stack's Connect server (``local[*]``) or, for tests parametrized with ``spark_backend="cluster"``, by
a Connect server on a Spark standalone cluster of the tests' own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.kafka_admin import delete_topics
from cbt.contract.topics import Topics
from tests.conftest import Endpoints
from tests.e2e.cluster import SparkBackend, StandaloneCluster
from tests.e2e.harness import PROJECT, Deployment, overrides_for


@pytest.fixture(scope="session")
def spark_cluster(endpoints: Endpoints) -> Iterator[StandaloneCluster]:
    """Started once, by the first test that asks for it (~20 s), and stopped at the end of the run."""
    cluster = StandaloneCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def spark_backend(request: pytest.FixtureRequest, endpoints: Endpoints) -> SparkBackend:
    if getattr(request, "param", "local") == "cluster":
        cluster: StandaloneCluster = request.getfixturevalue("spark_cluster")
        return SparkBackend(cluster.remote, cluster.session(), cluster)
    spark: SparkSession = request.getfixturevalue("spark")
    return SparkBackend(endpoints.spark_remote, spark, None)


@pytest.fixture
def deployment(endpoints: Endpoints, spark_backend: SparkBackend) -> Iterator[Deployment]:
    tag = f"te{uuid.uuid4().hex[:8]}"
    spark = spark_backend.session
    redis = Redis.from_url(endpoints.redis_url)
    overrides = overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, spark_backend.remote)
    dep = Deployment(spark, redis, overrides, PROJECT / "var" / "e2e-logs" / tag)
    dep.create_tables()
    yield dep
    dep.stop()
    for database in dep.databases():
        spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
    keys = list(redis.scan_iter(match=f"{tag}:*"))
    if keys:
        redis.delete(*keys)
    delete_topics(endpoints.kafka_bootstrap, Topics(f"{tag}.").all(("default", *dep.config.worker.pools)))
    redis.close()
