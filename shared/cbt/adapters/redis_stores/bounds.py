"""The bounds cache in Redis: each external model's raw bounds as the last scan found them.

``RedisBounds`` implements ``BoundsStore`` (``cbt.state.ports``). Keys::

    {prefix}bounds           hash  model -> {"min": int, "max": int}
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import cast

from redis import Redis

from cbt.models.spec import ModelId
from cbt.scheduling.snapshot import RawBounds


class RedisBounds:
    """``BoundsStore``: one hash of model id to raw bounds."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}bounds"

    def bounds(self, models: Collection[ModelId]) -> dict[ModelId, RawBounds]:
        """Stored bounds of the given models; models never stored are missing (not scanned yet)."""
        ordered = list(models)
        if not ordered:
            return {}
        values = cast("list[bytes | str | None]", self._client.hmget(self._key, ordered))
        return {m: _decode_bounds(v) for m, v in zip(ordered, values, strict=True) if v is not None}

    def put_bounds(self, model: ModelId, bounds: RawBounds) -> RawBounds | None:
        """Store new bounds and return the previous ones, read and written in one transaction."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._key, model)
        pipe.hset(self._key, model, json.dumps({"min": bounds.min, "max": bounds.max}))
        previous, _ = pipe.execute()
        return None if previous is None else _decode_bounds(previous)

    def delete_bounds(self, model: ModelId) -> RawBounds | None:
        """Remove a model's bounds and return them, read and deleted in one transaction."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._key, model)
        pipe.hdel(self._key, model)
        previous, _ = pipe.execute()
        return None if previous is None else _decode_bounds(previous)


def _decode_bounds(value: bytes | str) -> RawBounds:
    data = json.loads(value)
    return RawBounds(min=int(data["min"]), max=int(data["max"]))
