"""Topics created from config on the real broker: the task topics' partitions and every topic's replication factor
are the configured ones (a one-broker cluster refuses a factor of 2, which shows the factor reaches the broker)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from cbt.adapters import kafka_admin, runtime
from cbt.base.errors import InfraError
from cbt.config.settings import Config, KafkaConfig
from cbt.contract.topics import Topics
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix(endpoints: Endpoints) -> Iterator[str]:
    prefix = f"ttopics_{uuid.uuid4().hex[:10]}."
    yield prefix
    existing = kafka_admin.admin_client(endpoints.kafka_bootstrap).list_topics(timeout=30).topics
    kafka_admin.delete_topics(endpoints.kafka_bootstrap, [name for name in existing if name.startswith(prefix)])


def test_task_topics_get_the_configured_partitions(endpoints: Endpoints, prefix: str) -> None:
    kafka = KafkaConfig(bootstrap_servers=endpoints.kafka_bootstrap, topic_prefix=prefix, task_topic_partitions=3)
    runtime.ensure_topics(Config(kafka=kafka))
    topics = kafka_admin.admin_client(endpoints.kafka_bootstrap).list_topics(timeout=30).topics
    names = Topics(prefix)
    assert len(topics[names.task_requested()].partitions) == 3
    assert len(topics[names.interval_completed].partitions) == 1
    replicas = {len(p.replicas) for name in names.all() for p in topics[name].partitions.values()}
    assert replicas == {1}, "the default replication factor is 1"


def test_the_replication_factor_reaches_the_broker(endpoints: Endpoints, prefix: str) -> None:
    kafka = KafkaConfig(bootstrap_servers=endpoints.kafka_bootstrap, topic_prefix=prefix, replication_factor=2)
    with pytest.raises(InfraError, match=rf"could not create topic {prefix}.*(?i:replication)"):
        runtime.ensure_topics(Config(kafka=kafka))
