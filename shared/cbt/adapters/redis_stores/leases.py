"""Leases in Redis: a named lock with an owner and an expiry, and a fencing token per acquisition.

``RedisLeases`` implements ``Leases`` (``cbt.state.ports``). Keys (``{n}`` is a lease name)::

    {prefix}lease:{n}        str   owner, with a PX expiry
    {prefix}lease-token:{n}  int   last fencing token handed out for that name
"""

from __future__ import annotations

from redis import Redis


def lease_keys(prefix: str, name: str) -> list[str]:
    """The lease's owner key and token counter: what a fenced write (``coverage``) checks, in this order."""
    return [f"{prefix}lease:{name}", f"{prefix}lease-token:{name}"]


# KEYS: lease, token counter. ARGV: owner, ttl_ms. Returns the fencing token, or nil when held.
_ACQUIRE = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return nil end
return redis.call('INCR', KEYS[2])
"""

# KEYS: lease. ARGV: owner, ttl_ms. Returns 1 when renewed.
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS: lease. ARGV: owner.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisLeases:
    """``Leases``: the owner under a key with a PX expiry, fencing tokens from a per-name counter."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def _key(self, name: str) -> str:
        return lease_keys(self._prefix, name)[0]

    def acquire(self, name: str, owner: str, ttl_ms: int) -> int | None:
        """A fencing token (strictly increasing per name) when acquired, else None (held, even by ``owner``)."""
        token = self._acquire(keys=lease_keys(self._prefix, name), args=[owner, ttl_ms])
        return None if token is None else int(token)

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool:
        return bool(self._renew(keys=[self._key(name)], args=[owner, ttl_ms]))

    def release(self, name: str, owner: str) -> None:
        self._release(keys=[self._key(name)], args=[owner])
