"""Topic administration on a real Kafka cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from cbt.errors import InfraError

TASK_TOPIC_PARTITIONS = 8
"""Task topics get several partitions so a pool's workers can share them; the others keep one partition each."""


def admin_client(bootstrap: str, extra: dict[str, Any] | None = None) -> AdminClient:
    # librdkafka logs every refused connection to stderr; callers report reachability themselves.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **(extra or {})})


def is_reachable(bootstrap: str, timeout_s: float = 2.0) -> bool:
    """True when a broker answers a metadata request."""
    try:
        admin_client(bootstrap).list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return True


def ensure_topics(
    bootstrap: str, names: Iterable[str], timeout_s: float = 30.0, extra: Mapping[str, Any] | None = None
) -> list[str]:
    """Create the topics that do not exist yet; returns the names created. Idempotent."""
    admin = admin_client(bootstrap, dict(extra or {}))
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    missing = [n for n in names if n not in existing]
    if not missing:
        return []
    new = [NewTopic(n, num_partitions=_partitions_for(n), replication_factor=1) for n in missing]
    for name, future in admin.create_topics(new, operation_timeout=timeout_s).items():
        try:
            future.result()
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise InfraError(f"could not create topic {name}: {e}") from e
    return missing


def delete_topics(bootstrap: str, names: Iterable[str], timeout_s: float = 30.0) -> None:
    """Delete topics, ignoring the ones already gone (test clean-up)."""
    admin = admin_client(bootstrap)
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    doomed = [n for n in names if n in existing]
    for future in admin.delete_topics(doomed, operation_timeout=timeout_s).values() if doomed else ():
        future.result()


def _partitions_for(topic: str) -> int:
    return TASK_TOPIC_PARTITIONS if ".task-requested." in f".{topic}" else 1
