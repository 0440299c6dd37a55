"""Requests to scan an external model's bounds now: a Redis set ``{prefix}bounds-refresh`` of model ids.

The API adds a model (``POST /api/v1/bounds/{model}/refresh``); the leading bounds-cache reads the set every round,
starts a full scan of each requested model that is not scanning already and removes it from the set. A request
survives a bounds-cache restart or a change of leader (it stays until a scanner takes it).
"""

from __future__ import annotations

from typing import cast

from redis import Redis

from cbt.models.spec import ModelId


class RedisRefreshRequests:
    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}bounds-refresh"

    def request(self, model_id: ModelId) -> None:
        self._client.sadd(self._key, model_id)

    def requested(self) -> set[ModelId]:
        members = cast("set[bytes | str]", self._client.smembers(self._key))
        return {m.decode() if isinstance(m, bytes) else m for m in members}

    def taken(self, model_id: ModelId) -> None:
        """The scan of ``model_id`` started: the request is served."""
        self._client.srem(self._key, model_id)
