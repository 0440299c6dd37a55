"""The worker's Kafka subscriptions: one consumer group per pool, named by the contract (``Topics.worker_group``),
which autoscalers (KEDA's kafka trigger) and the coordinator's lag gauge read."""

from __future__ import annotations

from typing import cast

import pytest

from cbt.adapters.kafka_bus import make_broker
from cbt.config.settings import Config, KafkaConfig, PoolConfig, WorkerConfig
from cbt.contract.topics import Topics
from cbt.worker.app import consumed_pools, subscribe
from cbt.worker.consumer import PipelinedConsumer


@pytest.mark.parametrize("prefix", [pytest.param("cbt.", id="default-prefix"), pytest.param("prod.eu.", id="custom")])
def test_each_pool_subscribes_its_task_topic_in_the_contract_group(prefix: str) -> None:
    config = Config(kafka=KafkaConfig(topic_prefix=prefix),
                    worker=WorkerConfig(pools={"python": PoolConfig(tags=["python"])}))
    broker = make_broker(config.kafka, "test")
    topics = Topics(prefix)
    for pool in consumed_pools(config):
        subscriber = subscribe(broker, config, pool, cast(PipelinedConsumer, None))  # the consumer is not called
        assert subscriber.group_id == topics.worker_group(pool) == f"{prefix}worker.{pool}"
        assert subscriber.topics == [topics.task_requested(pool)]
