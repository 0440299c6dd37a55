"""Hostile input on every consumed topic, over the real Kafka, Redis and Spark Connect: generated bodies
(property-based: bytes, any JSON, messages with fields replaced by anything, and the known killers — a year of
one-position steps, a fire time of 10^23, an unknown pool, a decade-wide rerun) on the worker's, the coordinator's and
the invalidator's topics, then one valid message on each. The three services, run with ``--until-idle``, drain every
partition and exit 0 (alive, nothing stuck); every body that does not decode is on a rejected topic with a reason;
the valid messages after them are handled. (The api's event stream reads from the latest offset and skips what it
cannot decode: ``tests/unit/api/test_events.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.redis_state import RedisState
from cbt.config.settings import load_config
from cbt.contract.messages import (
    IntervalCompleted,
    Invalidation,
    InvalidationRejected,
    MessageRejected,
    TaskFailed,
    TaskRequested,
    decode,
    decode_invalidation,
)
from cbt.contract.topics import Topics
from tests.conftest import Endpoints
from tests.e2e.harness import overrides_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
IDLE_S = 3
EXIT_BOUND_S = 300
DERIVED = "out.derived"

CONFIG = """\
worker:
  concurrency: 1
  retry: {max_attempts: 1}
models:
  external: {paths: [models/external], default_database: src}
  transformations: {paths: [models/transformations], default_database: out}
"""
SOURCE = """\
---
table: source
interval: {type: position}
---
SELECT 0 AS min, 600 AS max
"""
DERIVED_SQL = """\
---
type: incremental
table: derived
interval: {max: 60, min: 60, type: position}
schedules: {forwardfill: "@every 1h", backfill: "@every 1h"}
dependencies: ["src.source"]
---
SELECT 1 AS x
"""

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
TASK = TaskRequested(task_id=f"{DERIVED}:0:60", model=DERIVED, position=0, interval=60).model_dump(mode="json")
COMPLETED = IntervalCompleted(task_id=f"{DERIVED}:0:60", model=DERIVED, position=0, interval=60).model_dump(mode="json")
INVALIDATION = {"id": "e", "model": "src.source", "start": 0, "end": 60, "reason": "reorg", "source": "fuzz"}


def mutations(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """``valid`` with up to three fields replaced by any JSON value, or dropped."""
    changes = st.dictionaries(st.sampled_from(sorted(valid)), JSON | st.just("__drop__"), max_size=3)
    return changes.map(lambda c: json.dumps({k: v for k, v in {**valid, **c}.items() if v != "__drop__"}).encode())


def bodies(valid: dict[str, Any]) -> st.SearchStrategy[list[bytes]]:
    one = st.binary(max_size=120) | JSON.map(lambda v: json.dumps(v).encode()) | mutations(valid)
    return st.lists(one, min_size=25, max_size=25)


KILLERS_WORKER = [
    json.dumps({**TASK, "task_id": f"{DERIVED}:0:31536000", "interval": 31_536_000, "step": 1}).encode(),
    json.dumps({**TASK, "task_id": f"{DERIVED}:@{10**23}", "position": None, "interval": None,
                "scheduled_unix": 10**23}).encode(),
    json.dumps({**TASK, "pool": "gpu"}).encode(),
]
KILLERS_INVALIDATOR = [json.dumps({**INVALIDATION, "id": "decade", "end": 10 * 365 * 86400}).encode()]


def write_project(root: Path) -> Path:
    for folder, name, text in (("external", "source.sql", SOURCE), ("transformations", "derived.sql", DERIVED_SQL)):
        (root / "models" / folder).mkdir(parents=True, exist_ok=True)
        (root / "models" / folder / name).write_text(text)
    (root / "config.yaml").write_text(CONFIG)
    return root / "config.yaml"


def published(bootstrap: str, topic: str) -> list[bytes]:
    """Every body on ``topic`` (read from its beginning by a group of its own)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    found: list[bytes] = []
    try:
        while (message := consumer.poll(5.0)) is not None:
            if not message.error():
                found.append(message.value() or b"")
    finally:
        consumer.close()
    return found


def undecodable(body: bytes, decoder: Any) -> bool:
    try:
        decoder(body)
    except (ValidationError, ValueError):
        return True
    return False


@settings(max_examples=1, derandomize=True, phases=[Phase.generate], deadline=None,
          suppress_health_check=list(HealthCheck))
