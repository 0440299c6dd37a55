"""The example pipeline on real Kafka, Redis and Spark: it catches up, and every derived table equals the oracle
(the same SQL run once over the whole range) — also after duplicates and crashes."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from confluent_kafka import Producer

from cbt.contract.messages import TaskRequested
from cbt.models.spec import IncrementalModel
from cbt.state.admin_records import CONSOLIDATED
from tests.e2e.harness import T0, Deployment, Oracle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
SOURCE_END = T0 + 600
LAST_SLOT_END = SOURCE_END - 12 + 1
"""Bounds max of the sources: one past the newest slot's second."""


def assert_equals_oracle(dep: Deployment) -> None:
    oracle = Oracle(dep)
    try:
        models = oracle.build()
        for model in models.incrementals:
            assert isinstance(model, IncrementalModel)
            assert dep.coverage(f"{dep.output_db}.{model.table}"), f"{model.table} covered nothing"
            assert oracle.differences(model.table) == (0, 0), f"{model.table} differs from the oracle"
    finally:
        oracle.drop()


def publish_duplicates(dep: Deployment, count: int) -> int:
    """Re-publish task requests for intervals that already completed (a producer retry, a replayed topic)."""
    producer = Producer({"bootstrap.servers": dep.config.kafka.bootstrap_servers})
    sent = 0
    for model in dep.models.incrementals:
        for start, end in dep.coverage(model.id)[:1]:
            position = start
            while position + model.interval.max <= end and sent < count:
                task = TaskRequested(task_id=f"{model.id}:{position}:{model.interval.max}", model=model.id,
                                     position=position, interval=model.interval.max, direction="backfill")
                topic = f"{dep.config.kafka.topic_prefix}task-requested.{dep.config.worker.pool_for(model.tags)}"
                producer.produce(topic, task.encode(), key=task.task_id.encode())
                sent += 1
                position += model.interval.max
    assert producer.flush(30) == 0
    return sent


def test_pipeline_catches_up_equals_the_oracle_and_ignores_duplicate_tasks(deployment: Deployment) -> None:
    dep = deployment
    dep.write_entities()
    dep.write_sources(T0, SOURCE_END)
    dep.start()
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)

    published_ms = int(time.time() * 1000)
    assert publish_duplicates(dep, 12) >= 6
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)
    assert _runs_ending_before(dep, SOURCE_END, since_ms=published_ms) == 0, "covered intervals ran again"


def test_worker_killed_mid_task_and_coordinator_restarted_still_converge(deployment: Deployment) -> None:
    dep = deployment
    dep.write_entities()
    dep.write_sources(T0, T0 + 300)
    dep.start("coordinator", "bounds-cache", "worker")
    _wait_for_running_task(dep)
    dep.procs.kill("worker", signal.SIGKILL)
    dep.procs.kill("coordinator", signal.SIGKILL)
    dep.write_sources(T0 + 300, SOURCE_END)  # data keeps arriving while they are down
    dep.start("worker", "coordinator")
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)


def _wait_for_running_task(dep: Deployment, timeout_s: float = 120.0) -> None:
    """Until some task holds its lease (a worker is in the middle of it)."""
    async def poll() -> None:
        async with asyncio.timeout(timeout_s):
            while not list(dep.redis.scan_iter(match=f"{dep.config.redis.key_prefix}lease:task:*")):
                await asyncio.sleep(0.05)

    asyncio.run(poll())


def test_redis_emptied_rebuilds_from_the_admin_tables_and_converges(deployment: Deployment) -> None:
    dep = deployment
    dep.write_entities()
    dep.write_sources(T0, T0 + 300)
    dep.start()
    dep.wait_quiet(T0 + 300 - 12 + 1)
    assert _runs_ending_before(dep, T0 + 240, since_ms=0) > 0

    flushed_ms = int(time.time() * 1000)
    keys = list(dep.redis.scan_iter(match=f"{dep.config.redis.key_prefix}*"))
    dep.redis.delete(*keys)  # everything this deployment had in Redis: coverage, bounds, ledger, leases, marks
    dep.write_sources(T0 + 300, SOURCE_END)
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)
    assert _runs_ending_before(dep, T0 + 240, since_ms=flushed_ms) == 0, "completed intervals must not run again"


def _runs_ending_before(dep: Deployment, end: int, since_ms: int) -> int:
    """Admin rows a worker wrote since ``since_ms`` for intervals ending by ``end`` (rows the coordinator's
    consolidation rewrote are not runs)."""
    table = f"{dep.config.admin.incremental.database}.{dep.config.admin.incremental.table}"
    query = (f"SELECT count(*) AS n FROM {table} WHERE position + `interval` <= {end} "
             f"AND unix_millis(updated_date_time) >= {since_ms} AND direction <> '{CONSOLIDATED}'")
    return int(dep.spark.sql(query).collect()[0]["n"])
