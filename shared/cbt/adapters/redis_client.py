"""The Redis client every process builds from the config: the services (``cbt.adapters.runtime`` re-exports it) and
the command line, which must not import the Kafka and Spark clients ``runtime`` brings with it."""

from __future__ import annotations

from redis import Redis

from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config

REDIS_TIMEOUT_S = 5.0
"""A Redis call that gets no answer fails after this long instead of hanging the process (well below a task
lease's renewal period, so a worker notices a lost Redis before its lease could expire unnoticed)."""


def redis_client(config: Config) -> Redis:
    return Redis.from_url(config.redis.url, health_check_interval=30, socket_timeout=REDIS_TIMEOUT_S,
                          socket_connect_timeout=REDIS_TIMEOUT_S)


def redis_state(config: Config) -> RedisState:
    return RedisState(redis_client(config), config.redis.key_prefix)
