"""(h) Mixed pipeline: nine models of every shape catching up a backlog while data keeps arriving, on 2 cores.

The pipeline (``bench/mixed_pipeline``): a 60 → 300 → 900 chain whose first level is an AND of two externals and
whose last level also reads a scheduled ``* * * * *`` model; an ``append`` + ``unique_key`` model; a
``write.strategy: sql`` model; an exec model (Python over Spark Connect) in a worker pool of its own; a head model
with partial intervals; a tail-fill model from ``limits.min``. Data (``bench/mixed_data.py``): a 35-minute backlog, a
growing head whose last seconds arrive late, a source that stalls and catches up in one late batch, older history
last. Services: ``cbt run`` coordinator, worker (pool default), worker (pool python), bounds-cache, invalidator — five
processes — while a client runs ``cbt status --json`` and ``cbt plan --json`` every 3 s.

Reported (never asserted; ``bench.judged`` gives each target its verdict):

- start to quiet: from starting the services until nothing is in flight or plannable and every source's bounds
  announced, held for ``SETTLE_S`` (as bench (g) decides it). Target ≤ 4 min; after ``timeout_s``: "not quiet";
- per model: tasks, positions computed (re-runs and widened tasks count again) per covered position (≤ 1.1), the
  median job time under load (the completions' ``duration_ms`` of the tasks exactly as long as the alone run, n
  stated) against the same task run alone on the quiet server afterwards (≤ 3 times);
- the chain's freshness while busy (``bench.mixed_freshness``): from the write that made an interval of the chain
  ready to each level's completion of it, and the last level's time beyond the three jobs' own (≤ 5 s);
- the most Spark statements executing at once (``bench.mixed_probes``: pluggable probes, and the workers' spans);
- admin commit times (``cbt_admin_commit_duration_seconds`` from the workers, and the ``admin commit`` spans), the
  command-line client's wall times, the load average over the run, and every table against the independent oracle
  (``bench.mixed_expected``: SQL written apart from the product, over the range the sources imply).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from redis import Redis

from bench import mixed_alone as alone
from bench import mixed_data as data
from bench.events import EventRecorder
from bench.mixed_expected import MIXED
from bench.mixed_freshness import CHAIN, Source, Write, chain_freshness
from bench.mixed_probes import (
    AdmissionPermits,
    CliClient,
    Sampler,
    Scrape,
    SparkUiRunningJobs,
    WorkerTasksRunning,
    cpu_by_group,
    cpu_used,
    histogram,
    read_spans,
    span_overlap,
)
from bench.report import load_average, summary
from bench.stack import Endpoints
from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_admin import delete_topics
from cbt.contract.messages import IntervalCompleted, now_ms
from cbt.contract.topics import Topics
from cbt.dev.ddl import apply_ddl
from cbt.dev.generator import SLOT_S, SourceTables
from cbt.dev.pipeline import ServiceProcesses
from cbt.models.spec import IncrementalModel, ScheduledModel, Transformation
from cbt.planning.live import LiveStateReader
from cbt.scheduling import coverage as cov
from cbt.scheduling.plan import plan_model
from tests.e2e.harness import CONFIG, PROJECT, Deployment, overrides_for, traces_dir
from tests.e2e.oracle import IndependentOracle

PIPELINE = Path(__file__).resolve().parent / "mixed_pipeline"
SETTLE_S = 3.0
TIMED_SOURCES = ("beacon_blocks", "raw_transactions")


def overrides(tag: str, endpoints: Endpoints) -> dict[str, str]:
    return {
        **overrides_for(tag, endpoints.kafka, endpoints.redis_url, endpoints.spark_remote),
        "CBT__MODELS__EXTERNAL__PATHS": f"[{PIPELINE / 'external'}]",
        "CBT__MODELS__TRANSFORMATIONS__PATHS": f"[{PIPELINE / 'transformations'}]",
        "CBT__TELEMETRY__STATUS_INTERVAL_S": "15",  # the default (the e2e harness refreshes the gauges every 2 s)
        "CBT__WORKER__CONSUME": '["default"]',
    }


def is_quiet(dep: Deployment, final: tuple[int, int]) -> bool:
    """Every timed source's bounds announced over ``final``, nothing in flight, nothing plannable."""
    externals = [m.id for m in dep.models.externals if m.table in TIMED_SOURCES]
    bounds = dep.state.bounds.bounds(externals)
    if len(bounds) < len(externals) or any(b.min > final[0] or b.max < final[1] for b in bounds.values()):
        return False
    return not pending(dep)


