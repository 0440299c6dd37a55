"""A CBT user's deployment, run as CBT's binary was: ``cbt --config config.yaml`` with a config written for the
original CBT (its ClickHouse, frontend, management, pprof… keys; ``:PORT`` addresses; consolidation off with ``""``),
on the real Kafka, Redis and Spark Connect (issue 25).

It checks what such a user's probes, Prometheus and dashboards see: every service started in one process group;
CBT's ``/health`` and ``/ready`` answer ``OK``, on an address beyond loopback; each CBT-only key is logged once per
service as a warning; the five metrics CBT fired are served with its names and labels and follow the real work —
schedules registered and fired, gaps a backfill examined and the slots it ran out of, a task dropped after its last
attempt — and ``cbt_tasks_running`` carries its ``worker`` label. Then one SIGTERM stops every service, exit 0.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.kafka_admin import admin_client, delete_topics
from tests.conftest import Endpoints
from tests.e2e.harness import overrides_for

pytestmark = pytest.mark.e2e
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator", "api")
SHUTDOWN_TIMEOUT_S = 5
CBT_KEYS_LOGGED = (
    "pprofAddr",
    "clickhouse",
    "frontend",
    "management",
    "scheduler.concurrency",
    "scheduler.shutdownTimeout",
    "worker.tags",
    "models.external.defaultCluster",
    "api.enabled",
)

CONFIG = """\
logging: info
metricsAddr: ":{metrics}"
healthCheckAddr: ":{health}"
pprofAddr: ":6060"
clickhouse:
  url: "http://clickhouse:8123"
  cluster: ""
  queryTimeout: 300s
frontend:
  enabled: true
  addr: ":8080"
management:
  enabled: false
api:
  enabled: true
  addr: ":{api}"
scheduler:
  concurrency: 10
  consolidation: ""
  shutdownTimeout: 10
worker:
  concurrency: 2
  model_concurrency: 1
  tags: [batch]
  shutdownTimeout: {shutdown}
  retry: {{max_attempts: 1}}
models:
  external:
    paths: [models/external]
    defaultCluster: my_cluster
  transformations:
    paths: [models/transformations]
interval_types:
  position:
  - name: raw
"""
SOURCE = """\
---
table: source
interval: {type: position}
cache: {incremental_scan_interval: 1s, full_scan_interval: 1m}
---
SELECT 0 AS min, 600 AS max
"""
FILLED = """\
---
type: incremental
table: filled
interval: {max: 60, type: position}
schedules: {forwardfill: "", backfill: "@every 1s"}
dependencies: ["{{external}}.source"]
write: {strategy: replace, replace_where: "position >= {{ bounds.start }} AND position < {{ bounds.end }}"}
batch: {mode: "off"}
---
SELECT {{ bounds.start }} AS position
"""
BROKEN = """\
---
type: incremental
table: broken
interval: {max: 600, type: position}
schedules: {forwardfill: "@every 1s", backfill: ""}
dependencies: ["{{external}}.source"]
write: {strategy: replace, replace_where: "position >= {{ bounds.start }} AND position < {{ bounds.end }}"}
batch: {mode: "off"}
---
SELECT CAST(raise_error('broken on purpose') AS BIGINT) AS position
"""


def free_run(length: int) -> int:
    """The first of ``length`` consecutive ports nothing listens on (every interface)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + length < 65536 and all(_is_free(base + i) for i in range(length)):
            return base
    raise AssertionError("no run of free ports")


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


