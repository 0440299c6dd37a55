"""Live config overrides in Redis (``cbt.models.live_overrides``); the durable copy is the admin table
``cbt_config_overrides`` (``cbt.adapters.admin_tables.overrides``). Keys::

    {prefix}overrides            hash    model -> its override, a JSON object
    {prefix}overrides-version    int     bumped by every change; services poll it once per tick
    {prefix}overrides-restored   string  "1" once the hash was filled from the admin table: without it (Redis
                                         emptied) the overrides are restored before anyone reads them
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from redis import Redis
from redis.exceptions import WatchError

from cbt.models.spec import ModelId


class RedisOverrides:
    """Every change is one MULTI: the hash, the version and the restored flag move together."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._hash = f"{prefix}overrides"
        self._version = f"{prefix}overrides-version"
        self._restored = f"{prefix}overrides-restored"

    def version(self) -> int | None:
        restored, version = cast(list[bytes | None], self._client.mget([self._restored, self._version]))
        return None if restored is None else int(version or 0)

    def overrides(self) -> dict[ModelId, dict[str, Any]]:
        raw = cast(dict[bytes, bytes], self._client.hgetall(self._hash))
        out: dict[ModelId, dict[str, Any]] = {}
        for key, value in raw.items():
            try:
                fields = json.loads(value)
            except ValueError:
                continue  # (written by something else: not an override)
            if isinstance(fields, dict):
                out[key.decode()] = fields
        return out

    def put(self, model_id: ModelId, fields: Mapping[str, Any]) -> int:
        return self._change(lambda pipe: pipe.hset(self._hash, model_id, _encoded(fields)))

    def clear(self, model_id: ModelId) -> int:
        return self._change(lambda pipe: pipe.hdel(self._hash, model_id))

    def counter(self) -> int:
        return int(cast(bytes | None, self._client.get(self._version)) or 0)

    def restore(self, overrides: Mapping[ModelId, Mapping[str, Any]], counter: int) -> int | None:
        """Only while the counter is still ``counter`` and the store still unfilled (WATCH): a change made since
        the record was read would otherwise be overwritten by the older read."""
        with self._client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self._version, self._restored)  # type: ignore[no-untyped-call]  # (redis-py leaves it untyped)
                now = int(cast(bytes | None, pipe.get(self._version)) or 0)
                if pipe.get(self._restored) is not None or now != counter:
                    return None
                pipe.multi()
                pipe.delete(self._hash)
                if overrides:
                    pipe.hset(self._hash, mapping={m: _encoded(f) for m, f in overrides.items()})
                pipe.set(self._restored, "1")
                pipe.incr(self._version)
                return int(pipe.execute()[-1])
            except WatchError:
                return None

    def _change(self, change: Any) -> int:
        pipe = self._client.pipeline(transaction=True)
        change(pipe)
        pipe.incr(self._version)
        return int(pipe.execute()[-1])


def _encoded(fields: Mapping[str, Any]) -> str:
    return json.dumps(dict(fields), sort_keys=True)
