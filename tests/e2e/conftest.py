"""Fixtures for end-to-end tests: an isolated deployment of the example pipeline on the real local stack."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.kafka_admin import delete_topics
from cbt.contract.topics import Topics
from tests.conftest import Endpoints
from tests.e2e.harness import PROJECT, Deployment, overrides_for


@pytest.fixture
def deployment(endpoints: Endpoints, spark: SparkSession) -> Iterator[Deployment]:
    tag = f"te{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(endpoints.redis_url)
    overrides = overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote)
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
