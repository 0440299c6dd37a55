"""A worker with an ``instance_id`` joins its pools' groups as a static member (Kafka's ``group.instance.id``), on
the real broker: its consumers carry the names ``subscribe`` gives them, and a stop keeps them in the group past a
dynamic member's session timeout — a restart under the same name takes the partitions back without a rebalance —
where a dynamic worker's stop leaves the group empty."""

from __future__ import annotations

import asyncio
import uuid
from typing import cast

import pytest
from confluent_kafka.admin import AdminClient

from cbt.adapters import kafka_admin
from cbt.adapters.kafka_bus import make_broker
from cbt.config.settings import Config, KafkaConfig, WorkerConfig
from cbt.worker.app import subscribe
from cbt.worker.consumer import PipelinedConsumer
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def members(bootstrap: str, group: str) -> list[str | None]:
    """The group's members' static names (None for a dynamic member)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # (kept while the future runs: a dropped client ends it)
    found = admin.describe_consumer_groups([group])[group].result(30)
    return sorted((m.group_instance_id for m in found.members), key=str)


async def until(condition: object, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("instance_id", [pytest.param("worker-a", id="static"), pytest.param(None, id="dynamic")])
def test_a_named_worker_stays_in_its_group_across_a_stop(endpoints: Endpoints, instance_id: str | None) -> None:
    prefix = f"static-test-{uuid.uuid4().hex[:8]}."
    config = Config(kafka=KafkaConfig(bootstrap_servers=endpoints.kafka_bootstrap, topic_prefix=prefix),
                    worker=WorkerConfig(instance_id=instance_id))
    topic, group = f"{prefix}task-requested.default", f"{prefix}worker.default"
    kafka_admin.ensure_topics(endpoints.kafka_bootstrap, [topic])

    async def scenario() -> None:
        broker = make_broker(config.kafka, "static-test")
        for index in range(2):
            subscribe(broker, config, "default", cast(PipelinedConsumer, None), index=index)
        async with broker:
            await broker.start()
            expected = ["worker-a-default-0", "worker-a-default-1"] if instance_id else [None, None]
            await until(lambda: members(endpoints.kafka_bootstrap, group) == expected)
        # (a dynamic member's leave is processed within a second; a static member outlasts a dynamic one's 10 s
        # session timeout, so a restart after a rollout's usual pause still finds it)
        await asyncio.sleep(16.0 if instance_id else 1.0)
        after_stop = members(endpoints.kafka_bootstrap, group)
        assert after_stop == (expected if instance_id else []), after_stop

    asyncio.run(scenario())
