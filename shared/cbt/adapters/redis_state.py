"""The hot state in Redis: coverage index, invalidation sequences, bounds cache, task ledger and leases.

Implements the ports of ``cbt.state.ports`` with the same contract as ``tests.twins.memory_state`` (one contract
test suite runs against both). The invalidation bookkeeping — sequence, log of marks, floor, version, fail-closed
rules — follows ``cbt.scheduling.protocol``; the Lua below is that module's rules, made atomic.
Every check-and-write is one Lua script, so it is atomic and costs one round trip; multi-model reads are one
round trip too. Everything lives under ``prefix`` (``{m}`` is a model id, ``{n}`` a lease name)::

    {prefix}cov:{m}          zset  member "start:end", score start   merged half-open ranges
    {prefix}seq:{m}          int   invalidation sequence: the highest epoch applied (missing = 0)
    {prefix}inv:{m}          zset  member "epoch:start:end", score epoch  marks applied, the latest ``keep``
    {prefix}invfloor:{m}     int   floor of that log (missing = 0): marks at or below it may be forgotten
    {prefix}rebuilt:{m}      int   sequence the last rebuild read: epochs at or below it are reflected
    {prefix}ver:{m}          int   bumped by every write to the model (a rebuild's fence)
    {prefix}rerun:{m}        zset  member "start:end", score start   tasks invalidated and not run again yet
    {prefix}generation       str   random id of this Redis's life, created when missing (a rebuild's fence)
    {prefix}index-built      int   unix time the index was last rebuilt from the admin tables (missing = untrusted)
    {prefix}scheduled-fired  hash  scheduled model -> latest fire time it ran for successfully
    {prefix}fired:{m}        zset  the latest 1000 fire times a scheduled model ran for successfully
    {prefix}bounds           hash  model -> {"min": int, "max": int}
    {prefix}ledger:{m}       zset  member task id, score deadline_ms
    {prefix}ledger-task:{m}  hash  task id -> {"range": [start, end] | null, "deadline_ms": int}
    {prefix}lease:{n}        str   owner, with a PX expiry
    {prefix}lease-token:{n}  int   last fencing token handed out for that name
    {prefix}failed:{m}       hash  task id -> its ``task-failed`` (the newest ``KEEP_FAILURES``)
    {prefix}skipped          hash  model -> ranges an operator skipped, JSON [[start, end], ...]

Positions travel through Lua as doubles and are formatted with ``%d``: exact up to 2**53. A multi-model
invalidation touches several keys in one script, which needs a single Redis (not Redis Cluster).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, cast

from redis import Redis
from redis.client import Pipeline
from redis.commands.core import Script

from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.state import RawBounds
from cbt.state.ports import DEFAULT_KEEP_INVALIDATIONS, KEEP_FAILURES, Fence, InFlightTask

PIPELINE_CHUNK = 1000
"""Calls per pipelined round trip when a batch is claimed or extended (bounded replies, a bounded blocked loop)."""
_LUA_RANGES = """
local function fmt(n) return string.format('%d', n) end
local function parse(m)
  local s, e = string.match(m, '(-?%d+):(-?%d+)$')
  return tonumber(s), tonumber(e)