def pending(dep: Deployment) -> dict[str, Any]:
    """Per model with work left: its in-flight ranges and the tasks it would plan now."""
    incrementals = dep.healthy_incrementals()
    snapshot = LiveStateReader.of(dep.models, dep.state).read_snapshot([m.id for m in incrementals])
    if not snapshot.coverage_known:
        return {"*": "coverage index not built"}
    out: dict[str, Any] = {}
    for model in incrementals:
        plan = plan_model(model, dep.models.models, snapshot, concurrency=dep.config.worker.model_concurrency)
        if snapshot.in_flight.get(model.id) or plan.tasks:
            out[model.table] = {"in_flight": [list(r) for r in snapshot.in_flight.get(model.id, ())],
                                "planned": [[t.position, t.interval, t.direction] for t in plan.tasks],
                                "waiting": plan.waiting}
    return out


def wait_quiet(dep: Deployment, procs: list[ServiceProcesses], driver: data.DataDriver, started: float,
               timeout_s: float) -> float | None:
    """Seconds from ``started`` until quiet (held ``SETTLE_S``), or ``None`` after ``timeout_s``."""
    final = data.final_bounds()
    quiet_since: float | None = None
    while time.monotonic() - started < timeout_s:
        crashed = {k: v for p in procs for k, v in p.exited().items()}
        if crashed or driver.error is not None:
            raise RuntimeError(f"services exited: {crashed}; data: {driver.error}; logs in {dep.log_dir}")
        if driver.is_finished and is_quiet(dep, final):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= SETTLE_S:
                return quiet_since - started
        else:
            quiet_since = None
        time.sleep(0.5)
    return None


def work(model: IncrementalModel, done: list[IntervalCompleted], covered: cov.Coverage,
         started_ms: int) -> dict[str, Any]:
    """Tasks, positions computed per covered position, how much of it recomputed positions computed before, and each
    task (position from T0, length, direction, seconds from the services' start to its completion)."""
    seen: cov.Coverage = cov.EMPTY
    recomputed = overlapping = 0
    for c in sorted(done, key=lambda c: c.completed_at_ms):
        rng = (c.position or 0, (c.position or 0) + (c.interval or 0))
        again = cov.size(cov.clip(seen, rng))
        recomputed += again
        overlapping += again > 0
        seen = cov.add(seen, rng)
    computed = sum(c.interval or 0 for c in done)
    size = cov.size(covered)
    return {
        "tasks": len(done), "computed_positions": computed, "covered_positions": size,
        "work_per_covered_position": round(computed / size, 3) if size else None,
        "tasks_recomputing_positions": overlapping, "positions_recomputed": recomputed,
        "directions": dict(Counter(c.direction for c in done)),
        "task_lengths": dict(sorted(Counter(c.interval or 0 for c in done).items())),
        "coverage_from_t0": [[s - data.T0, e - data.T0] for s, e in covered],
        "last_completed_s": round((max(c.completed_at_ms for c in done) - started_ms) / 1000, 1) if done else None,
        "tasks_from_t0": [[(c.position or 0) - data.T0, c.interval, c.direction[0],
                           round((c.completed_at_ms - started_ms) / 1000, 1)]
                          for c in sorted(done, key=lambda c: c.completed_at_ms)][:400],
    }


def under_load(done: list[IntervalCompleted], length: int | None) -> dict[str, Any]:
    """Median ``duration_ms`` of the tasks exactly as long as the alone run (every run of a scheduled model), and how
    many there were: like is compared with like, and too few samples is judged "not measured"."""
    same = [c.duration_ms for c in done if length is None or c.interval == length]
    return {"median_ms": summary(same).get("p50"), "n": len(same), "interval": length}


def code_under_test() -> dict[str, Any]:
    """Which checkout the services import ``cbt`` from (PYTHONPATH may point at another worktree), and its commit."""
    import cbt.scheduling.plan as plan_module

    root = Path(plan_module.__file__).resolve().parents[3]
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False,
                              timeout=10).stdout.strip()

    changed = git("status", "--porcelain", "--", "shared", "services", "dev").splitlines()
    return {"checkout": str(root), "commit": git("rev-parse", "--short", "HEAD"), "uncommitted_files": len(changed)}


def cli_commands() -> dict[str, list[str]]:
    script = Path(sys.executable).with_name("cbt")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "cbt.cli"]
    return {name: [*base, name, "--json", "--config", str(CONFIG)] for name in ("status", "plan")}