@given(for_worker=bodies(TASK), for_coordinator=bodies(COMPLETED), for_invalidator=bodies(INVALIDATION))
def test_generated_bodies_on_every_topic_stall_nothing_and_each_bad_one_is_rejected_with_a_reason(
        endpoints: Endpoints, spark: SparkSession, topic_prefix: str, redis_client: Redis, redis_prefix: str,
        tmp_path: Path, for_worker: list[bytes], for_coordinator: list[bytes], for_invalidator: list[bytes]) -> None:
    tag = f"hi{uuid.uuid4().hex[:8]}"
    overrides = {**overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote),
                 "CBT__KAFKA__TOPIC_PREFIX": topic_prefix, "CBT__REDIS__KEY_PREFIX": redis_prefix,
                 "CBT__KAFKA__MAX_HANDLING_ATTEMPTS": "2"}
    for kind in ("EXTERNAL", "TRANSFORMATIONS"):  # the project's own databases (src, out): nothing is written there
        overrides.pop(f"CBT__MODELS__{kind}__DEFAULT_DATABASE")
    env = {**os.environ, **overrides}
    config_path = write_project(tmp_path)
    config = load_config(config_path, environ=env)
    topics = Topics(config.kafka.topic_prefix)
    valid_task = TaskRequested(task_id=f"{tag}.gone:0:60", model=f"{tag}.gone", position=0, interval=60)
    valid_failure = TaskFailed(task_id=f"{DERIVED}:60:60", model=DERIVED, position=60, interval=60, attempts=1,
                               error="fuzz: the valid one after the rest")
    valid_invalidation = Invalidation.model_validate({**INVALIDATION, "id": f"{tag}-valid"})
    sent = {topics.task_requested("default"): [*for_worker, *KILLERS_WORKER, valid_task.encode()],
            topics.task_failed: [*for_coordinator, valid_failure.encode()],
            topics.invalidation: [*for_invalidator, *KILLERS_INVALIDATOR, valid_invalidation.encode()]}
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for topic, messages in sent.items():
        for body in messages:
            producer.produce(topic, body, partition=0)
    assert producer.flush(10) == 0
    admin_dbs = [v for k, v in overrides.items() if "__ADMIN__" in k and k.endswith("DATABASE")]
    try:
        services = ("coordinator", "worker", "invalidator")
        runs = [subprocess.Popen([sys.executable, "-m", f"cbt.{service}", "--config", str(config_path),
                                  f"--until-idle={IDLE_S}", "--health-addr", "off", "--metrics-addr", "off"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for service in services]
        ended = [run.communicate(timeout=EXIT_BOUND_S) for run in runs]
        for service, run, (_, stderr) in zip(services, runs, ended, strict=True):
            assert run.returncode == 0, f"{service} ended with {run.returncode}: {stderr[-3000:]}"
        rejected = [MessageRejected.model_validate_json(b) for b in published(endpoints.kafka_bootstrap,
                                                                              topics.message_rejected)]
        invalidations_rejected = [InvalidationRejected.model_validate_json(b) for b in published(
            endpoints.kafka_bootstrap, topics.invalidation_rejected)]
        for topic, decoder, found in ((topics.task_requested("default"), decode, {r.raw for r in rejected}),
                                      (topics.task_failed, decode, {r.raw for r in rejected}),
                                      (topics.invalidation, decode_invalidation, {r.raw for r in
                                                                                  invalidations_rejected})):
            bad = {b.decode("utf-8", errors="replace") for b in sent[topic] if undecodable(b, decoder)}
            assert bad <= found, f"{topic}: not rejected: {sorted(bad - found)[:5]}"
        assert all(r.reason for r in rejected) and all(r.reason for r in invalidations_rejected)
        reasons = {r.raw: r.reason for r in rejected}
        assert "step 1 is outside" in reasons[KILLERS_WORKER[0].decode()]
        assert "pool 'gpu'" in reasons[KILLERS_WORKER[2].decode()]
        decade = {r.raw: r.reason for r in invalidations_rejected}[KILLERS_INVALIDATOR[0].decode()]
        assert "invalidator.max_tasks" in decade
        # the valid message after the hostile ones, on each topic, was handled
        on_failed = [decode(b) for b in published(endpoints.kafka_bootstrap, topics.task_failed)
                     if not undecodable(b, decode)]  # (the coordinator's hostile bodies were sent there too)
        failed = {m.task_id for m in on_failed if isinstance(m, TaskFailed)}
        assert valid_task.task_id in failed, "the worker handled the task after the rest"
        state = RedisState(redis_client, redis_prefix)
        assert state.failures.recent_failures([DERIVED]).get(DERIVED), "the coordinator recorded the valid failure"
        assert redis_client.exists(f"{redis_prefix}invalidation:{valid_invalidation.id}"), "and applied the event"
    finally:
        for database in admin_dbs:  # (the topic_prefix and redis_prefix fixtures remove the topics and keys)
            spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