end
-- members of zset `key` with start <= `hi` (a score bound string), highest start first, while keep(end) holds
local function collect(key, hi, keep)
  local out, offset = {}, 0
  while true do
    local batch = redis.call('ZREVRANGEBYSCORE', key, hi, '-inf', 'LIMIT', offset, 64)
    for _, m in ipairs(batch) do
      local s, e = parse(m)
      if not keep(e) then return out end
      out[#out + 1] = {m, s, e}
    end
    if #batch < 64 then return out end
    offset = offset + 64
  end
end
local function add_range(key, s, e)
  for _, r in ipairs(collect(key, fmt(e), function(re) return re >= s end)) do
    redis.call('ZREM', key, r[1])
    if r[2] < s then s = r[2] end
    if r[3] > e then e = r[3] end
  end
  redis.call('ZADD', key, fmt(s), fmt(s) .. ':' .. fmt(e))
end
-- whether the merged ranges in zset `key` hold all of [s, e)
local function covers(key, s, e)
  local r = redis.call('ZREVRANGEBYSCORE', key, fmt(s), '-inf', 'LIMIT', 0, 1)[1]
  if not r then return false end
  local _, re = parse(r)
  return re >= e
end
local function remove_range(key, s, e)
  for _, r in ipairs(collect(key, '(' .. fmt(e), function(re) return re > s end)) do
    redis.call('ZREM', key, r[1])
    if r[2] < s then redis.call('ZADD', key, fmt(r[2]), fmt(r[2]) .. ':' .. fmt(s)) end
    if r[3] > e then redis.call('ZADD', key, fmt(e), fmt(e) .. ':' .. fmt(r[3])) end
  end
end
"""

# KEYS: cov, seq, inv, floor, ver, rerun[, lease, lease token]. ARGV: start, end, observed_seq[, owner, token].
# Adds the live part of [start, end) (cbt.scheduling.protocol.accepted_part) and drops the re-runs now covered;
# returns 1 when all of it was added.
_RECORD_COMPLETED = (
    _LUA_RANGES
    + """
if KEYS[7] and (redis.call('GET', KEYS[7]) ~= ARGV[4] or redis.call('GET', KEYS[8]) ~= ARGV[5]) then return 0 end
local s, e, observed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
local floor = tonumber(redis.call('GET', KEYS[4]) or '0')
if observed > seq or observed < floor then return 0 end
local parts = {{s, e}}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[3], '+inf')) do
  local hs, he = parse(m)
  local kept = {}
  for _, p in ipairs(parts) do
    if he <= p[1] or hs >= p[2] then kept[#kept + 1] = p
    else
      if p[1] < hs then kept[#kept + 1] = {p[1], hs} end
      if he < p[2] then kept[#kept + 1] = {he, p[2]} end
    end
  end
  parts = kept
end
for _, p in ipairs(parts) do add_range(KEYS[1], p[1], p[2]) end
if #parts > 0 then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', '(' .. fmt(e))) do
    local rs, re = parse(m)
    if re > s and covers(KEYS[1], rs, re) then redis.call('ZREM', KEYS[6], m) end
  end
end
redis.call('INCR', KEYS[5])
if #parts == 1 and parts[1][1] == s and parts[1][2] == e then return 1 end
return 0
"""
)

# KEYS: cov, seq, inv, floor, ver, rebuilt, rerun per model. ARGV: keep, epoch, then per model: n, start1, end1, ...
# A model that already reflects the epoch (logged, or at or below what the last rebuild read) is skipped:
# cbt.scheduling.protocol.is_applied.
_APPLY_INVALIDATION = (
    _LUA_RANGES
    + """
local keep, epoch, argi = tonumber(ARGV[1]), tonumber(ARGV[2]), 3
for k = 1, #KEYS, 7 do
  local n = tonumber(ARGV[argi])
  local floor = tonumber(redis.call('GET', KEYS[k + 3]) or '0')
  local rebuilt = tonumber(redis.call('GET', KEYS[k + 5]) or '0')
  if epoch > rebuilt and redis.call('ZCOUNT', KEYS[k + 2], epoch, epoch) == 0 then
    if epoch > tonumber(redis.call('GET', KEYS[k + 1]) or '0') then redis.call('SET', KEYS[k + 1], epoch) end
    for i = 1, n do
      local s, e = tonumber(ARGV[argi + 2 * i - 1]), tonumber(ARGV[argi + 2 * i])
      if s < e then
        remove_range(KEYS[k], s, e)
        redis.call('ZADD', KEYS[k + 2], epoch, fmt(epoch) .. ':' .. fmt(s) .. ':' .. fmt(e))
        redis.call('ZADD', KEYS[k + 6], s, fmt(s) .. ':' .. fmt(e))
      end
    end
    local extra = redis.call('ZCARD', KEYS[k + 2]) - keep
    if extra > 0 then
      local dropped = redis.call('ZRANGE', KEYS[k + 2], 0, extra - 1, 'WITHSCORES')
      local top = tonumber(dropped[#dropped])
      redis.call('ZREMRANGEBYRANK', KEYS[k + 2], 0, extra - 1)
      if top > floor then redis.call('SET', KEYS[k + 3], top) end
    end
    redis.call('INCR', KEYS[k + 4])
  end
  argi = argi + 1 + 2 * n
end
return 0
"""
)

# KEYS: generation. ARGV: a fresh random id, kept only when none exists. Returns the generation.
_GENERATION = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
"""

# KEYS: generation, then ver per model. ARGV: a fresh random id. Returns "generation:version" per model.
_VERSIONS = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
local gen, out = redis.call('GET', KEYS[1]), {}
for k = 2, #KEYS do out[#out + 1] = gen .. ':' .. (redis.call('GET', KEYS[k]) or '0') end
return out
"""

# KEYS: cov, seq, inv, floor, ver, rebuilt, rerun, generation. ARGV: expected version, seq, n, then n coverage
# ranges start1, end1, ..., then re-runs start1, end1, ... Returns 1 when done.
_REPLACE = """
if (redis.call('GET', KEYS[8]) or '') .. ':' .. (redis.call('GET', KEYS[5]) or '0') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[7])
local n = tonumber(ARGV[3])
for i = 4, 3 + 2 * n, 2 do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1]) end
for i = 4 + 2 * n, #ARGV, 2 do redis.call('ZADD', KEYS[7], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1]) end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[4], ARGV[2])
redis.call('SET', KEYS[6], ARGV[2])
redis.call('INCR', KEYS[5])
return 1
"""

# KEYS: one zset per model. Returns each zset's members by score: one round trip and one reply for thousands of
# models (a transaction of one ZRANGE per model costs the client a command and a reply each).
_READ_ZSETS = """
local out = {}
for k = 1, #KEYS do out[k] = redis.call('ZRANGE', KEYS[k], 0, -1) end
return out
"""

# KEYS: scheduled-fired, fired:{m}. ARGV: model, fire time. Keeps the latest in the hash, the latest 1000 in the zset.
_RECORD_FIRE = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current or tonumber(current) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -1001)
return 0
"""

# KEYS: index-built, generation. ARGV: built_at, expected generation. Returns 1 when marked.
_MARK_BUILT = """
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""

# KEYS: ledger zset, task hash. ARGV: deadline_ms, task id, task JSON. Returns 1 when claimed.
_CLAIM = """
if redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
"""

# KEYS: ledger zset, task hash. ARGV: deadline_ms, task id, task JSON. Only a task still claimed is moved.
_EXTEND = """
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
"""

# KEYS: ledger zset, task hash per model. ARGV: now_ms. Returns per model the live tasks' JSON, by deadline.
_IN_FLIGHT = """
local out = {}
for k = 1, #KEYS, 2 do
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', '(' .. ARGV[1])) do
    redis.call('HDEL', KEYS[k + 1], id)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', '(' .. ARGV[1])
  local live = redis.call('ZRANGE', KEYS[k], 0, -1)
  out[#out + 1] = #live > 0 and redis.call('HMGET', KEYS[k + 1], unpack(live)) or {}
end
return out
"""

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


def _text(value: bytes | str) -> str:
    """A reply as text, whether or not the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else value


def _parse_range(member: bytes | str) -> Range:
    start, end = _text(member).split(":")
    return (int(start), int(end))


class RedisCoverage:
    """``CoverageReader`` and ``CoverageWriter``: merged ranges per model, completion checked against invalidations."""

    def __init__(self, client: Redis, prefix: str, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> None:
        self._client = client
        self._prefix = prefix
        self._keep = keep_invalidations
        self._generation_key = f"{prefix}generation"
        self._fired_key = f"{prefix}scheduled-fired"
        self._record_fire = client.register_script(_RECORD_FIRE)
        self._record = client.register_script(_RECORD_COMPLETED)
        self._invalidate = client.register_script(_APPLY_INVALIDATION)
        self._generation = client.register_script(_GENERATION)
        self._versions = client.register_script(_VERSIONS)
        self._replace = client.register_script(_REPLACE)
        self._mark_built = client.register_script(_MARK_BUILT)
        self._read_zsets = client.register_script(_READ_ZSETS)

    def _keys(self, model: ModelId) -> list[str]:
        """The model's coverage, sequence, invalidation log, log floor, version, rebuilt-at and re-run keys, in the
        scripts' order."""
        kinds = ("cov", "seq", "inv", "invfloor", "ver", "rebuilt", "rerun")
        return [f"{self._prefix}{kind}:{model}" for kind in kinds]

    def is_built(self) -> bool:
        return bool(self._client.exists(f"{self._prefix}index-built"))

    def generation(self) -> str:
        return _text(self._generation(keys=[self._generation_key], args=[uuid.uuid4().hex]))

    def mark_built(self, built_at: int, generation: str) -> bool:
        keys = [f"{self._prefix}index-built", self._generation_key]
        return bool(self._mark_built(keys=keys, args=[built_at, generation]))

    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        ordered = list(models)
        if not ordered:
            return set()
        fired = cast("list[bytes | str | None]", self._client.hmget(self._fired_key, ordered))
        return {model for model, fire in zip(ordered, fired, strict=True) if fire is not None}

    def has_fired(self, model: ModelId, fire_unix: int) -> bool:
        return self._client.zscore(f"{self._prefix}fired:{model}", fire_unix) is not None

    def record_scheduled_run(self, model: ModelId, fire_unix: int) -> None:
        self._record_fire(keys=[self._fired_key, f"{self._prefix}fired:{model}"], args=[model, fire_unix])

    def coverage(self, model: ModelId) -> Coverage:
        return self.coverages([model])[model]

    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]:
        """Every requested model's coverage (empty when none), read in one transaction."""
        return self._ranges(models, 0)

    def reruns(self, models: Collection[ModelId]) -> dict[ModelId, tuple[Range, ...]]:
        return self._ranges(models, 6)

    def _ranges(self, models: Collection[ModelId], key: int) -> dict[ModelId, tuple[Range, ...]]:
        """The ranges in each model's zset number ``key`` of ``_keys``, by start, read atomically (one script)."""
        ordered = list(models)
        if not ordered:
            return {}
        replies = self._read_zsets(keys=[self._keys(m)[key] for m in ordered])
        return {m: tuple(_parse_range(x) for x in reply) for m, reply in zip(ordered, replies, strict=True)}

    def invalidation_seq(self, model: ModelId) -> int:
        value = cast("bytes | str | None", self._client.get(self._keys(model)[1]))
        return 0 if value is None else int(value)

    def record_completed(self, model: ModelId, done: Range, observed_seq: int, fence: Fence | None = None) -> bool:
        if done[0] >= done[1]:
            return True
        cov_key, seq_key, inv_key, floor_key, ver_key, _, rerun_key = self._keys(model)
        keys = [cov_key, seq_key, inv_key, floor_key, ver_key, rerun_key]
        args = list[int | str]([done[0], done[1], observed_seq])
        if fence is not None:
            keys += [f"{self._prefix}lease:{fence.lease}", f"{self._prefix}lease-token:{fence.lease}"]
            args += [fence.owner, fence.token]
        return bool(self._record(keys=keys, args=args))

    def apply_invalidation(self, epoch: int, ranges: Mapping[ModelId, Sequence[Range]]) -> None:
        """Every model's part in one script: all of them or none."""
        if not ranges:
            return
        keys: list[str] = []
        args: list[int] = [self._keep, epoch]
        for model, model_ranges in ranges.items():
            keys.extend(self._keys(model))
            args.append(len(model_ranges))
            args.extend(position for r in model_ranges for position in r)
        self._invalidate(keys=keys, args=args)

    def versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        ordered = list(models)
        keys = [self._generation_key, *(self._keys(m)[4] for m in ordered)]
        replies = self._versions(keys=keys, args=[uuid.uuid4().hex])
        return {m: _text(v) for m, v in zip(ordered, replies, strict=True)}

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int, version: str,
                         reruns: Sequence[Range] = ()) -> bool:
        """Overwrite one model's coverage, sequence and re-runs if its version is unchanged; the log restarts at
        ``seq``."""
        merged = cov.merge(coverage)
        args: list[int | str] = [version, seq, len(merged)]
        args.extend(position for r in merged for position in r)
        args.extend(position for r in reruns if r[0] < r[1] for position in r)
        return bool(self._replace(keys=[*self._keys(model), self._generation_key], args=args))


class RedisBounds:
    """``BoundsStore``: one hash of model id to raw bounds."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}bounds"

    def bounds(self, models: Collection[ModelId]) -> dict[ModelId, RawBounds]:
        """Stored bounds of the given models; models never stored are missing (not scanned yet)."""
        ordered = list(models)
        if not ordered:
            return {}
        values = cast("list[bytes | str | None]", self._client.hmget(self._key, ordered))
        return {m: _decode_bounds(v) for m, v in zip(ordered, values, strict=True) if v is not None}

    def put_bounds(self, model: ModelId, bounds: RawBounds) -> RawBounds | None:
        """Store new bounds and return the previous ones, read and written in one transaction."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._key, model)
        pipe.hset(self._key, model, json.dumps({"min": bounds.min, "max": bounds.max}))
        previous, _ = pipe.execute()
        return None if previous is None else _decode_bounds(previous)


def _decode_bounds(value: bytes | str) -> RawBounds:
    data = json.loads(value)
    return RawBounds(min=int(data["min"]), max=int(data["max"]))


class RedisTaskLedger:
    """``TaskLedger``: per model, task ids by deadline plus each task's range.

    A claim is refused while the same id is registered; an entry past its deadline stays registered until
    ``in_flight`` drops it (the planner reads in-flight tasks before it claims new ones).
    """

    def __init__(self, client: Redis, prefix: str) -> None:
        self._prefix = prefix
        self._client = client
        self._claim = client.register_script(_CLAIM)
        self._extend = client.register_script(_EXTEND)
        self._in_flight = client.register_script(_IN_FLIGHT)

    def _keys(self, model: ModelId) -> list[str]:
        return [f"{self._prefix}ledger:{model}", f"{self._prefix}ledger-task:{model}"]

    def claim(self, model: ModelId, task: InFlightTask) -> bool:
        return bool(self._claim(keys=self._keys(model), args=[task.deadline_ms, task.task_id, _encode_task(task)]))

    def extend(self, model: ModelId, task: InFlightTask) -> bool:
        return bool(self._extend(keys=self._keys(model), args=[task.deadline_ms, task.task_id, _encode_task(task)]))

    def claim_all(self, claims: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        return self._each(self._claim, claims)

    def extend_all(self, extensions: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        return self._each(self._extend, extensions)

    def _each(self, script: Script, calls: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        """``script`` once per call, pipelined: a round trip per ``PIPELINE_CHUNK`` calls, not per call."""
        replies: list[bool] = []
        for at in range(0, len(calls), PIPELINE_CHUNK):
            pipe = self._client.pipeline(transaction=False)
            for model, task in calls[at:at + PIPELINE_CHUNK]:
                script(keys=self._keys(model), args=[task.deadline_ms, task.task_id, _encode_task(task)], client=pipe)
            replies += [bool(reply) for reply in pipe.execute()]
        return replies

    def release(self, model: ModelId, task_id: str) -> None:
        ledger_key, task_key = self._keys(model)
        pipe = self._client.pipeline(transaction=True)
        pipe.zrem(ledger_key, task_id)
        pipe.hdel(task_key, task_id)
        pipe.execute()

    def in_flight(self, models: Collection[ModelId], now_ms: int) -> dict[ModelId, tuple[InFlightTask, ...]]:
        """Every requested model's live tasks, by deadline then id; those with ``deadline_ms < now_ms`` are dropped."""
        ordered = list(models)
        if not ordered:
            return {}
        keys = [key for model in ordered for key in self._keys(model)]
        replies = self._in_flight(keys=keys, args=[now_ms])
        return {m: _decode_tasks(reply) for m, reply in zip(ordered, replies, strict=True)}


def _encode_task(task: InFlightTask) -> str:
    return json.dumps({"task_id": task.task_id, "range": task.range, "deadline_ms": task.deadline_ms})


def _decode_tasks(bodies: Sequence[bytes | str | None]) -> tuple[InFlightTask, ...]:
    """Tasks from their JSON bodies; a body missing next to its id (never written that way) is skipped."""
    return tuple(_decode_task(json.loads(body)) for body in bodies if body is not None)


def _decode_task(data: Mapping[str, Any]) -> InFlightTask:
    r = data["range"]
    task_range = None if r is None else (int(r[0]), int(r[1]))
    return InFlightTask(task_id=str(data["task_id"]), range=task_range, deadline_ms=int(data["deadline_ms"]))


class RedisLeases:
    """``Leases``: the owner under a key with a PX expiry, fencing tokens from a per-name counter."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def _key(self, name: str) -> str:
        return f"{self._prefix}lease:{name}"

    def acquire(self, name: str, owner: str, ttl_ms: int) -> int | None:
        """A fencing token (strictly increasing per name) when acquired, else None (held, even by ``owner``)."""
        token = self._acquire(keys=[self._key(name), f"{self._prefix}lease-token:{name}"], args=[owner, ttl_ms])
        return None if token is None else int(token)

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool:
        return bool(self._renew(keys=[self._key(name)], args=[owner, ttl_ms]))

    def release(self, name: str, owner: str) -> None:
        self._release(keys=[self._key(name)], args=[owner])


class RedisFailures:
    """``failed:{model}``: a hash of task id → its encoded ``task-failed``; trimmed to the newest ``KEEP_FAILURES``."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    def record_failure(self, failure: TaskFailed) -> None:
        key = self._key(failure.model)
        self._client.hset(key, failure.task_id, failure.model_dump_json())
        if cast(int, self._client.hlen(key)) > KEEP_FAILURES:
            oldest = self._decoded(key)[KEEP_FAILURES:]
            self._client.hdel(key, *[f.task_id for f in oldest])

    def clear_failure(self, model_id: ModelId, task_id: str) -> None:
        self._client.hdel(self._key(model_id), task_id)

    def recent_failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]:
        return {model_id: failures[:KEEP_FAILURES] for model_id in model_ids
                if (failures := self._decoded(self._key(model_id)))}

    def _decoded(self, key: str) -> list[TaskFailed]:
        """Newest first; an entry that does not decode (written by something else) is left out."""
        failures: list[TaskFailed] = []
        for body in cast(dict[bytes, bytes], self._client.hgetall(key)).values():
            try:
                failures.append(TaskFailed.model_validate_json(body))
            except ValueError:
                continue
        return sorted(failures, key=lambda f: f.failed_at_ms, reverse=True)

    def _key(self, model_id: ModelId) -> str:
        return f"{self._prefix}failed:{model_id}"


class RedisSkips:
    """``skipped``: a hash of model id → its skipped ranges as JSON ``[[start, end], …]``; each change is a
    read-modify-write under WATCH, so concurrent api replicas never lose one another's changes."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}skipped"

    def skipped(self, model_ids: Collection[ModelId]) -> dict[ModelId, Coverage]:
        wanted = list(model_ids)
        if not wanted:
            return {}
        values = cast(list[bytes | None], self._client.hmget(self._key, wanted))
        return {m: ranges for m, value in zip(wanted, values, strict=True) if (ranges := _decode_skipped(value))}

    def skip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.add(ranges, r))

    def unskip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.remove(ranges, r))

    def _change(self, model_id: ModelId, change: Callable[[Coverage], Coverage]) -> Coverage:
        after: Coverage = cov.EMPTY

        def apply(pipe: Pipeline) -> None:
            nonlocal after
            after = change(_decode_skipped(cast(bytes | None, pipe.hget(self._key, model_id))))
            pipe.multi()
            if after:
                pipe.hset(self._key, model_id, json.dumps([list(x) for x in after]))
            else:
                pipe.hdel(self._key, model_id)

        self._client.transaction(apply, self._key)
        return after


def _decode_skipped(value: bytes | None) -> Coverage:
    """The ranges of one hash value; a value that does not decode (written by something else) is none."""
    try:
        return cov.merge((int(a), int(b)) for a, b in json.loads(value or "[]"))
    except (ValueError, TypeError):
        return cov.EMPTY


class RedisState:
    """The Redis ports over one client and key prefix, like ``MemoryState``."""

    def __init__(self, client: Redis, prefix: str, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> None:
        self.coverage = RedisCoverage(client, prefix, keep_invalidations)
        self.bounds = RedisBounds(client, prefix)
        self.ledger = RedisTaskLedger(client, prefix)
        self.leases = RedisLeases(client, prefix)
        self.failures = RedisFailures(client, prefix)
        self.skips = RedisSkips(client, prefix)
