"""Fixtures for end-to-end tests: an isolated deployment of the example pipeline on the real local stack, its Spark
work run by the stack's Connect server (``local[*]``) or, for tests parametrized with ``spark_backend="cluster"``, by
a Connect server on a Spark standalone cluster of the tests' own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tests.conftest import Endpoints
from tests.e2e.cluster import SparkBackend, StandaloneCluster
from tests.e2e.harness import Deployment, isolated_deployment


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
    with isolated_deployment(endpoints.kafka_bootstrap, endpoints.redis_url, spark_backend.session,
                             spark_backend.remote, f"te{uuid.uuid4().hex[:8]}") as dep:
        dep.create_tables()
        yield dep
