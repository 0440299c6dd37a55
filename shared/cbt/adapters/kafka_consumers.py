"""What a service can tell about Kafka consumers: its own joined their group (``/readyz``) and their consume loops
still run (``/healthz``); and how far a consumer group's committed offsets are behind the high watermarks (consumer
lag, read with an admin client).

Each FastStream subscriber holds one confluent-kafka consumer once started; the probes only read its member id and
its loop tasks (the consumer's own thread makes every other call on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from cbt.adapters.health import Check, Probe

LAG_TIMEOUT_S = 5.0


def _consumer(subscriber: Any) -> Any:
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
    """Alive while every started subscriber's newest consume loop runs. (FastStream's supervisor replaces a loop that
    raised with a new one, appended to ``tasks``; a loop that was cancelled, or whose replacement ended too, stays
    ended.)"""

    def probe() -> str | None:
        ended = [", ".join(s.topics) for s in subscribers if not s.tasks or s.tasks[-1].done()]
        return f"consume loop ended: {'; '.join(sorted(set(ended)))}" if ended else None

    return probe


def group_lag(admin: AdminClient, group: str, topic: str, timeout_s: float = LAG_TIMEOUT_S) -> int:
    """Messages of ``topic`` the consumer ``group`` has not committed yet: the sum over the topic's partitions of the
    high watermark minus the group's committed offset (from the earliest offset where the group committed nothing).
    Read with an admin client, so it is known also while no consumer of the group runs. Blocking."""
    metadata = admin.list_topics(topic, timeout=timeout_s).topics[topic]
    partitions = [TopicPartition(topic, p) for p in metadata.partitions]
    if not partitions:
        return 0
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    (answer,) = admin.list_consumer_group_offsets(request, request_timeout=timeout_s).values()
    committed = {tp.partition: tp.offset for tp in answer.result(timeout_s).topic_partitions}
    latest = _offsets(admin, partitions, OffsetSpec.latest(), timeout_s)
    earliest = _offsets(admin, partitions, OffsetSpec.earliest(), timeout_s)
    return sum(max(latest[p] - (committed[p] if committed.get(p, -1) >= 0 else earliest[p]), 0) for p in latest)


def _offsets(admin: AdminClient, partitions: list[TopicPartition], spec: OffsetSpec,
             timeout_s: float) -> dict[int, int]:
    answers = admin.list_offsets({tp: spec for tp in partitions}, request_timeout=timeout_s)
    return {tp.partition: future.result(timeout_s).offset for tp, future in answers.items()}
