"""The hot state in Redis: every store over one client and key prefix, like ``tests.twins.memory_state``.

Each kind of store is a module of ``cbt.adapters.redis_stores`` that implements its ports of ``cbt.state.ports``
with the same contract as its in-memory twin (one contract test suite runs against both). Everything lives under
``prefix`` (``{m}`` is a model id, ``{n}`` a lease name)::

    coverage   {prefix}cov:{m}, seq:{m}, inv:{m}, invfloor:{m}, rebuilt:{m}, ver:{m}, rerun:{m}   the coverage index
               {prefix}generation, index-built                     and its rebuild's fences
               {prefix}scheduled-fired, fired:{m}                  the scheduled runs that succeeded
    bounds     {prefix}bounds                                      raw bounds per external model
    ledger     {prefix}ledger:{m}, ledger-task:{m}                 tasks in flight, by deadline
    leases     {prefix}lease:{n}, lease-token:{n}                  named leases and their fencing tokens
    failures   {prefix}failed:{m}                                  the newest task failures per model
    skips      {prefix}skipped                                     ranges an operator skipped
    holds      {prefix}check-held                                  intervals a failed check holds
    overrides  {prefix}overrides, overrides-version, overrides-restored   live config overrides

Each module's docstring describes its keys' values.
"""

from __future__ import annotations

from redis import Redis

from cbt.adapters.redis_stores.bounds import RedisBounds
from cbt.adapters.redis_stores.coverage import RedisCoverage
from cbt.adapters.redis_stores.failures import RedisFailures
from cbt.adapters.redis_stores.holds import RedisHolds
from cbt.adapters.redis_stores.leases import RedisLeases
from cbt.adapters.redis_stores.ledger import RedisTaskLedger
from cbt.adapters.redis_stores.overrides import RedisOverrides
from cbt.adapters.redis_stores.skips import RedisSkips
from cbt.state.ports import DEFAULT_KEEP_INVALIDATIONS


class RedisState:
    """The Redis ports over one client and key prefix, like ``MemoryState``."""

    def __init__(self, client: Redis, prefix: str, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> None:
        self.coverage = RedisCoverage(client, prefix, keep_invalidations)
        self.bounds = RedisBounds(client, prefix)
        self.ledger = RedisTaskLedger(client, prefix)
        self.leases = RedisLeases(client, prefix)
        self.failures = RedisFailures(client, prefix)
        self.skips = RedisSkips(client, prefix)
        self.holds = RedisHolds(client, prefix)
        self.overrides = RedisOverrides(client, prefix)
