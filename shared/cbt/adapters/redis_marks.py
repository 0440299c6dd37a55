"""Small durable-enough markers in Redis (e.g. the last scheduled run enqueued per model)."""

from __future__ import annotations

from redis import Redis


class RedisMarks:
    def __init__(self, client: Redis, prefix: str) -> None:
        self.client = client
        self.prefix = f"{prefix}mark:"

    def get(self, name: str) -> int | None:
        value = self.client.get(self.prefix + name)
        return None if value is None else int(value)  # type: ignore[arg-type]  # sync client: bytes, not Awaitable

    def put(self, name: str, value: int) -> None:
        self.client.set(self.prefix + name, value)
