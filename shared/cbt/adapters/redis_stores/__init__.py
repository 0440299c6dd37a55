"""The Redis stores of the hot state, one module per kind: ``coverage`` (the coverage index and its invalidation
bookkeeping), ``bounds``, ``ledger`` (tasks in flight), ``leases``, ``failures`` (the recent ones) and ``skips``.
``cbt.adapters.redis_state.RedisState`` builds them all over one client and key prefix."""
