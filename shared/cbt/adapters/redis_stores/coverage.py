"""The coverage index in Redis: merged ranges per model, checked against the invalidations applied to it.

``RedisCoverage`` implements ``CoverageReader`` and ``CoverageWriter`` (``cbt.state.ports``). The invalidation
bookkeeping — sequence, log of marks, floor, version, fail-closed rules — follows ``cbt.scheduling.protocol``; the Lua
below is that module's rules, made atomic: every check-and-write is one script (one round trip), and so is every
multi-model read. Keys (``{m}`` is a model id)::

    {prefix}cov:{m}          zset  member "start:end", score start   merged half-open ranges
    {prefix}seq:{m}          int   invalidation sequence: the highest epoch applied (missing = 0)
    {prefix}inv:{m}          zset  member "epoch:start:end", score epoch  marks applied, the latest ``keep``
    {prefix}invfloor:{m}     int   floor of that log (missing = 0): marks at or below it may be forgotten
    {prefix}rebuilt:{m}      int   sequence the last rebuild read: epochs at or below it are reflected
    {prefix}ver:{m}          int   bumped by every write to the model (a rebuild's fence)
    {prefix}rerun:{m}        zset  member "start:end:step", score start   tasks invalidated and not run again yet, as
                                   runs (``cbt.scheduling.task_runs``; "start:end", written before runs: one task)
    {prefix}vcov:{m}         zset  member "start:end:version", score start   which version of the model computed each
                                   covered range (a covered range without one: not known — recorded without a version)
    {prefix}generation       str   random id of this Redis's life, created when missing (a rebuild's fence)
    {prefix}index-built      int   unix time the index was last rebuilt from the admin tables (missing = untrusted)
    {prefix}scheduled-fired  hash  scheduled model -> latest fire time it ran for successfully
    {prefix}fired:{m}        zset  the latest 1000 fire times a scheduled model ran for successfully
    {prefix}deployed-version hash  model -> the version its tasks must carry now (``announce_versions``)

A completion recorded under a ``Fence`` also reads the lease's keys (``leases.lease_keys``). Positions travel through
Lua as doubles and are formatted with ``%d``: exact up to 2**53. A multi-model invalidation touches several keys in
one script, which needs a single Redis (not Redis Cluster).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import cast

from redis import Redis

from cbt.adapters.redis_stores.leases import lease_keys
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.task_runs import TaskRun, all_tasks
from cbt.scheduling.version_pieces import by_version, version_pieces
from cbt.state.ports import DEFAULT_KEEP_INVALIDATIONS, Fence

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
-- a re-run member "start:end:step" (a run of tasks) or "start:end" (one task); a step that is not positive (a
-- member written by hand) is read as one task, so no loop over the run's tasks can stall on it
local function parse_run(m)
  local s, e, step = string.match(m, '^(-?%d+):(-?%d+):?(-?%d*)$')
  s, e, step = tonumber(s), tonumber(e), tonumber(step)
  if not step or step <= 0 then step = e - s end
  return s, e, step
end
local function add_run(key, s, e, step)
  if s < e then redis.call('ZADD', key, fmt(s), fmt(s) .. ':' .. fmt(e) .. ':' .. fmt(step)) end
end
local function remove_range(key, s, e)
  for _, r in ipairs(collect(key, '(' .. fmt(e), function(re) return re > s end)) do
    redis.call('ZREM', key, r[1])
    if r[2] < s then redis.call('ZADD', key, fmt(r[2]), fmt(r[2]) .. ':' .. fmt(s)) end
    if r[3] > e then redis.call('ZADD', key, fmt(e), fmt(e) .. ':' .. fmt(r[3])) end
  end
end
-- version pieces: members "start:end:version" of zset `key`, disjoint, by start
local function parse_piece(m)
  local s, e, v = string.match(m, '^(-?%d+):(-?%d+):(.+)$')
  return tonumber(s), tonumber(e), v
end
local function piece(s, e, v) return fmt(s) .. ':' .. fmt(e) .. ':' .. v end
-- [s, e) no longer computed by any known version
local function remove_piece(key, s, e)
  local found = {}
  local before = redis.call('ZREVRANGEBYSCORE', key, '(' .. fmt(s), '-inf', 'LIMIT', 0, 1)[1]
  if before then found[#found + 1] = before end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, fmt(s), '(' .. fmt(e))) do found[#found + 1] = m end
  for _, m in ipairs(found) do
    local ps, pe, v = parse_piece(m)
    if pe > s then
      redis.call('ZREM', key, m)
      if ps < s then redis.call('ZADD', key, fmt(ps), piece(ps, s, v)) end
      if pe > e then redis.call('ZADD', key, fmt(e), piece(e, pe, v)) end
    end
  end
end
-- [s, e) computed by version v: replaces what was there, joined to the same version's pieces it touches
local function add_piece(key, s, e, v)
  remove_piece(key, s, e)
  local before = redis.call('ZREVRANGEBYSCORE', key, '(' .. fmt(s), '-inf', 'LIMIT', 0, 1)[1]
  if before then
    local bs, be, bv = parse_piece(before)
    if be == s and bv == v then redis.call('ZREM', key, before); s = bs end
  end
  local after = redis.call('ZRANGEBYSCORE', key, fmt(e), fmt(e), 'LIMIT', 0, 1)[1]
  if after then
    local _, ae, av = parse_piece(after)
    if av == v then redis.call('ZREM', key, after); e = ae end
  end
  redis.call('ZADD', key, fmt(s), piece(s, e, v))
end
"""

