"""Redis behaves as the dedup keys and leases rely on: SET NX with a TTL."""

from __future__ import annotations

import time

import pytest
from redis import Redis

pytestmark = pytest.mark.integration


def test_set_nx_claims_once_until_the_ttl_expires(redis_client: Redis, redis_prefix: str) -> None:
    key = redis_prefix + "task:analytics.t:100:60"
    assert redis_client.set(key, "owner-a", nx=True, px=300) is True
    assert redis_client.set(key, "owner-b", nx=True, px=300) is None
    assert redis_client.get(key) == b"owner-a"
    assert 0 < int(redis_client.pttl(key)) <= 300
    time.sleep(0.4)
    assert redis_client.set(key, "owner-b", nx=True, px=300) is True
    assert redis_client.get(key) == b"owner-b"


def test_append_only_file_is_on(redis_client: Redis) -> None:
    """(Read through INFO: the cbt/redis image's user may not run CONFIG, an admin command.)"""
    assert redis_client.info("persistence")["aof_enabled"] == 1
