"""For other systems: publish one invalidation event and wait until Kafka has it
(docs/design/invalidations.md#publishing).

    from cbt.adapters.invalidation_publisher import publish_invalidation

    publish_invalidation("broker:9092", "ethereum.beacon_blocks", 995, 1006, reason="reorg",
                         source="block-follower", id="reorg:mainnet:994:0xdef", metadata={"fork_block": 994})

The body is validated here first (the same pydantic model the invalidator uses), so a malformed event fails in the
caller, not on the topic. Publishing the same ``id`` twice is harmless: the invalidator applies it once.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

from cbt.base.errors import CbtError
from cbt.contract.messages import Invalidation, MetadataValue
from cbt.contract.topics import Topics


class PublishError(CbtError):
    """Kafka did not acknowledge the event in time; it may or may not have been written (publish it again)."""


def publish_invalidation(
    bootstrap_servers: str,
    model: str,
    start: int,
    end: int,
    *,
    reason: str,
    source: str,
    topic_prefix: str = "cbt.",
    id: str | None = None,
    cascade: bool = True,
    metadata: Mapping[str, MetadataValue] | None = None,
    kafka_config: Mapping[str, Any] | None = None,
    timeout_s: float = 30.0,
) -> str:
    """Publish ``[start, end)`` of ``model`` as invalidated; returns the event id (a new UUID when not given).

    Raises ``pydantic.ValidationError`` for an invalid event and ``PublishError`` when Kafka does not confirm it.
    """
    event = Invalidation(id=id or uuid.uuid4().hex, model=model, start=start, end=end, reason=reason,
                         source=source, cascade=cascade, metadata=dict(metadata or {}))
    publish_event(bootstrap_servers, event, topic_prefix=topic_prefix, kafka_config=kafka_config, timeout_s=timeout_s)
    return event.id


def publish_event(bootstrap_servers: str, event: Invalidation, *, topic_prefix: str = "cbt.",
                  kafka_config: Mapping[str, Any] | None = None, timeout_s: float = 30.0) -> None:
    """Publish an already built event, keyed by model (one model's events stay in order)."""
    producer = Producer({**(kafka_config or {}), "bootstrap.servers": bootstrap_servers, "enable.idempotence": True,
                         "acks": "all"})
    failures: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    topic = Topics(topic_prefix).invalidation
    try:
        producer.produce(topic, event.encode(), key=event.model.encode(), on_delivery=delivered,
                         headers={"content-type": "application/json"})
        remaining = producer.flush(timeout_s)
    except (KafkaException, BufferError) as e:
        raise PublishError(f"invalidation {event.id}: publishing to {topic} failed: {e}") from e
    if failures or remaining:
        why = failures[0] if failures else f"not acknowledged within {timeout_s:g}s"
        raise PublishError(f"invalidation {event.id}: publishing to {topic} failed: {why}")
