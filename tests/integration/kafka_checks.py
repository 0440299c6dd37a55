"""What the broker holds for a consumer group, read with a plain confluent-kafka client."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition


def committed_offset(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    """The group's committed offset on one partition of ``topic`` (negative when nothing was committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, partition)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()
