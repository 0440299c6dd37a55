"""The coordinator keeps its leader lease while its first rebuild of the hot index opens and reads the admin tables
(issue 24: on a busy Spark the lease was lost during a start, and fencing token 2 was taken 23-39 s after token 1).

A real Redis holds the lease; the admin tables are a stand-in that takes seconds to open (a Spark Connect session and
``CREATE TABLE IF NOT EXISTS`` on a loaded server) and to read. A contender tries to take the lease all along.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from redis import Redis

from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import load_config
from cbt.contract.topics import Topics
from cbt.coordinator.app import LEADER_LEASE, Coordinator
from cbt.models.dag import ModelSet
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from tests.e2e.harness import CONFIG
from tests.integration.test_coordinator_schedules import Publisher
from tests.twins.memory_record import MemoryRecord
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
LEASE_TTL_S = 3
OPENING_S = 2 * LEASE_TTL_S


class SlowRecord(MemoryRecord):
    def coverage(self, model_ids: object = None) -> dict[str, object]:  # type: ignore[override]
        time.sleep(LEASE_TTL_S)
        return super().coverage(model_ids)  # type: ignore[arg-type]


def slow_to_open() -> SlowRecord:
    time.sleep(OPENING_S)
    return SlowRecord()


def test_the_leader_keeps_its_lease_while_the_admin_tables_open_and_are_read(redis_client: Redis,
                                                                           redis_prefix: str) -> None:
    config = load_config(CONFIG, environ={**os.environ, "CBT__SCHEDULER__LEADER_LEASE_TTL_S": f"{LEASE_TTL_S}s",
                                          "CBT__SCHEDULER__LEADER_LEASE_RENEW_S": "1s"})
    models = ModelSet({"out.m": inc("out.m")})
    state = RedisState(redis_client, redis_prefix)
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger, Publisher(), Topics("t."),
                      lambda tags: "default", model_concurrency=1, task_deadline_ms=60_000)
    coordinator = Coordinator(config, models, state, planner, RedisMarks(redis_client, redis_prefix), "c1",
                              slow_to_open)
    taken_by_contender: list[int] = []
    done = threading.Event()

    def contend() -> None:
        while not coordinator.is_leader and not done.is_set():  # from the moment the coordinator leads
            time.sleep(0.01)
        while not done.is_set():
            token = state.leases.acquire(LEADER_LEASE, "c2", int(LEASE_TTL_S * 1000))
            if token is not None:
                taken_by_contender.append(token)
                state.leases.release(LEADER_LEASE, "c2")
            time.sleep(0.1)

    contender = threading.Thread(target=contend, daemon=True)
    contender.start()
    try:
        asyncio.run(coordinator.tick())
    finally:
        done.set()
        contender.join()

    assert state.coverage.is_built(), "the first tick rebuilt the hot index"
    assert taken_by_contender == [], "the lease was lost while the admin tables opened or were read"
    assert coordinator.is_leader
