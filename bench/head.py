"""(e) Head latency: a new minute of source rows lands → the last model of a three-level chain covers it.

The chain ``head_1 → head_2 → head_3`` (one-minute intervals, each a SELECT over the one before, ``head_1`` over
``beacon_blocks``) runs at the head, as in production: the bench releases one more minute of source data (what the
bounds-cache does when it sees new rows: bounds in Redis, then ``bounds-updated``) each time the previous minute
reached ``head_3``. Per minute:

- latency: from the release to ``head_3``'s ``interval-completed`` for that minute (``completed_at_ms``);
- overhead: latency minus the three jobs' own durations (each completion's ``duration_ms``: the statements as the
  worker timed them) — what the system adds to the work: Kafka hops, planning, leases, admin rows. Target p50 ≤ 1 s.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession

from bench.events import EventRecorder
from bench.report import load_average, summary
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.contract.messages import IntervalCompleted
from cbt.dev.generator import SourceTables, write_blocks
from tests.e2e.harness import T0

MINUTE = 60
LEVELS = ("head_1", "head_2", "head_3")
COLUMNS = "slot BIGINT, slot_start_date_time TIMESTAMP, n BIGINT"
PREDICATE = ("slot_start_date_time >= timestamp_seconds({{ bounds.start }}) "
             "AND slot_start_date_time < timestamp_seconds({{ bounds.end }})")


def model_file(table: str, upstream: str | None) -> str:
    """One level of the chain: one-minute tasks, checked for new data every second."""
    if upstream is None:
        dependency, source = '"{{external}}.beacon_blocks"', '{{ dep["{{external}}"].beacon_blocks.from }}'
        select = "SELECT slot, slot_start_date_time, count(*) AS n"
        group = "GROUP BY slot, slot_start_date_time"
    else:
        name = "{{transformation}}." + upstream
        dependency, source = f'"{name}"', '{{ ref("' + name + '") }}'
        select, group = "SELECT slot, slot_start_date_time, n", ""
    return f"""---
type: incremental
table: {table}
interval:
  max: {MINUTE}
  min: {MINUTE}
  type: timestamp
schedules:
  forwardfill: "@every 1s"
  backfill: ""
dependencies:
  - {dependency}
write:
  strategy: replace
  replace_where: "{PREDICATE}"
---
{select}
FROM {source}
WHERE {PREDICATE}
{group}
"""


def run(bd: BenchDeployment, samples: int, step_timeout_s: float = 120.0) -> dict[str, Any]:
    last = bd.model_id(LEVELS[-1])
    events = EventRecorder(bd.endpoints.kafka, [bd.topics.interval_completed], f"{bd.tag}.bench")
    bd.dep.start("coordinator", "worker")
    events.start()
    released: dict[int, int] = {}
    try:
        bd.wait_ready(workers=1)
        load = load_average()
        bd.release_bounds(T0, T0 + MINUTE)  # warm-up: the first minute, not measured
        events.wait_completed(last, 1, step_timeout_s)
        for sample in range(1, samples + 1):
            start = T0 + sample * MINUTE
            released[start] = bd.release_bounds(T0, start + MINUTE)
            events.wait_completed(last, sample + 1, step_timeout_s)
        time.sleep(0.5)
    finally:
        events.stop()
        bd.dep.stop()
    rows = latencies(released, {bd.model_id(t): events.completions(bd.model_id(t)) for t in LEVELS}, last)
    return {
        "chain": " -> ".join(LEVELS), "samples": len(rows), "load_at_start": load,
        "latency_ms": summary([r["latency"] for r in rows]),
        "jobs_ms": summary([r["jobs"] for r in rows]),
        "overhead_ms": summary([r["latency"] - r["jobs"] for r in rows]),
    }


def latencies(released: dict[int, int], completions: dict[str, list[IntervalCompleted]],
              last: str) -> list[dict[str, int]]:
    """Per released minute: release → the last level's completion, and the three jobs' own durations."""

    def first_covering(model: str, start: int) -> IntervalCompleted | None:
        done = [c for c in completions[model] if c.position is not None and c.interval is not None
                and c.position <= start < c.position + c.interval]
        return min(done, key=lambda c: c.completed_at_ms, default=None)

    rows = []
    for start, released_ms in sorted(released.items()):
        chain = [first_covering(model, start) for model in completions]
        end = first_covering(last, start)
        if end is None or any(c is None for c in chain):
            continue
        jobs = sum(c.duration_ms for c in chain if c is not None)
        rows.append({"start": start, "latency": end.completed_at_ms - released_ms, "jobs": jobs})
    return rows


def benchmark(spark: SparkSession, endpoints: Endpoints, samples: int) -> dict[str, Any]:
    files = {f"{table}.sql": model_file(table, LEVELS[i - 1] if i else None) for i, table in enumerate(LEVELS)}
    bd = deploy(spark, endpoints, "hd", [], model_files=files)
    try:
        for table in LEVELS:
            spark.sql(f"CREATE TABLE {bd.model_id(table)} ({COLUMNS}) USING DELTA")
        write_blocks(spark, SourceTables(bd.dep.source_db), T0, T0 + (samples + 1) * MINUTE)
        return run(bd, samples)
    finally:
        bd.teardown()
