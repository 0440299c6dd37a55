"""(d) Backlog: 300 hourly intervals of a GROUP BY caught up through the whole pipeline, versus the same statement run
directly on the same Spark Connect server — (i) once per interval, in a loop, and (ii) once over the whole range —
each into a Delta table of its own.

The source holds about 2,100 rows per hour (a block every 12 s seen by 7 clients). The pipeline (coordinator and
one worker on Kafka and Redis) starts with every interval missing; it is timed from the first task enqueued to the
last completion, and must leave per-interval coverage: one covered range, every admin row's task boundaries one
hour apart. All three tables must hold the same rows.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession

from bench.events import EventRecorder
from bench.report import load_average, summary
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.adapters.delta_admin import admin_from_config
from cbt.dev.generator import SLOT_S, SourceTables

MODEL = "hourly_buckets"
HOUR = 3600
START = 1_700_002_800
"""A whole hour (``START % 3600 == 0``), so each task's hours are its own."""
CLIENTS = 7
PREDICATE = "hour >= timestamp_seconds({start}) AND hour < timestamp_seconds({end})"
SELECT = """SELECT date_trunc('HOUR', slot_start_date_time) AS hour, proposer_index % 100 AS bucket,
  count(*) AS n, sum(propagation_slot_start_diff) AS total
FROM {source}
WHERE slot_start_date_time >= timestamp_seconds({start}) AND slot_start_date_time < timestamp_seconds({end})
GROUP BY 1, 2"""
MODEL_FILE = f"""---
type: incremental
batch:
  mode: {{mode}}
table: {MODEL}
interval:
  max: {HOUR}
  type: timestamp
schedules:
  forwardfill: "@every 1s"
  backfill: "@every 1s"
dependencies:
  - "{{{{external}}}}.beacon_blocks"
write:
  strategy: replace
  replace_where: "{PREDICATE.format(start='{{ bounds.start }}', end='{{ bounds.end }}')}"
---
{SELECT.format(source='{{ dep["{{external}}"].beacon_blocks.from }}', start='{{ bounds.start }}',
               end='{{ bounds.end }}')}
"""
COLUMNS = "hour TIMESTAMP, bucket INT, n BIGINT, total BIGINT"


def write_source(spark: SparkSession, src: SourceTables, start: int, end: int, clients: int = CLIENTS) -> int:
    spark.sql(f"""
        INSERT INTO {src.table('beacon_blocks')}
        SELECT t DIV {SLOT_S} AS slot, timestamp_seconds(t) AS slot_start_date_time,
               sha2(concat('block-', t), 256) AS block_root, pmod(t DIV {SLOT_S} * 7, 997) AS proposer_index,
               concat('client-', c) AS meta_client_name,
               CAST(pmod(hash(t, c), 6000) AS BIGINT) AS propagation_slot_start_diff
        FROM range({start}, {end}, {SLOT_S}) AS r(t) CROSS JOIN (SELECT explode(sequence(1, {clients})) AS c)
    """)
    return int(spark.sql(f"SELECT count(*) AS n FROM {src.table('beacon_blocks')}").collect()[0]["n"])


def direct(spark: SparkSession, bd: BenchDeployment, table: str, ranges: list[tuple[int, int]]) -> list[float]:
    """Seconds per statement: ``INSERT INTO … REPLACE WHERE`` of the same SELECT, run directly."""
    target = f"{bd.dep.output_db}.{table}"
    spark.sql(f"CREATE TABLE {target} ({COLUMNS}) USING DELTA")
    source = SourceTables(bd.dep.source_db).table("beacon_blocks")
    took = []
    for start, end in ranges:
        began = time.perf_counter()
        spark.sql(f"INSERT INTO {target} REPLACE WHERE {PREDICATE.format(start=start, end=end)}\n"
                  f"{SELECT.format(source=source, start=start, end=end)}").collect()
        took.append(time.perf_counter() - began)
    return took


