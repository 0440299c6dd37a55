"""Recent task failures in Redis, for the status pages: the newest few per model (the full history is in the admin
table ``cbt_failures``). Keys (``{m}`` is a model id)::

    {prefix}failed:{m}       hash  task id -> its ``task-failed`` (the newest ``KEEP_FAILURES``)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from redis import Redis

from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.state.ports import KEEP_FAILURES


class RedisFailures:
    """``failed:{model}``: a hash of task id → its encoded ``task-failed``; trimmed to the newest ``KEEP_FAILURES``."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    def record_failure(self, failure: TaskFailed) -> None:
        key = self._key(failure.model)
        self._client.hset(key, failure.task_id, failure.model_dump_json())
        if cast(int, self._client.hlen(key)) > KEEP_FAILURES:
            oldest = self._decoded(key)[KEEP_FAILURES:]
            self._client.hdel(key, *[f.task_id for f in oldest])

    def clear_failure(self, model_id: ModelId, task_id: str) -> None:
        self._client.hdel(self._key(model_id), task_id)

    def recent_failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]:
        return {model_id: failures[:KEEP_FAILURES] for model_id in model_ids
                if (failures := self._decoded(self._key(model_id)))}

    def _decoded(self, key: str) -> list[TaskFailed]:
        """Newest first; an entry that does not decode (written by something else) is left out."""
        failures: list[TaskFailed] = []
        for body in cast(dict[bytes, bytes], self._client.hgetall(key)).values():
            try:
                failures.append(TaskFailed.model_validate_json(body))
            except ValueError:
                continue
        return sorted(failures, key=lambda f: f.failed_at_ms, reverse=True)

    def _key(self, model_id: ModelId) -> str:
        return f"{self._prefix}failed:{model_id}"
