"""Every service exits on SIGTERM within ``worker.shutdown_timeout_s`` + 5 s, whatever it is doing (issue 24).

A small project of its own: one external model whose bounds are constant, and two models whose statements sleep on
the Spark Connect server far past the shutdown timeout, one per core of the local server. Each service is started as
``cbt run <service>``; once both statements run, the deployment's Redis keys are emptied, so the coordinator rebuilds
its hot index from the admin tables — reads that wait for a permit of the Spark cluster's admission (the sleeping
statements hold every one). Then every
service gets SIGTERM: the worker's statements must be interrupted on the server (not waited for) and the
coordinator's rebuild abandoned (it is redone at its next start).
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.dev.pipeline import ServiceProcesses
from tests.conftest import Endpoints
from tests.e2e.harness import overrides_for

pytestmark = pytest.mark.e2e
SHUTDOWN_TIMEOUT_S = 5
BOUND_S = SHUTDOWN_TIMEOUT_S + 5
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator", "api")
SLOW_TABLES = ("slow_a", "slow_b")

CONFIG = f"""\
worker:
  concurrency: 2
  shutdown_timeout_s: {SHUTDOWN_TIMEOUT_S}
  retry: {{max_attempts: 1}}
scheduler:
  tick_s: 1
models:
  external: {{paths: [models/external]}}
  transformations: {{paths: [models/transformations]}}
"""
SOURCE = """\
---
table: source
interval: {type: position}
cache: {incremental_scan_interval: 1s, full_scan_interval: 1m}
---
SELECT 0 AS min, 600 AS max
"""
SLOW = """\
---
type: incremental
table: slow
interval: {max: 60, type: position}
schedules: {forwardfill: "@every 1s", backfill: "@every 1s"}
dependencies: ["{{external}}.source"]
write: {strategy: replace, replace_where: "position >= {{ bounds.start }} AND position < {{ bounds.end }}"}
batch: {mode: "off"}
---
SELECT {{ bounds.start }} AS position, reflect('java.lang.Thread', 'sleep', CAST(600000 AS BIGINT)) AS slept
"""


def write_project(root: Path) -> Path:
    (root / "models" / "external").mkdir(parents=True)
    (root / "models" / "transformations").mkdir(parents=True)
    (root / "models" / "external" / "source.sql").write_text(SOURCE)
    for table in SLOW_TABLES:
        model = SLOW.replace("table: slow", f"table: {table}")
        (root / "models" / "transformations" / f"{table}.sql").write_text(model)
    config = root / "config.yaml"
    config.write_text(CONFIG)
    return config


def running_tasks(procs: ServiceProcesses) -> float:
    try:
        return sum(v for (name, _), v in procs.metrics("worker").items() if name == "cbt_tasks_running")
    except OSError:
        return 0.0


def wait_for(what: str, check: object, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def stop_times(procs: ServiceProcesses, keys: tuple[str, ...]) -> dict[str, tuple[float, int | None]]:
    """SIGTERM to every process at once; each one's seconds to exit and its exit code (None: killed at the bound)."""
    sent = time.monotonic()
    for key in keys:
        procs.running[key].send_signal(signal.SIGTERM)
    out: dict[str, tuple[float, int | None]] = {}
    for key in keys:
        proc = procs.running.pop(key)
        try:
            code: int | None = proc.wait(timeout=max(0.1, sent + BOUND_S + 20 - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        out[key] = (time.monotonic() - sent, code)
    return out


def test_every_service_stops_within_its_bound_while_a_statement_runs(
        endpoints: Endpoints, spark: SparkSession, tmp_path: Path) -> None:
    tag = f"ps{uuid.uuid4().hex[:8]}"
    config = write_project(tmp_path)
    overrides = {**overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote),
                 # the two sleeping statements hold every permit: the coordinator's rebuild waits for one
                 "CBT__SPARK__MAX_CONCURRENT_STATEMENTS": str(len(SLOW_TABLES))}
    out_db = overrides["CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE"]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {out_db}")
    for table in SLOW_TABLES:
        spark.sql(f"CREATE TABLE {out_db}.{table} (position BIGINT, slept STRING) USING DELTA")
    procs = ServiceProcesses(config, overrides, tmp_path / "logs")
    try:
        for name in SERVICES:
            procs.start(name)
        wait_for("the worker to run both slow statements", lambda: running_tasks(procs) >= len(SLOW_TABLES), 180)
        redis = Redis.from_url(endpoints.redis_url)
        redis.delete(*redis.keys(f"{tag}:*"))  # the hot index is gone: the coordinator rebuilds it
        time.sleep(4)  # its reads are queued on the server now

        times = stop_times(procs, SERVICES)
    finally:
        procs.stop_all(timeout_s=5)
        spark.sql(f"DROP DATABASE IF EXISTS {out_db} CASCADE")

    late = {k: v for k, v in times.items() if v[0] > BOUND_S or v[1] != 0}
    assert not late, f"services past {BOUND_S} s or not exiting cleanly (seconds, code): {times}"
