"""The ``/readyz`` checks against the real Redis, Kafka broker and Spark Connect server: ``ok`` while each answers, a
reason when it is not there (a port nothing listens on stands for a stopped server; the chaos suite restarts the
real ones under a running worker)."""

from __future__ import annotations

import asyncio

import pytest
from redis import Redis

from cbt.adapters import runtime
from cbt.adapters.health import HealthServer
from cbt.adapters.kafka_bus import make_broker
from cbt.config.settings import KafkaConfig
from cbt.dev.pipeline import free_port
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def readiness(redis_url: str, kafka: str, spark_remote: str) -> dict[str, str]:
    async def scenario() -> dict[str, str]:
        broker = make_broker(KafkaConfig(bootstrap_servers=kafka), "readiness-test")
        async with broker:
            await broker.start()
            checks = {"redis": runtime.redis_answers(Redis.from_url(redis_url, socket_timeout=2)),
                      "kafka": runtime.kafka_answers(broker), "spark": runtime.spark_answers(spark_remote)}
            return await HealthServer("127.0.0.1:0", checks).readiness()

    return asyncio.run(scenario())


def test_every_check_is_ok_while_its_server_answers(endpoints: Endpoints) -> None:
    assert readiness(endpoints.redis_url, endpoints.kafka_bootstrap, endpoints.spark_remote) == {
        "redis": "ok", "kafka": "ok", "spark": "ok"}


def test_every_check_names_its_server_gone() -> None:
    gone = free_port()
    verdicts = readiness(f"redis://127.0.0.1:{gone}/0", f"127.0.0.1:{gone}", f"sc://127.0.0.1:{gone}")
    assert all(verdict != "ok" for verdict in verdicts.values()), verdicts
    assert "ConnectionRefused" in verdicts["spark"] and "Connection refused" in verdicts["redis"], verdicts
