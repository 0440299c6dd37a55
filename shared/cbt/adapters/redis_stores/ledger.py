"""The task ledger in Redis: per model, the tasks in flight by deadline, with each task's range.

``RedisTaskLedger`` implements ``TaskLedger`` (``cbt.state.ports``). Keys (``{m}`` is a model id)::

    {prefix}ledger:{m}       zset  member task id, score deadline_ms
    {prefix}ledger-task:{m}  hash  task id -> {"range": [start, end] | null, "deadline_ms": int}
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from redis import Redis
from redis.commands.core import Script

from cbt.models.spec import ModelId
from cbt.state.ports import InFlightTask

PIPELINE_CHUNK = 1000
"""Calls per pipelined round trip when a batch is claimed or extended (bounded replies, a bounded blocked loop)."""

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
