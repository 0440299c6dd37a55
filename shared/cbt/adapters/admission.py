"""Admission control's permits in Redis: one queue per Spark cluster, shared by every process and every deployment
that runs statements on it (``cbt.scheduling.admission`` has the rules, ``cbt.concurrency.admission`` the driver).

The keys are named after the cluster (``cluster_of(spark.remote)``: ``host:port``), not under the installation's
``redis.key_prefix``: two deployments on one Spark share its limit as long as they share a Redis. The braces make
them one Redis Cluster slot (each script touches all of them)::

    cbt-admission:{host:port}:holders  zset  member -> when its permit expires (ms, Redis's clock)
    cbt-admission:{host:port}:queue    zset  member -> order score (priority class band + ms it entered the queue)
    cbt-admission:{host:port}:alive    zset  member -> when its place in the queue expires unless it polls again
    cbt-admission:{host:port}:limit    str   the limit the latest attempt applied (status only)

Every check-and-write is one Lua script on Redis's own clock (``TIME``; Redis 5 or later), so processes on hosts
whose clocks differ agree on expiry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from redis import Redis

from cbt.concurrency.admission import SparkAdmission
from cbt.config.settings import Config
from cbt.scheduling.admission import AdmissionStatus, auto_limit, cluster_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("cbt.admission")

_CLOCK = """
local function fmt(n) return string.format('%d', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# KEYS: holders, queue, alive, limit. Forget expired permits and waiters that stopped polling.
_PURGE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do redis.call('ZREM', KEYS[2], m) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
"""
# ARGV: member, order score, ttl_ms, waiter_ttl_ms, limit. Returns {1, 0} when granted (or already held: renewed),
# else {0, rank}: cbt.scheduling.admission.attempt.
_ATTEMPT = _CLOCK + _PURGE + """
local member, ttl, waiter_ttl, limit = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('SET', KEYS[4], ARGV[5])
if redis.call('ZSCORE', KEYS[1], member) then
  redis.call('ZADD', KEYS[1], fmt(now + ttl), member)
  return {1, 0}
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], member)
redis.call('ZADD', KEYS[3], fmt(now + waiter_ttl), member)
local rank = redis.call('ZRANK', KEYS[2], member)
if rank < limit - redis.call('ZCARD', KEYS[1]) then
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
  redis.call('ZADD', KEYS[1], fmt(now + ttl), member)
  return {1, 0}
end
return {0, rank}
"""
# KEYS: holders. ARGV: ttl_ms, add_missing (0/1), member... Returns the members whose permit had expired.
_RENEW = _CLOCK + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl, add, lost = tonumber(ARGV[1]), ARGV[2] == '1', {}
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then redis.call('ZADD', KEYS[1], fmt(now + ttl), ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
    if add then redis.call('ZADD', KEYS[1], fmt(now + ttl), ARGV[i]) end
  end
end
return lost
"""
# KEYS: holders, queue, alive, limit. Returns {limit or false, executing, waiting}; read-only.
_STATUS = _CLOCK + """
return {redis.call('GET', KEYS[4]), redis.call('ZCOUNT', KEYS[1], '(' .. fmt(now), '+inf'),
        redis.call('ZCOUNT', KEYS[3], '(' .. fmt(now), '+inf')}
"""


def admission_keys(cluster: str) -> list[str]:
    """The four keys of ``cluster``'s admission (``host:port``), in the scripts' order."""
    base = f"cbt-admission:{{{cluster}}}"
    return [f"{base}:holders", f"{base}:queue", f"{base}:alive", f"{base}:limit"]


class RedisPermitStore:
    """Implements ``cbt.concurrency.admission.PermitStore`` for one cluster (``host:port``)."""

    def __init__(self, client: Redis, cluster: str) -> None:
        self.client = client
        self.cluster = cluster
        self._keys = admission_keys(cluster)
        self._attempt = client.register_script(_ATTEMPT)
        self._renew = client.register_script(_RENEW)
        self._status = client.register_script(_STATUS)

    def attempt(self, member: str, score: int, ttl_ms: int, waiter_ttl_ms: int, limit: int) -> tuple[bool, int]:
        is_granted, rank = cast(list[int], self._attempt(self._keys, [member, score, ttl_ms, waiter_ttl_ms, limit]))
        return bool(is_granted), int(rank)

    def renew(self, members: list[str], ttl_ms: int, add_missing: bool = False) -> list[str]:
        lost = cast(list[bytes], self._renew(self._keys[:1], [ttl_ms, int(add_missing), *members]))
        return [m.decode() for m in lost]

    def release(self, member: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        for key in self._keys[:3]:
            pipe.zrem(key, member)
        pipe.execute()

    def status(self) -> AdmissionStatus:
        limit, executing, waiting = cast(list[bytes | int | None], self._status(self._keys))
        return AdmissionStatus(None if limit is None else int(cast(bytes, limit)), int(cast(int, executing)),
                               int(cast(int, waiting)))


PARALLELISM_QUERY = "SELECT max(p) + 1 AS n FROM (SELECT spark_partition_id() AS p FROM range(0, 1000))"
"""How many partitions a plain scan gets: the cluster's default parallelism (its cores, for ``local[*]`` and a
standalone cluster, unless ``spark.default.parallelism`` says otherwise)."""


def measured_parallelism(spark: SparkSession) -> int:
    """What the cluster offers, asked with one tiny statement (itself outside admission control)."""
    return int(spark.sql(PARALLELISM_QUERY).collect()[0]["n"])


def admission_from_config(config: Config, client: Redis, owner: str,
                          spark: Callable[[], SparkSession] | None = None) -> SparkAdmission | None:
    """The process's admission to ``spark.remote``'s cluster, or ``None`` when ``spark.max_concurrent_statements``
    is ``off`` or there is no remote (an embedded session). With ``auto``, the limit is measured on first use
    through ``spark`` (a function giving a session)."""
    remote, wanted = config.spark.remote, config.spark.max_concurrent_statements
    if remote is None or wanted == "off":
        return None
    limit: int | Callable[[], int]
    if isinstance(wanted, int):
        limit = wanted
    elif spark is None:
        raise ValueError("spark.max_concurrent_statements: auto needs a Spark session to measure the cluster")
    else:
        session = spark
        limit = lambda: auto_limit(measured_parallelism(session()))  # noqa: E731 (measured on first use)
    return SparkAdmission(RedisPermitStore(client, cluster_of(remote)), limit, owner)


def read_status(config: Config, client: Redis) -> AdmissionStatus | None:
    """The cluster's admission now (for ``/readyz`` and ``cbt dev status``); ``None`` when it is off."""
    remote = config.spark.remote
    if remote is None or config.spark.max_concurrent_statements == "off":
        return None
    return RedisPermitStore(client, cluster_of(remote)).status()
