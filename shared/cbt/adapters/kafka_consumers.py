"""What a service can tell about its own Kafka consumers: joined their group (``/readyz``), consume loops still
running (``/healthz``), and how far behind the high watermarks their committed offsets are (consumer lag).

Each FastStream subscriber holds one confluent-kafka consumer once started; every call here reads that consumer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from cbt.adapters.health import Check, Probe

LAG_TIMEOUT_S = 5.0


def _consumer(subscriber: Any) -> Consumer | None:
    """The confluent consumer inside a started FastStream subscriber (``None`` before start and after stop)."""
    outer = getattr(subscriber, "consumer", None)
    return getattr(outer, "consumer", None)


def joined_group(subscribers: Sequence[Any]) -> Check:
    """Ready once every consumer of this process is a member of its group (an empty assignment is fine: more
    consumers than partitions)."""

    async def check() -> None:
        waiting = [", ".join(s.topics) for s in subscribers if not _member_id(s)]
        if waiting:
            raise ConnectionError(f"not yet in its consumer group: {'; '.join(sorted(set(waiting)))}")

    return check


def _member_id(subscriber: Any) -> str | None:
    consumer = _consumer(subscriber)
    return consumer.memberid() if consumer is not None else None


def consume_loops_alive(subscribers: Sequence[Any]) -> Probe:
    """Alive while no subscriber's consume loop has ended (it ends only on an error it could not handle)."""

    def probe() -> str | None:
        ended = [", ".join(s.topics) for s in subscribers if any(task.done() for task in getattr(s, "tasks", ()))]
        return f"consume loop ended: {'; '.join(sorted(set(ended)))}" if ended else None

    return probe


def assigned_lag(subscribers: Sequence[Any]) -> dict[str, int]:
    """Messages not yet committed on the partitions these consumers hold, by topic: high watermark minus committed
    offset (a partition with no commit yet counts from its low watermark). Blocking: network calls, run it in a
    thread. Summed over a group's processes, it is the group's lag (each partition has one holder)."""
    lag: dict[str, int] = {}
    for subscriber in subscribers:
        consumer = _consumer(subscriber)
        if consumer is None:
            continue
        for topic, behind in _partition_lag(consumer).items():
            lag[topic] = lag.get(topic, 0) + behind
    return lag


def _partition_lag(consumer: Consumer) -> dict[str, int]:
    held = consumer.assignment()
    if not held:
        return {}
    out: dict[str, int] = {}
    committed: list[TopicPartition] = consumer.committed(held, timeout=LAG_TIMEOUT_S)
    for partition in committed:
        low, high = consumer.get_watermark_offsets(partition, timeout=LAG_TIMEOUT_S, cached=False)
        start = partition.offset if partition.offset >= 0 else low
        out[partition.topic] = out.get(partition.topic, 0) + max(high - start, 0)
    return out