def outward_address() -> str:
    """This host's address beyond loopback, where a remote Prometheus or probe would connect (loopback without one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # (no packet is sent: this only picks the outward interface)
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    status, text = get(url)
    if status != 200:
        return {}
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def wait_for(what: str, check: Callable[[], bool], timeout_s: float, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        assert proc.poll() is None, f"cbt exited ({proc.returncode}) before {what}:\n{log.read_text()[-4000:]}"
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-4000:]}")


def value(series: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in series.items() if n == name and set(labels.items()) <= ls)


def write_project(root: Path, health: int, metrics: int, api: int) -> Path:
    for folder, files in (("external", {"source": SOURCE}), ("transformations", {"filled": FILLED, "broken": BROKEN})):
        (root / "models" / folder).mkdir(parents=True)
        for name, text in files.items():
            (root / "models" / folder / f"{name}.sql").write_text(text)
    config = root / "config.yaml"
    config.write_text(CONFIG.format(health=health, metrics=metrics, api=api, shutdown=SHUTDOWN_TIMEOUT_S))
    return config


def test_a_cbt_config_runs_every_service_as_cbt_s_binary_did(
    endpoints: Endpoints, spark: SparkSession, tmp_path: Path
) -> None:
    tag = f"cb{uuid.uuid4().hex[:8]}"
    health, metrics, api = free_run(len(SERVICES)), free_run(len(SERVICES)), free_run(1)
    config = write_project(tmp_path, health, metrics, api)
    overrides = overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote)
    for key in ("CBT__TELEMETRY__TRACES", "CBT__TELEMETRY__TRACES_FILE"):
        overrides.pop(key)
    out_db = overrides["CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE"]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {out_db}")
    for table in ("filled", "broken"):
        spark.sql(f"CREATE TABLE {out_db}.{table} (position BIGINT) USING DELTA")
    host = outward_address()
    log = tmp_path / "cbt.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cbt.cli", "--config", str(config)],
            cwd=tmp_path,
            env={**os.environ, **overrides, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def every_service_ready() -> bool:
            return all(get(f"http://{host}:{health + i}/ready") == (200, "OK") for i in range(len(SERVICES)))

        wait_for("every service ready on CBT's /ready", every_service_ready, 240, proc, log)
        assert all(get(f"http://{host}:{health + i}/health") == (200, "OK") for i in range(len(SERVICES)))
        assert get(f"http://{host}:{api}/api/v1/models")[0] == 200, "the api listens on :PORT, every interface"

        coordinator, worker = f"http://{host}:{metrics}/metrics", f"http://{host}:{metrics + 1}/metrics"

        def work_seen() -> bool:
            c, w = scrape(coordinator), scrape(worker)
            return (
                value(c, "cbt_backfill_gap_check_limit_reached_total", model=f"{out_db}.filled") >= 1
                and value(
                    c,
                    "cbt_scheduled_task_executions_total",
                    model=f"{out_db}.filled",
                    operation="backfill",
                    status="success",
                )
                >= 2
                and value(w, "cbt_archived_tasks_deleted_total", model=f"{out_db}.broken", queue="default") >= 1
                and value(w, "cbt_tasks_total", model=f"{out_db}.filled", status="success") >= 2
            )

        wait_for("the scheduler, backfill and archive metrics to follow the work", work_seen, 240, proc, log)
        c, w = scrape(coordinator), scrape(worker)
        registered = {tuple(sorted(ls)): v for (n, ls), v in c.items() if n == "cbt_scheduled_tasks_registered"}
        assert registered == {
            (("model", f"{out_db}.filled"), ("operation", "backfill")): 1,
            (("model", f"{out_db}.broken"), ("operation", "forward")): 1,
        }, 'one series per schedule; consolidation is off ("")'
        assert value(c, "cbt_backfill_gaps_analyzed_total", model=f"{out_db}.filled", result="fillable") >= 1
        running = [ls for (n, ls), _ in w.items() if n == "cbt_tasks_running"]
        assert running and all(dict(ls)["worker"].startswith("worker-") for ls in running), running

        logged = log.read_text()
        for key in CBT_KEYS_LOGGED:
            warned = re.findall(rf"config\.yaml:\d+: {re.escape(key)}: ", logged)
            assert len(warned) == len(SERVICES), f"{key}: warned {len(warned)} times, once per service expected"

        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=SHUTDOWN_TIMEOUT_S + 30)
        assert code == 0, log.read_text()[-4000:]
        assert all(get(f"http://127.0.0.1:{health + i}/health")[0] == 0 for i in range(len(SERVICES))), (
            "every service stopped with it"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        spark.sql(f"DROP DATABASE IF EXISTS {out_db} CASCADE")
        for key, database in overrides.items():
            if "__ADMIN__" in key and key.endswith("DATABASE"):
                spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
        redis = Redis.from_url(endpoints.redis_url)
        keys = list(redis.scan_iter(f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        topics = admin_client(endpoints.kafka_bootstrap).list_topics(timeout=30).topics
        delete_topics(endpoints.kafka_bootstrap, [t for t in topics if t.startswith(f"{tag}.")])
