"""Topic administration on a real Kafka cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from cbt.base.errors import InfraError

TASK_TOPIC_PARTITIONS = 8
"""Task topics get several partitions so a pool's workers can share them; the others keep one partition each (the
default of ``kafka.task_topic_partitions``)."""


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
    bootstrap: str,
    names: Iterable[str],
    timeout_s: float = 30.0,
    extra: Mapping[str, Any] | None = None,
    *,
    task_partitions: int = TASK_TOPIC_PARTITIONS,
    replication_factor: int = 1,
) -> list[str]:
    """Create the topics that do not exist yet (task topics with ``task_partitions``, the others with one; every one
    with ``replication_factor``); returns the names created. Idempotent: existing topics are left as they are."""
    admin = admin_client(bootstrap, dict(extra or {}))
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    missing = [n for n in names if n not in existing]
    if not missing:
        return []
    new = [NewTopic(n, num_partitions=partitions_for(n, task_partitions), replication_factor=replication_factor,
                    config=topic_config(replication_factor)) for n in missing]
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


def topic_config(replication_factor: int) -> dict[str, str]:
    """A replicated topic takes a write only once two replicas have it (with the producers' ``acks=all``): a broker
    lost right after acknowledging loses no task, completion or invalidation. One replica: the broker's default."""
    return {"min.insync.replicas": "2"} if replication_factor >= 2 else {}


def partitions_for(topic: str, task_partitions: int = TASK_TOPIC_PARTITIONS) -> int:
    """How many partitions a new topic gets: a task topic ``task_partitions`` (its pool's workers share them), any
    other topic one."""
    return task_partitions if ".task-requested." in f".{topic}" else 1