# KEYS: cov, seq, inv, floor, ver, rerun, vcov[, lease, lease token]. ARGV: start, end, observed_seq, the model's
# version ('': not known)[, owner, token]. Adds the live part of [start, end) (cbt.scheduling.protocol.accepted_part),
# as computed by that version, and drops the re-run tasks now covered (only tasks overlapping [start, end) are looked
# at: a run is split around them); returns 1 when all of it was added.
_RECORD_COMPLETED = (
    _LUA_RANGES
    + """
if KEYS[8] and (redis.call('GET', KEYS[8]) ~= ARGV[5] or redis.call('GET', KEYS[9]) ~= ARGV[6]) then return 0 end
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
for _, p in ipairs(parts) do
  add_range(KEYS[1], p[1], p[2])
  if ARGV[4] ~= '' then add_piece(KEYS[7], p[1], p[2], ARGV[4]) else remove_piece(KEYS[7], p[1], p[2]) end
end
if #parts > 0 then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', '(' .. fmt(e))) do
    local rs, re, step = parse_run(m)
    if re > s then
      local t = rs + math.floor((math.max(s, rs) - rs) / step) * step
      local from, removed = rs, false
      while t < e and t < re do
        local te = math.min(t + step, re)
        if covers(KEYS[1], t, te) then
          if not removed then redis.call('ZREM', KEYS[6], m); removed = true end
          add_run(KEYS[6], from, t, step)
          from = te
        end
        t = t + step
      end
      if removed then add_run(KEYS[6], from, re, step) end
    end
  end
end
redis.call('INCR', KEYS[5])
if #parts == 1 and parts[1][1] == s and parts[1][2] == e then return 1 end
return 0
"""
)

