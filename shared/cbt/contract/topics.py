"""Kafka topic names (docs/design/services.md#topics). Pure: the prefix and pool names come from configuration."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_POOL = "default"


@dataclass(frozen=True)
class Topics:
    """Every topic the services use, under one configurable prefix (default ``cbt.``)."""

    prefix: str = "cbt."

    def task_requested(self, pool: str = DEFAULT_POOL) -> str:
        return f"{self.prefix}task-requested.{pool}"

    @property
    def interval_completed(self) -> str:
        return f"{self.prefix}interval-completed"

    @property
    def task_failed(self) -> str:
        return f"{self.prefix}task-failed"

    @property
    def invalidation(self) -> str:
        return f"{self.prefix}invalidation"

    @property
    def invalidation_rejected(self) -> str:
        return f"{self.prefix}invalidation-rejected"

    @property
    def bounds_updated(self) -> str:
        return f"{self.prefix}bounds-updated"

    @property
    def message_rejected(self) -> str:
        """Bodies on the other consumed topics that their service could not use, with the reason."""
        return f"{self.prefix}message-rejected"

    def worker_group(self, pool: str = DEFAULT_POOL) -> str:
        """The consumer group of the pool's workers (what an autoscaler reads the task queue's lag of)."""
        return f"{self.prefix}worker.{pool}"

    def all(self, pools: tuple[str, ...] = (DEFAULT_POOL,)) -> tuple[str, ...]:
        """Every topic for the given worker pools, task topics first."""
        return (
            *(self.task_requested(pool) for pool in pools),
            self.interval_completed,
            self.task_failed,
            self.invalidation,
            self.invalidation_rejected,
            self.bounds_updated,
            self.message_rejected,
        )
