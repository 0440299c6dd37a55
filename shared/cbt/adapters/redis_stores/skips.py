"""Ranges an operator skipped, in Redis: the planner does not schedule them. Keys::

    {prefix}skipped          hash  model -> ranges an operator skipped, JSON [[start, end], ...]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import cast

from redis import Redis
from redis.client import Pipeline

from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range


class RedisSkips:
    """``skipped``: a hash of model id → its skipped ranges as JSON ``[[start, end], …]``; each change is a
    read-modify-write under WATCH, so concurrent api replicas never lose one another's changes."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}skipped"

    def skipped(self, model_ids: Collection[ModelId]) -> dict[ModelId, Coverage]:
        wanted = list(model_ids)
        if not wanted:
            return {}
        values = cast(list[bytes | None], self._client.hmget(self._key, wanted))
        return {m: ranges for m, value in zip(wanted, values, strict=True) if (ranges := _decode_skipped(value))}

    def skip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.add(ranges, r))

    def unskip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.remove(ranges, r))

    def _change(self, model_id: ModelId, change: Callable[[Coverage], Coverage]) -> Coverage:
        after: Coverage = cov.EMPTY

        def apply(pipe: Pipeline) -> None:
            nonlocal after
            after = change(_decode_skipped(cast(bytes | None, pipe.hget(self._key, model_id))))
            pipe.multi()
            if after:
                pipe.hset(self._key, model_id, json.dumps([list(x) for x in after]))
            else:
                pipe.hdel(self._key, model_id)

        self._client.transaction(apply, self._key)
        return after


def _decode_skipped(value: bytes | None) -> Coverage:
    """The ranges of one hash value; a value that does not decode (written by something else) is none."""
    try:
        return cov.merge((int(a), int(b)) for a, b in json.loads(value or "[]"))
    except (ValueError, TypeError):
        return cov.EMPTY