def scrapes(procs: dict[str, ServiceProcesses]) -> list[Callable[[], Scrape]]:
    """One ``/metrics`` scrape per process, keyed as ``ServiceProcesses`` knows it."""
    return [partial(p.metrics, k) for k, p in procs.items()]


def benchmark(spark: SparkSession, endpoints: Endpoints, timeout_s: float = 1200.0) -> dict[str, Any]:
    tag = f"bnmx{uuid.uuid4().hex[:6]}"
    redis = Redis.from_url(endpoints.redis_url)
    env = overrides(tag, endpoints)
    dep = Deployment(spark, redis, env, PROJECT / "var" / "bench" / tag / "logs")
    python_pool = ServiceProcesses(CONFIG, {**env, "CBT__WORKER__CONSUME": '["python"]'}, dep.log_dir)
    topics = Topics(dep.config.kafka.topic_prefix)
    pools = ("default", *dep.config.worker.pools)
    try:
        apply_ddl(spark, PIPELINE / "ddl", dep.source_db, dep.output_db)
        admin_from_config(spark, dep.config).ensure_tables()  # services starting together race on CREATE TABLE
        sources = data.Sources(spark, SourceTables(dep.source_db))
        sources.backlog()
        return run(dep, python_pool, sources, topics, tag, timeout_s)
    finally:
        dep.stop()
        python_pool.stop_all()
        for database in dep.databases():
            spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        keys = list(redis.scan_iter(match=f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        delete_topics(endpoints.kafka, topics.all(pools))
        redis.close()


def run(dep: Deployment, python_pool: ServiceProcesses, sources: data.Sources, topics: Topics, tag: str,
        timeout_s: float) -> dict[str, Any]:
    workers = {"worker": dep.procs, "worker-python": python_pool}
    events = EventRecorder(dep.config.kafka.bootstrap_servers,
                           [topics.task_requested(p) for p in ("default", *dep.config.worker.pools)]
                           + [topics.interval_completed], f"{tag}.bench")
    cli = CliClient(cli_commands(), {**dep.procs.env()}, PROJECT)
    sampler = Sampler([WorkerTasksRunning(scrapes(workers)), AdmissionPermits.of(dep.config, dep.redis),
                       SparkUiRunningJobs()])
    load_at_start, cpu_at_start = load_average(), cpu_by_group()
    started, started_ms = time.monotonic(), now_ms()
    for name in ("coordinator", "worker", "bounds-cache", "invalidator"):
        dep.procs.start(name)
    python_pool.start("worker", "-python")
    driver = data.DataDriver(sources, started)
    driver.start()
    try:
        events.start()
        cli.start()
        sampler.start()
        quiet_s = wait_quiet(dep, [dep.procs, python_pool], driver, started, timeout_s)
        left = {} if quiet_s is not None else pending(dep)
        metrics = [scrape() for scrape in scrapes(workers)]
        others = [partial(dep.procs.metrics, name) for name in ("coordinator", "bounds-cache", "invalidator")]
        service_metrics = [*metrics, *(scrape() for scrape in others)]
        cpu = cpu_used(cpu_at_start, cpu_by_group(), time.monotonic() - started)
        timeline = {**dep.procs.start_timeline(),
                    **{f"{k} (pool python)": v for k, v in python_pool.start_timeline().items()}}
    finally:
        cli.stop()
        sampler.stop()
        driver.join(60)
        dep.stop()
        python_pool.stop_all()
        time.sleep(1.0)  # the last interval-completed reaches the recorder
        events.stop()
    load_at_quiet = load_average()
    report = {
        "code": code_under_test(), "processes": ["coordinator", "worker (pool default)", "worker (pool python)",
                                                 "bounds-cache", "invalidator"],
        "data": {"t0": data.T0, "backlog_s": data.BACKLOG_S, "history_s": data.HISTORY_S,
                 "final_bounds": data.final_bounds(), "writes": driver.done},
        "quiet": quiet_s is not None, "start_to_quiet_s": None if quiet_s is None else round(quiet_s, 1),
        "gave_up_after_s": None if quiet_s is not None else timeout_s, "left_when_given_up": left,
        "load_average": {"at_start": load_at_start, "at_quiet_or_timeout": load_at_quiet,
                         "during_run": sampler.load},
        "cli": cli.report(),
        "cpu_start_to_quiet": cpu,
        "start_timeline": timeline,
        "max_concurrent_statements": {
            "probes": sampler.report(),
            "spans": span_overlap(spans := read_spans(traces_dir(tag)), {"spark job", "script"}),
            "spans_with_admin_commits": span_overlap(spans, {"spark job", "script", "admin commit"}),
        },
        "admin_commit": {"metric_cbt_admin_commit_duration_seconds":
                         histogram(metrics, "cbt_admin_commit_duration_seconds").get("all"),
                         "spans": span_overlap(spans, {"admin commit"})["duration_ms"]},
        "spark_job_metric_by_model": histogram(metrics, "cbt_spark_job_duration_seconds", by="model"),
        "admission_wait_by_priority": histogram(service_metrics, "cbt_spark_admission_wait_seconds", by="priority"),
        "bounds_scan_by_model": histogram(service_metrics, "cbt_bounds_scan_duration_seconds", by="model"),
    }
    report["chain_freshness"] = chain(dep, events, driver)
    report["models"], report["oracle"] = per_model(dep, events, started_ms)
    return report


def chain(dep: Deployment, events: EventRecorder, driver: data.DataDriver) -> dict[str, Any]:
    """The chain's freshness while busy (``bench.mixed_freshness``): per interval made ready after the start, each
    level's seconds from the write to its completion, and the last level's beyond the three jobs' own time."""
    by_table = {m.table: m for m in dep.healthy_incrementals()}
    completions = {level: events.completions(by_table[level].id) for level in CHAIN if level in by_table}
    held = {"beacon_blocks": data.T0 + data.BACKLOG_S, "raw_transactions": data.TRANSACTIONS_BACKLOG_END}
    sources = {m.table: Source(m.lag, held[m.table]) for m in dep.models.externals if m.table in held}
    writes = [Write(ms, source, end) for ms, source, end in driver.landed]
    intervals = chain_freshness(completions, writes, sources, SLOT_S, data.T0)
    return {"intervals": intervals,
            "last_level_beyond_jobs_s": summary([i["last_level_beyond_jobs_s"] for i in intervals])}


def per_model(dep: Deployment, events: EventRecorder,
              started_ms: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Work and job times under load per transformation (from the run), then the oracle's differences and the jobs
    alone (after it: a failure there keeps what the run measured)."""
    covered = {m.table: dep.coverage(m.id) for m in dep.healthy_incrementals()}
    out: dict[str, Any] = {}
    models: list[Transformation] = [*dep.healthy_incrementals(),
                                    *(m for m in dep.models.scheduled if isinstance(m, ScheduledModel))]
    for model in models:
        done = events.completions(model.id)
        if isinstance(model, IncrementalModel):
            out[model.table] = {"kind": "incremental", **work(model, done, covered[model.table], started_ms)}
        else:
            out[model.table] = {"kind": "scheduled", "tasks": len(done),
                                "runs_completed_s": [round((c.completed_at_ms - started_ms) / 1000, 1) for c in done]}
        out[model.table]["_done"] = done
    try:
        oracle = after_the_run(dep, covered, out)
    except Exception as e:  # reported beside what the run measured (the oracle's verdict is then "not measured")
        out["_after_the_run_error"] = f"{type(e).__name__}: {e}"
        oracle = {}
    for entry in out.values():
        if isinstance(entry, dict):
            entry.pop("_done", None)
    return out, oracle


def after_the_run(dep: Deployment, covered: dict[str, cov.Coverage], out: dict[str, Any]) -> dict[str, Any]:
    """Every table against SQL written apart from the product over the range its sources imply (returned), then each
    model's job alone on the quiet server for the task length most common under load (``out`` by table)."""
    verdict = IndependentOracle(dep.spark, dep.source_db, dep.output_db, MIXED).verdict(covered)
    for table, differences in verdict["differences"].items():
        out[table]["oracle_differences"] = differences
    runner = alone.Runner.load(dep.spark, CONFIG, dep.overrides)
    for model in runner.transformations():
        entry = out[model.table]
        rng = None
        if isinstance(model, IncrementalModel):
            rng = alone.alone_interval([c.interval or 0 for c in entry["_done"]], covered[model.table])
            if rng is None:
                continue
        entry["alone"] = alone.time_alone(runner, model, rng, data.T0)
        entry["under_load"] = under_load(entry["_done"], None if rng is None else rng[1] - rng[0])
        load_ms, alone_ms = entry["under_load"]["median_ms"], entry["alone"]["median_ms"]
        entry["under_load_vs_alone"] = round(load_ms / alone_ms, 2) if load_ms and alone_ms else None
    return verdict
