"""What a service can tell about Kafka consumers: its own joined their group (``/readyz``) and their consume loops
still run (``/healthz``); and how far a consumer group's committed offsets are behind the high watermarks (consumer
lag, read with an idle consumer of the group).

Each FastStream subscriber holds one confluent-kafka consumer once started; the probes only read its member id and
its loop tasks (the consumer's own thread makes every other call on it).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, TopicPartition

from cbt.adapters.health import Check, Probe
from cbt.base.errors import InfraError

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


class GroupLag:
    """How many messages of a topic a consumer group has not committed yet: the sum over the topic's partitions of
    the high watermark minus the group's committed offset (from the low watermark where the group committed
    nothing). Known also while none of the group's consumers runs.

    Read with one idle consumer per group: it carries the group's id to ask for its committed offsets but never
    subscribes, so it never joins the group (no rebalance of the real members) and commits nothing. Not with the
    admin client's ``list_consumer_group_offsets``: an admin client has no consumer-group handle, and when the group
    coordinator answers "loading" or "not coordinator" (for seconds after a broker restart) librdkafka (2.12 to 2.15)
    dereferences that missing handle and the whole process dies of SIGSEGV. Blocking; concurrent calls take turns."""

    def __init__(self, bootstrap: str, extra: Mapping[str, Any] | None = None,
                 timeout_s: float = LAG_TIMEOUT_S) -> None:
        self.settings = {"bootstrap.servers": bootstrap, "enable.auto.commit": False, "log_level": 0,
                         **dict(extra or {})}
        self.timeout_s = timeout_s
        self._readers: dict[str, Consumer] = {}
        self._lock = threading.Lock()

    def behind(self, group: str, topic: str) -> int:
        """Raises ``InfraError`` when Kafka does not answer within the timeout."""
        with self._lock:
            try:
                return self._behind(self._reader(group), topic)
            except KafkaException as e:
                raise InfraError(f"consumer lag of {group} on {topic}: {e}") from e

    def _behind(self, reader: Consumer, topic: str) -> int:
        metadata = reader.list_topics(topic, timeout=self.timeout_s).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        partitions = [TopicPartition(topic, p) for p in metadata.partitions]
        committed = {tp.partition: tp.offset for tp in reader.committed(partitions, timeout=self.timeout_s)}
        behind = 0
        for tp in partitions:
            low, high = reader.get_watermark_offsets(tp, timeout=self.timeout_s, cached=False)
            start = committed.get(tp.partition, OFFSET_INVALID)
            behind += max(high - (start if start >= 0 else low), 0)
        return behind

    def close(self) -> None:
        with self._lock:
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()

    def _reader(self, group: str) -> Consumer:
        if group not in self._readers:
            self._readers[group] = Consumer({**self.settings, "group.id": group})
        return self._readers[group]
