"""``--until-idle``: a worker started on a task topic with messages waiting handles them, and once its group has
committed everything (no lag, nothing in flight) for the quiet period it stops by itself, exit code 0 — run as
``python -m cbt.worker``, the service's own command, against the real Kafka, Redis and Spark Connect."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters import runtime
from cbt.adapters.kafka_consumers import GroupLag
from cbt.config.settings import load_config
from cbt.contract.messages import TaskRequested
from tests.conftest import Endpoints
from tests.e2e.harness import overrides_for

pytestmark = pytest.mark.e2e
IDLE_S = 2
EXIT_BOUND_S = 180

CONFIG = """\
worker:
  concurrency: 1
  retry: {max_attempts: 1}
models:
  external: {paths: [models/external]}
  transformations: {paths: [models/transformations]}
"""
SOURCE = """\
---
table: source
interval: {type: position}
---
SELECT 0 AS min, 600 AS max
"""


def write_project(root: Path) -> Path:
    (root / "models" / "external").mkdir(parents=True)
    (root / "models" / "transformations").mkdir(parents=True)
    (root / "models" / "external" / "source.sql").write_text(SOURCE)
    config = root / "config.yaml"
    config.write_text(CONFIG)
    return config


def test_a_worker_run_until_idle_drains_its_topic_and_exits_0(endpoints: Endpoints, spark: SparkSession,
                                                               topic_prefix: str, redis_client: Redis,
                                                               redis_prefix: str, tmp_path: Path) -> None:
    tag = f"ui{uuid.uuid4().hex[:8]}"
    overrides = {**overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote),
                 "CBT__KAFKA__TOPIC_PREFIX": topic_prefix, "CBT__REDIS__KEY_PREFIX": redis_prefix}
    env = {**os.environ, **overrides}
    config_path = write_project(tmp_path)
    config = load_config(config_path, environ=env)
    topics = runtime.topics(config)
    # What the worker can only reject or fail (nothing else runs here to plan tasks): a body that is not a message,
    # and a task for a model it does not know. Each is handled and committed all the same.
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    unknown = TaskRequested(task_id=f"{tag}.nowhere:0:60", model=f"{tag}.nowhere", position=0, interval=60)
    for body in (b"not json", unknown.model_dump_json().encode()):
        producer.produce(topics.task_requested("default"), body)
    assert producer.flush(10) == 0
    admin_dbs = [v for k, v in overrides.items() if "__ADMIN__" in k and k.endswith("DATABASE")]
    began = time.monotonic()
    worker = subprocess.run(
        [sys.executable, "-m", "cbt.worker", "--config", str(config_path), f"--until-idle={IDLE_S}",
         "--health-addr", "off", "--metrics-addr", "off"],
        env=env, capture_output=True, text=True, timeout=EXIT_BOUND_S, check=False)
    took_s = time.monotonic() - began
    try:
        assert worker.returncode == 0, worker.stderr[-3000:]
        assert "idle: stopping" in worker.stderr and "worker stopped" in worker.stderr, worker.stderr[-3000:]
        assert took_s >= IDLE_S
        lag = GroupLag(endpoints.kafka_bootstrap)
        try:
            assert lag.behind(topics.worker_group("default"), topics.task_requested("default")) == 0
            assert lag.behind(f"{tag}.check", topics.message_rejected) == 1, "the malformed body was rejected"
            assert lag.behind(f"{tag}.check", topics.task_failed) == 1, "the unknown model's task failed"
        finally:
            lag.close()
    finally:
        for database in admin_dbs:
            spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
