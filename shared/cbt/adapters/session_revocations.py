"""Signed-out browser sessions, shared by every api replica: a Redis sorted set ``{prefix}api-revoked-sessions`` of
session nonces scored by when each session would have expired anyway (then it is forgotten). The api reads it every
few seconds (``cbt.api.access.auth.Revocations``), so a session signed out on one replica ends on all of them."""

from __future__ import annotations

from typing import cast

from redis import Redis


class RedisSessionRevocations:
    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}api-revoked-sessions"

    def add(self, nonce: str, until_unix: int) -> None:
        self._client.zadd(self._key, {nonce: until_unix})

    def current(self, now_unix: int) -> dict[str, int]:
        pipe = self._client.pipeline()
        pipe.zremrangebyscore(self._key, "-inf", f"({now_unix}")
        pipe.zrange(self._key, 0, -1, withscores=True)
        _, members = pipe.execute()
        pairs = cast("list[tuple[bytes | str, float]]", members)
        return {(m.decode() if isinstance(m, bytes) else m): int(score) for m, score in pairs}
