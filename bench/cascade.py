"""(b) Cascade latency: from an upstream completion to the dependent task being enqueued and starting.

The chain ``block_propagation_minute → block_propagation_two_minute`` runs at the head, as in production: the
bench releases two more minutes of source data each time the previous minutes completed, so workers have room
and the numbers show the cascade rather than a queue. For each two-minute task, its upstream completion is the
latest ``interval-completed`` of a minute task overlapping it (``completed_at_ms`` in the message), and

- enqueued: the task's ``enqueued_at_ms`` (the coordinator consumed the event, re-planned, claimed, published);
- seen: when the bench's own consumer received the task message (a proxy of a worker's pickup: one more hop);
- started: the worker's own report, its ``task started`` debug log line (after the lease and re-validation, before
  the Spark statements; the workers log in JSON at debug level here). The target is judged on this one; a run in
  which no worker reported a start is "not measured".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench.events import EventRecorder
from bench.report import load_average, summary
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.contract.messages import IntervalCompleted
from cbt.dev.generator import SourceTables, write_blocks
from tests.e2e.harness import T0

UPSTREAM = "block_propagation_minute"
DEPENDENT = "block_propagation_two_minute"
STEP_S = 120
"""Source released per step: one two-minute interval, two minute intervals."""


def run(bd: BenchDeployment, samples: int, step_timeout_s: float = 120.0) -> dict[str, Any]:
    upstream, dependent = bd.model_id(UPSTREAM), bd.model_id(DEPENDENT)
    topics = bd.topics
    events = EventRecorder(bd.endpoints.kafka, [topics.task_requested(), topics.interval_completed], f"{bd.tag}.bench")
    bd.dep.start("coordinator", "worker")
    events.start()
    try:
        bd.wait_ready(workers=1)
        load = load_average()
        for step in range(1, samples + 1):
            bd.release_bounds(T0, T0 + step * STEP_S)
            events.wait_completed(upstream, 2 * step, step_timeout_s)
        events.wait_completed(dependent, samples, step_timeout_s)
    finally:
        events.stop()
        bd.dep.stop()
    started = _started_ms(bd.dep.log_dir)
    rows = latencies(events.completions(upstream), events, dependent, started)
    return {
        "samples": len(rows), "load_at_start": load, "worker_concurrency": bd.dep.config.worker.concurrency,
        "completion_to_enqueued_ms": summary([r["enqueued"] for r in rows]),
        "completion_to_seen_by_bench_ms": summary([r["seen"] for r in rows]),
        "completion_to_started_ms": summary([r["started"] for r in rows if r["started"] is not None]),
    }


def latencies(upstream: list[IntervalCompleted], events: EventRecorder, dependent: str,
              started: dict[str, int]) -> list[dict[str, Any]]:
    """One row per dependent task (its first request): latencies from the completion that made it ready."""
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] = {}
    for seen in events.requests(dependent):
        first.setdefault(seen.message.task_id, seen)
    for task_id, seen in first.items():
        task = seen.message
        assert task.position is not None and task.interval is not None
        end = task.position + task.interval
        feeding = [c.completed_at_ms for c in upstream if c.position is not None and c.interval is not None
                   and c.position < end and task.position < c.position + c.interval
                   and c.completed_at_ms <= task.enqueued_at_ms]
        if not feeding:
            continue
        done = max(feeding)
        start = started.get(task_id)
        rows.append({"task_id": task_id, "enqueued": task.enqueued_at_ms - done, "seen": seen.received_ms - done,
                     "started": None if start is None else start - done})
    return rows


def _started_ms(log_dir: Path) -> dict[str, int]:
    """First ``task started`` time per task id, from the workers' JSON logs."""
    started: dict[str, int] = {}
    for path in log_dir.glob("worker*.log"):
        for line in path.read_text(errors="replace").splitlines():
            if not line.startswith("{") or '"task started"' not in line:
                continue
            record = json.loads(line)
            started.setdefault(str(record["task_id"]), int(float(record["ts"]) * 1000))
    return started


def benchmark(spark: SparkSession, endpoints: Endpoints, samples: int) -> dict[str, Any]:
    bd = deploy(spark, endpoints, "cas", [UPSTREAM, DEPENDENT],
                {"CBT__LOGGING__LEVEL": "debug", "CBT__LOGGING__FORMAT": "json"})
    try:
        write_blocks(spark, SourceTables(bd.dep.source_db), T0, T0 + samples * STEP_S)
        return {"chain": f"{UPSTREAM} -> {DEPENDENT}", **run(bd, samples)}
    finally:
        bd.teardown()
