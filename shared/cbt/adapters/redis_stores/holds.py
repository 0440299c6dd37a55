"""Intervals a failed check holds (docs/checks.md), in Redis. Keys::

    {prefix}check-held       hash  model -> its held intervals, JSON [[start, end, version, reason, accepted_by],
                                   ...] (``accepted_by`` null while held; written by older versions without it)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import cast

from redis import Redis
from redis.client import Pipeline

from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Range
from cbt.state.holds import accepted, add_held, overlapping, without
from cbt.state.ports import HeldInterval


class RedisHolds:
    """``check-held``: a hash of model id → its held intervals as JSON; each change is a read-modify-write under
    WATCH, so workers and the invalidator never lose one another's changes."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}check-held"

    def held(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[HeldInterval, ...]]:
        wanted = list(model_ids)
        if not wanted:
            return {}
        values = cast(list[bytes | None], self._client.hmget(self._key, wanted))
        return {m: held for m, value in zip(wanted, values, strict=True) if (held := _decode(value))}

    def hold(self, model_id: ModelId, held: Sequence[HeldInterval]) -> None:
        self._change(model_id, lambda before: add_held(before, held))

    def release(self, model_id: ModelId, r: Range) -> list[HeldInterval]:
        released: list[HeldInterval] = []

        def change(before: tuple[HeldInterval, ...]) -> tuple[HeldInterval, ...]:
            released[:] = overlapping(before, r)
            return without(before, r)

        self._change(model_id, change)
        return released

    def accept(self, model_id: ModelId, r: Range, who: str, version: str | None) -> list[HeldInterval]:
        marked: list[HeldInterval] = []

        def change(before: tuple[HeldInterval, ...]) -> tuple[HeldInterval, ...]:
            after, marked[:] = accepted(before, r, who, version)
            return after

        self._change(model_id, change)
        return marked

    def _change(self, model_id: ModelId,
                change: Callable[[tuple[HeldInterval, ...]], tuple[HeldInterval, ...]]) -> None:
        def apply(pipe: Pipeline) -> None:
            after = change(_decode(cast(bytes | None, pipe.hget(self._key, model_id))))
            pipe.multi()
            if after:
                pipe.hset(self._key, model_id, json.dumps([[h.start, h.end, h.version, h.reason, h.accepted_by]
                                                             for h in after]))
            else:
                pipe.hdel(self._key, model_id)

        self._client.transaction(apply, self._key)


def _decode(value: bytes | None) -> tuple[HeldInterval, ...]:
    """The held intervals of one hash value; a value that does not decode (written by something else) is none."""
    try:
        return tuple(HeldInterval(int(s), int(e), None if v is None else str(v), str(why),
                                  None if not by or by[0] is None else str(by[0]))
                     for s, e, v, why, *by in json.loads(value or "[]"))
    except (ValueError, TypeError):
        return ()