def pipeline(bd: BenchDeployment, end: int, timeout_s: float) -> dict[str, Any]:
    model_id = bd.model_id(MODEL)
    topics = bd.topics
    events = EventRecorder(bd.endpoints.kafka, [topics.task_requested(), topics.interval_completed], f"{bd.tag}.bench")
    bd.dep.start("coordinator", "worker")
    events.start()
    try:
        bd.wait_ready(1)
        load = load_average()
        released_ms = bd.release_bounds(START, end)
        deadline = time.monotonic() + timeout_s
        while bd.dep.coverage(model_id) != ((START, end),):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{model_id}: covers {bd.dep.coverage(model_id)} after {timeout_s:.0f}s")
            time.sleep(0.05)
        time.sleep(1.0)  # the last interval-completed reaches the recorder
        completions = events.completions(model_id)
        requests = events.requests(model_id)
        first_enqueued = min(r.message.enqueued_at_ms for r in requests)
        wall_ms = max(c.completed_at_ms for c in completions) - first_enqueued
        return {"load_at_start": load, "wall_ms": wall_ms, "tasks": len(requests),
                "intervals_per_task": summary([(c.interval or 0) // HOUR for c in completions]),
                "task_ms": summary([c.duration_ms for c in completions]),
                "release_to_first_enqueue_ms": first_enqueued - released_ms}
    finally:
        events.stop()
        bd.dep.stop()


def differences(spark: SparkSession, left: str, right: str) -> int:
    return sum(int(spark.sql(f"SELECT count(*) AS n FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})")
                   .collect()[0]["n"]) for a, b in ((left, right), (right, left)))


def task_boundaries_are_hourly(bd: BenchDeployment) -> bool:
    """Every admin row records tasks of one hour (coverage is per interval, not one opaque range)."""
    admin = admin_from_config(bd.dep.spark, bd.dep.config)
    pieces = admin.live_pieces([bd.model_id(MODEL)], (START, START + 10**9))[bd.model_id(MODEL)]
    return bool(pieces) and all(piece.step == HOUR for piece in pieces)


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    """The pipeline with the model declaring ``batch.mode: bounds`` (one SELECT over a batch's whole range: safe, the
    SELECT groups by hour inside its range — what SQLMesh assumes of every model) against the direct runs, then once
    more in ``union`` mode (every interval's SELECT in one statement: exact for any replace model, the default)."""
    end = START + intervals * HOUR
    ranges = [(s, s + HOUR) for s in range(START, end, HOUR)]
    bd = deploy(spark, endpoints, "bl", [], model_files={f"{MODEL}.sql": MODEL_FILE.replace("{mode}", "bounds")})
    try:
        rows = write_source(spark, SourceTables(bd.dep.source_db), START, end)
        spark.sql(f"CREATE TABLE {bd.model_id(MODEL)} ({COLUMNS}) USING DELTA")
        loop = direct(spark, bd, "loop", ranges)
        once = direct(spark, bd, "once", [(START, end)])
        ours = pipeline(bd, end, timeout_s=300.0 + 10.0 * intervals)
        output = bd.dep.output_db
        loop_s, once_s = sum(loop), once[0]
        result: dict[str, Any] = {
            "intervals": intervals, "source_rows": rows, "rows_per_hour": rows // intervals,
            "loop_s": round(loop_s, 2), "loop_per_interval_ms": summary([s * 1000 for s in loop]),
            "one_statement_s": round(once_s, 2), "pipeline": ours,
            "pipeline_per_interval_ms": round(ours["wall_ms"] / intervals, 1),
            "ratio_vs_loop": round(ours["wall_ms"] / 1000 / loop_s, 3),
            "ratio_vs_one_statement": round(ours["wall_ms"] / 1000 / once_s, 2),
            "differences_vs_one_statement": differences(spark, f"{output}.{MODEL}", f"{output}.once"),
            "differences_loop_vs_one_statement": differences(spark, f"{output}.loop", f"{output}.once"),
            "per_interval_coverage": task_boundaries_are_hourly(bd),
        }
        result["union_mode"] = other_mode("union", spark, endpoints, end, f"{output}.once", (loop_s, once_s), intervals)
        return result
    finally:
        bd.teardown()


def other_mode(mode: str, spark: SparkSession, endpoints: Endpoints, end: int, oracle: str,
               direct_s: tuple[float, float], intervals: int) -> dict[str, Any]:
    """The same backlog in another ``batch.mode``."""
    bd = deploy(spark, endpoints, "blu", [], model_files={f"{MODEL}.sql": MODEL_FILE.replace("{mode}", mode)})
    try:
        write_source(spark, SourceTables(bd.dep.source_db), START, end)
        spark.sql(f"CREATE TABLE {bd.model_id(MODEL)} ({COLUMNS}) USING DELTA")
        ours = pipeline(bd, end, timeout_s=300.0 + 10.0 * intervals)
        return {"pipeline": ours, "ratio_vs_loop": round(ours["wall_ms"] / 1000 / direct_s[0], 3),
                "ratio_vs_one_statement": round(ours["wall_ms"] / 1000 / direct_s[1], 2),
                "differences_vs_one_statement": differences(spark, bd.model_id(MODEL), oracle),
                "per_interval_coverage": task_boundaries_are_hourly(bd)}
    finally:
        bd.teardown()