# KEYS: cov, seq, inv, floor, ver, rebuilt, rerun, vcov per model. ARGV: keep, epoch, then per model: n runs of tasks,
# start1, end1, step1, ... (one mark per run: it marks the same positions as its tasks)
# A model that already reflects the epoch (logged, or at or below what the last rebuild read) is skipped:
# cbt.scheduling.protocol.is_applied.
_APPLY_INVALIDATION = (
    _LUA_RANGES
    + """
local keep, epoch, argi = tonumber(ARGV[1]), tonumber(ARGV[2]), 3
for k = 1, #KEYS, 8 do
  local n = tonumber(ARGV[argi])
  local floor = tonumber(redis.call('GET', KEYS[k + 3]) or '0')
  local rebuilt = tonumber(redis.call('GET', KEYS[k + 5]) or '0')
  if epoch > rebuilt and redis.call('ZCOUNT', KEYS[k + 2], epoch, epoch) == 0 then
    if epoch > tonumber(redis.call('GET', KEYS[k + 1]) or '0') then redis.call('SET', KEYS[k + 1], epoch) end
    for i = 1, n do
      local at = argi + 3 * i - 2
      local s, e, step = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
      if step <= 0 then step = e - s end
      if s < e then
        remove_range(KEYS[k], s, e)
        remove_piece(KEYS[k + 7], s, e)
        redis.call('ZADD', KEYS[k + 2], epoch, fmt(epoch) .. ':' .. fmt(s) .. ':' .. fmt(e))
        add_run(KEYS[k + 6], s, e, step)
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
  argi = argi + 1 + 3 * n
end
return 0
"""
)

# KEYS: inv, floor per model. ARGV: the epoch per model. Drops a pruned invalidation's marks and raises the floor to
# its epoch (completions that read an older sequence are then refused: fail closed).
_FORGET_INVALIDATION = """
for k = 1, #KEYS, 2 do
  local epoch = ARGV[(k + 1) / 2]
  redis.call('ZREMRANGEBYSCORE', KEYS[k], epoch, epoch)
  if tonumber(epoch) > tonumber(redis.call('GET', KEYS[k + 1]) or '0') then redis.call('SET', KEYS[k + 1], epoch) end
end
return 0
"""

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

# KEYS: cov, seq, inv, floor, ver, rebuilt, rerun, vcov, generation. ARGV: expected version, seq, n, then n coverage
# ranges start1, end1, ..., then p, p version pieces start1, end1, version1, ..., then re-run runs start1, end1,
# step1, ... Returns 1 when done.
_REPLACE = """
if (redis.call('GET', KEYS[9]) or '') .. ':' .. (redis.call('GET', KEYS[5]) or '0') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[7], KEYS[8])
local n = tonumber(ARGV[3])
for i = 4, 3 + 2 * n, 2 do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1]) end
local p = tonumber(ARGV[4 + 2 * n])
for i = 5 + 2 * n, 4 + 2 * n + 3 * p, 3 do
  redis.call('ZADD', KEYS[8], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1] .. ':' .. ARGV[i + 2])
end
for i = 5 + 2 * n + 3 * p, #ARGV, 3 do
  redis.call('ZADD', KEYS[7], ARGV[i], ARGV[i] .. ':' .. ARGV[i + 1] .. ':' .. ARGV[i + 2])
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[4], ARGV[2])
redis.call('SET', KEYS[6], ARGV[2])
redis.call('INCR', KEYS[5])
return 1
"""

# KEYS: the model's vcov, ver. ARGV: version pieces start1, end1, version1, ... that replace the model's where they lie
# (a build switched to, a rollback: the model's table holds other rows now).
_ADOPT_VERSIONS = (
    _LUA_RANGES
    + """
for i = 1, #ARGV, 3 do add_piece(KEYS[1], tonumber(ARGV[i]), tonumber(ARGV[i + 1]), ARGV[i + 2]) end
redis.call('INCR', KEYS[2])
return 0
"""
)

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


