"""(g) Catch-up of the example pipeline: the demo's 15-minute backlog, every model, from nothing to caught up.

What ``make demo`` does first: source rows for the last 15 minutes exist, the services start, and the pipeline
catches up. Reported:

- time to catch up: from the moment the demo's feed starts writing the backlog — what a user's ``make demo`` does
  first — until quiet (every source scanned, nothing in flight or plannable), and from the first task enqueued to
  the last completion;
- the start timeline of every service (its ``/readyz`` milestones, seconds since its process started): how long
  from launching the services to the worker's first task;
- work per covered position, per model: the positions every completed task computed (re-runs and widened tasks
  count again) over the positions the model covers at the end. 1.0 means each position was computed once;
- the tables equal the independent oracle (``tests/e2e/oracle.py``: SQL written in the test over the sources) and
  cover the range the source data implies.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pyspark.sql import SparkSession
from redis import Redis

from bench.events import EventRecorder
from bench.report import load_average
from bench.stack import Endpoints
from cbt.adapters.kafka_admin import delete_topics
from cbt.contract.topics import Topics
from tests.e2e.harness import PROJECT, T0, Deployment, overrides_for
from tests.e2e.oracle import IndependentOracle

BACKLOG_S = 900
LAST_SLOT_END = T0 + BACKLOG_S - 12 + 1
SETTLE_S = 3.0


def work_per_position(dep: Deployment, events: EventRecorder) -> dict[str, dict[str, Any]]:
    out = {}
    for model in dep.healthy_incrementals():
        computed = sum(c.interval or 0 for c in events.completions(model.id))
        covered = sum(end - start for start, end in dep.coverage(model.id))
        out[model.table] = {"computed_positions": computed, "covered_positions": covered,
                            "tasks": len(events.completions(model.id)),
                            "work_per_covered_position": round(computed / covered, 3) if covered else None}
    return out


def oracle_verdict(dep: Deployment) -> dict[str, Any]:
    """Every table against SQL written in the test, over the range its sources imply (``IndependentOracle``)."""
    oracle = IndependentOracle(dep.spark, dep.source_db, dep.output_db)
    return oracle.verdict({m.table: dep.coverage(m.id) for m in dep.healthy_incrementals()})


def benchmark(spark: SparkSession, endpoints: Endpoints) -> dict[str, Any]:
    tag = f"bncu{uuid.uuid4().hex[:6]}"
    redis = Redis.from_url(endpoints.redis_url)
    overrides = overrides_for(tag, endpoints.kafka, endpoints.redis_url, endpoints.spark_remote)
    dep = Deployment(spark, redis, overrides, PROJECT / "var" / "bench" / tag / "logs")
    topics = Topics(dep.config.kafka.topic_prefix)
    try:
        dep.create_tables()
        events = EventRecorder(endpoints.kafka, [topics.task_requested(), topics.interval_completed], f"{tag}.bench")
        load = load_average()
        started = time.monotonic()  # the demo's command: its feed writes the backlog, then the services start
        dep.write_entities()
        dep.write_sources(T0, T0 + BACKLOG_S)
        feed_s = time.monotonic() - started
        dep.start()
        starting_s = time.monotonic() - started
        try:
            events.start()  # (reads from the earliest offset: the services create the topics as they start)
            caught_up_s = starting_s + dep.wait_quiet(LAST_SLOT_END, timeout_s=900.0, settle_s=SETTLE_S) - SETTLE_S
            time.sleep(1.0)  # the last interval-completed reaches the recorder
            timeline = dep.procs.start_timeline()
        finally:
            events.stop()
            dep.stop()
        requests = [s.message.enqueued_at_ms for s in events.requested]
        completions = [c.completed_at_ms for m in dep.healthy_incrementals() for c in events.completions(m.id)]
        work = work_per_position(dep, events)
        return {
            "backlog_s": BACKLOG_S, "load_at_start": load, "models": len(work),
            "start_to_caught_up_s": round(caught_up_s, 1), "of_which_feed_writing_the_backlog_s": round(feed_s, 1),
            "first_task_to_last_completion_s": round((max(completions) - min(requests)) / 1000, 1),
            "work_per_covered_position": work,
            "worst_work_per_covered_position": max(w["work_per_covered_position"] or 0 for w in work.values()),
            "oracle": oracle_verdict(dep),
            "start_timeline": timeline,
        }
    finally:
        for database in dep.databases():
            spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        keys = list(redis.scan_iter(match=f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        delete_topics(endpoints.kafka, topics.all(("default", *dep.config.worker.pools)))
        redis.close()