def _text(value: bytes | str) -> str:
    """A reply as text, whether or not the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else value


def _parse_range(member: bytes | str) -> Range:
    start, end = _text(member).split(":")
    return (int(start), int(end))


def _parse_piece(member: bytes | str) -> tuple[int, int, str]:
    start, end, version = _text(member).split(":", 2)
    return (int(start), int(end), version)


def _parse_run(member: bytes | str) -> TaskRun:
    """A re-run member: ``start:end:step``, or ``start:end`` (one task, written before runs); a step that is not
    positive (written by hand) is read as one task, as the scripts read it."""
    parts = [int(p) for p in _text(member).split(":")]
    if len(parts) == 3 and parts[2] > 0:
        return TaskRun(parts[0], parts[1], parts[2])
    return TaskRun.single((parts[0], parts[1]))


class RedisCoverage:
    """``CoverageReader`` and ``CoverageWriter``: merged ranges per model, completion checked against invalidations."""

    def __init__(self, client: Redis, prefix: str, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> None:
        self._client = client
        self._prefix = prefix
        self._keep = keep_invalidations
        self._generation_key = f"{prefix}generation"
        self._fired_key = f"{prefix}scheduled-fired"
        self._versions_key = f"{prefix}deployed-version"
        self._record_fire = client.register_script(_RECORD_FIRE)
        self._record = client.register_script(_RECORD_COMPLETED)
        self._invalidate = client.register_script(_APPLY_INVALIDATION)
        self._forget = client.register_script(_FORGET_INVALIDATION)
        self._generation = client.register_script(_GENERATION)
        self._versions = client.register_script(_VERSIONS)
        self._replace = client.register_script(_REPLACE)
        self._adopt_versions = client.register_script(_ADOPT_VERSIONS)
        self._mark_built = client.register_script(_MARK_BUILT)
        self._read_zsets = client.register_script(_READ_ZSETS)

    def _keys(self, model: ModelId) -> list[str]:
        """The model's coverage, sequence, invalidation log, log floor, version, rebuilt-at, re-run and version-piece
        keys, in the scripts' order."""
        kinds = ("cov", "seq", "inv", "invfloor", "ver", "rebuilt", "rerun", "vcov")
        return [f"{self._prefix}{kind}:{model}" for kind in kinds]

    def is_built(self) -> bool:
        return bool(self._client.exists(f"{self._prefix}index-built"))

    def generation(self) -> str:
        return _text(self._generation(keys=[self._generation_key], args=[uuid.uuid4().hex]))

    def mark_built(self, built_at: int, generation: str) -> bool:
        keys = [f"{self._prefix}index-built", self._generation_key]
        return bool(self._mark_built(keys=keys, args=[built_at, generation]))

    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        return set(self.latest_fires(models))

    def latest_fires(self, models: Collection[ModelId]) -> dict[ModelId, int]:
        ordered = list(models)
        if not ordered:
            return {}
        fired = cast("list[bytes | str | None]", self._client.hmget(self._fired_key, ordered))
        return {model: int(fire) for model, fire in zip(ordered, fired, strict=True) if fire is not None}

    def has_fired(self, model: ModelId, fire_unix: int) -> bool:
        return self._client.zscore(f"{self._prefix}fired:{model}", fire_unix) is not None

    def record_scheduled_run(self, model: ModelId, fire_unix: int) -> None:
        self._record_fire(keys=[self._fired_key, f"{self._prefix}fired:{model}"], args=[model, fire_unix])

    def coverage(self, model: ModelId) -> Coverage:
        return self.coverages([model])[model]

    def deployed_versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        ordered = list(models)
        if not ordered:
            return {}
        found = cast("list[bytes | str | None]", self._client.hmget(self._versions_key, ordered))
        return {m: v.decode() if isinstance(v, bytes) else v for m, v in zip(ordered, found, strict=True)
                if v is not None}

    def announce_versions(self, versions: Mapping[ModelId, str]) -> None:
        if versions:
            self._client.hset(self._versions_key, mapping=dict(versions))

    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]:
        """Every requested model's coverage (empty when none), read in one transaction."""
        return self._ranges(models, 0)

    def reruns(self, models: Collection[ModelId]) -> dict[ModelId, tuple[Range, ...]]:
        """Each model's pending re-run tasks, derived from the runs stored (sorted, each once)."""
        runs = self._members(models, 6)
        return {m: all_tasks(_parse_run(x) for x in members) for m, members in runs.items()}

    def _ranges(self, models: Collection[ModelId], key: int) -> dict[ModelId, tuple[Range, ...]]:
        """The ranges in each model's zset number ``key`` of ``_keys``, by start, read atomically (one script)."""
        return {m: tuple(_parse_range(x) for x in members) for m, members in self._members(models, key).items()}

    def _members(self, models: Collection[ModelId], key: int) -> dict[ModelId, list[bytes | str]]:
        """The members of each model's zset number ``key`` of ``_keys``, by score, read atomically (one script)."""
        ordered = list(models)
        if not ordered:
            return {}
        replies = self._read_zsets(keys=[self._keys(m)[key] for m in ordered])
        return dict(zip(ordered, replies, strict=True))

    def invalidation_seq(self, model: ModelId) -> int:
        value = cast("bytes | str | None", self._client.get(self._keys(model)[1]))
        return 0 if value is None else int(value)

    def version_coverage(self, models: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        """Each model's covered ranges by the version that computed them (``None``: covered, version not known), read
        atomically (one script); a model that covers nothing maps to ``{}``."""
        ordered = list(models)
        if not ordered:
            return {}
        replies = self._read_zsets(keys=[key for m in ordered for key in (self._keys(m)[0], self._keys(m)[7])])
        out: dict[ModelId, dict[str | None, Coverage]] = {}
        for i, model in enumerate(ordered):
            covered = tuple(_parse_range(x) for x in replies[2 * i])
            pieces = [_parse_piece(x) for x in replies[2 * i + 1]]
            out[model] = by_version(covered, pieces)
        return out

    def record_completed(self, model: ModelId, done: Range, observed_seq: int, fence: Fence | None = None,
                         version: str | None = None) -> bool:
        if done[0] >= done[1]:
            return True
        cov_key, seq_key, inv_key, floor_key, ver_key, _, rerun_key, vcov_key = self._keys(model)
        keys = [cov_key, seq_key, inv_key, floor_key, ver_key, rerun_key, vcov_key]
        args = list[int | str]([done[0], done[1], observed_seq, version or ""])
        if fence is not None:
            keys += lease_keys(self._prefix, fence.lease)
            args += [fence.owner, fence.token]
        return bool(self._record(keys=keys, args=args))

    def apply_invalidation(self, epoch: int, ranges: Mapping[ModelId, Sequence[TaskRun]]) -> None:
        """Every model's part in one script: all of them or none. Its arguments grow with the runs, not the tasks."""
        if not ranges:
            return
        keys: list[str] = []
        args: list[int] = [self._keep, epoch]
        for model, model_ranges in ranges.items():
            keys.extend(self._keys(model))
            args.append(len(model_ranges))
            args.extend(value for run in model_ranges for value in run)
        self._invalidate(keys=keys, args=args)

    def forget_invalidation(self, epochs: Mapping[ModelId, int]) -> None:
        if not epochs:
            return
        keys = [key for model in epochs for key in self._keys(model)[2:4]]
        self._forget(keys=keys, args=list(epochs.values()))

    def versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        ordered = list(models)
        keys = [self._generation_key, *(self._keys(m)[4] for m in ordered)]
        replies = self._versions(keys=keys, args=[uuid.uuid4().hex])
        return {m: _text(v) for m, v in zip(ordered, replies, strict=True)}

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int, version: str,
                         reruns: Sequence[TaskRun] = (), computed_by: Mapping[str, Coverage] | None = None) -> bool:
        """Overwrite one model's coverage, sequence, re-runs and version pieces if its version is unchanged; the log
        restarts at ``seq``."""
        merged = cov.merge(coverage)
        args: list[int | str] = [version, seq, len(merged)]
        args.extend(position for r in merged for position in r)
        pieces = version_pieces(merged, computed_by or {})
        args.append(len(pieces))
        args.extend(value for piece in pieces for value in piece)
        args.extend(value for run in reruns if run.start < run.end for value in run)
        return bool(self._replace(keys=[*self._keys(model), self._generation_key], args=args))

    def adopt_versions(self, model: ModelId, computed_by: Mapping[str, Coverage]) -> None:
        pieces = version_pieces(cov.union(*computed_by.values()), computed_by)
        if pieces:
            keys = self._keys(model)
            self._adopt_versions(keys=[keys[7], keys[4]], args=[value for piece in pieces for value in piece])
