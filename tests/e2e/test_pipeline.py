"""The example pipeline on real Kafka, Redis and Spark: it catches up, and every derived table equals the oracle
(the same SQL run once over the whole range) — also after duplicates and crashes."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from confluent_kafka import Producer

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.base.cron import next_fire
from cbt.contract.messages import TaskRequested
from cbt.dev.generator import SourceTables, write_blocks
from cbt.dev.spark_cluster import alive_workers
from cbt.models.spec import ScheduledModel
from cbt.scheduling.coverage import covers
from cbt.state.admin_records import CONSOLIDATED
from tests.e2e.cluster import BACKENDS, Crash, SparkBackend, StandaloneCluster
from tests.e2e.harness import T0, Deployment
from tests.e2e.oracle import IndependentOracle
from tests.e2e.traces import cascades, read_spans

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
SOURCE_END = T0 + 600
LAST_SLOT_END = SOURCE_END - 12 + 1
"""Bounds max of the sources: one past the newest slot's second."""


def assert_equals_oracle(dep: Deployment, *, every_fire_time: bool = True) -> None:
    """The end of every e2e: each derived table covers exactly the range its sources imply and equals the tables
    computed by SQL written in the test (``tests/e2e/oracle.py``, never the product's renderer), the admin tables
    say what the live index says, and each scheduled model ran once per fire time (every fire time, unless the
    coordinator was down meanwhile)."""
    assert_equals_independent_oracle(dep)
    assert_admin_tables_equal_the_live_index(dep)
    assert_scheduled_runs_once_per_fire_time(dep, every_fire_time)


def assert_equals_independent_oracle(dep: Deployment) -> None:
    oracle = IndependentOracle(dep.spark, dep.source_db, dep.output_db)
    actual = {}
    for model in dep.healthy_incrementals():
        coverage = dep.coverage(model.id)
        assert len(coverage) == 1, f"{model.table}: expected one covered range, got {coverage}"
        actual[model.table] = (coverage[0][0], coverage[0][1])
    assert oracle.coverage_problems(actual) == [], f"T0 is {T0}"
    for table, span in actual.items():
        assert oracle.differences(table, span) == (0, 0), f"{table} differs from the oracle"


def assert_admin_tables_equal_the_live_index(dep: Deployment) -> None:
    """What a rebuild would load (coverage and sequences) is what the quiet system holds in Redis."""
    ids = [m.id for m in dep.healthy_incrementals()]
    admin = admin_from_config(dep.spark, dep.config)
    durable, seqs = admin.coverage(ids), admin.invalidation_seqs(ids)
    for model_id in ids:
        assert durable[model_id] == dep.coverage(model_id), f"{model_id}: admin tables and live index differ"
        assert seqs.get(model_id, 0) == dep.state.coverage.invalidation_seq(model_id), f"{model_id}: sequence"


def assert_scheduled_runs_once_per_fire_time(dep: Deployment, every_fire_time: bool) -> None:
    admin = admin_from_config(dep.spark, dep.config)
    for model in dep.models.scheduled:
        assert isinstance(model, ScheduledModel)
        fired = [run.scheduled_unix for run in admin.scheduled_runs(model.id, limit=10_000) if run.status == "success"]
        assert fired, f"{model.id} never ran"
        repeated = sorted({t for t in fired if fired.count(t) > 1})
        assert not repeated, f"{model.id} ran more than once for fire times {repeated}"
        if every_fire_time:
            expected, t = [], min(fired)
            while t <= max(fired):
                expected.append(t)
                t = next_fire(model.schedule, t)
            assert sorted(fired) == expected, f"{model.id} missed fire times {sorted(set(expected) - set(fired))}"


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
    assert_metrics_follow_the_work(dep)
    assert_a_trace_follows_a_cascade(dep)

    published_ms = int(time.time() * 1000)
    assert publish_duplicates(dep, 12) >= 6
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)
    assert _runs_ending_before(dep, SOURCE_END, since_ms=published_ms) == 0, "covered intervals ran again"
    skipped = sum(value for (name, labels), value in dep.metrics("worker").items()
                  if name == "cbt_tasks_total" and ("status", "already-covered") in labels)
    assert skipped >= 6, "the duplicates are counted as skipped tasks"


def assert_metrics_follow_the_work(dep: Deployment) -> None:
    """Scraped from the running services once caught up: the worker counts the positions it covered (a model's
    covered length, up to the few a short gap widened to ``interval.min`` re-runs) and has no task message left
    uncommitted; the leading coordinator enqueued tasks for every model, says it leads, and reports every model's
    lag and backlog back at ~0. Labels are model ids, statuses and such: never a position or a task id."""
    worker, coordinator = dep.metrics("worker"), dep.metrics("coordinator")
    for model in dep.healthy_incrementals():
        covered = sum(end - start for start, end in dep.coverage(model.id))
        done = worker.get(("cbt_positions_completed_total", frozenset({("model", model.id)})), 0)
        assert covered <= done <= 1.25 * covered, f"{model.id}: {done} positions completed, {covered} covered"
        enqueued = sum(v for (name, labels), v in coordinator.items()
                       if name == "cbt_tasks_enqueued_total" and ("model", model.id) in labels)
        assert enqueued >= 1, f"{model.id}: no task enqueued"
    assert coordinator[("cbt_leader", frozenset())] == 1
    scans = dep.metrics("bounds-cache")
    for model in dep.models.externals:
        changed = sum(v for (name, labels), v in scans.items() if name == "cbt_bounds_scans_total"
                      and ("model", model.id) in labels and ("result", "changed") in labels)
        stored = dep.state.bounds.bounds([model.id]).get(model.id)
        assert (changed >= 1) == (stored is not None), f"{model.id}: {changed} scans changed bounds {stored}"
    assert_gauges_settle(dep)
    labels = {label for series in (worker, coordinator, scans) for name, labelset in series
              if name.startswith("cbt_") for label, _ in labelset}
    assert labels <= {"model", "status", "direction", "le", "component", "error_type", "result", "pool",
                      "bound_type", "scan", "priority", "worker", "operation", "queue", "check"}, labels


def assert_a_trace_follows_a_cascade(dep: Deployment, timeout_s: float = 15.0) -> None:
    """The spans the processes exported (W3C trace context in the Kafka headers) follow a cascade: one trace from
    the coordinator's publish of a task, through a worker's Spark job, admin commit and completion, to the
    coordinator processing that completion; its dependents' ``plan`` (a trace of its own, linked to that) publishes
    a dependent's task."""
    deadline = time.monotonic() + timeout_s
    while not (chains := cascades(read_spans(dep.log_dir / "traces"), dep.config.kafka.topic_prefix)):
        assert time.monotonic() < deadline, "no trace spans a cascade"
        time.sleep(1)
    for chain in chains:
        assert len({span.trace_id for span in chain[:6]}) == 1, "one trace from the publish to the completion"
        process, dependent = chain[1], chain[-1]
        model = str(process.attributes["cbt.model"])
        enqueued = str(dependent.attributes["messaging.kafka.message.key"]).rsplit(":", 2)[0]
        assert enqueued in {model, *dep.models.dependents(model)}, f"{model} completed, then {enqueued} enqueued"
    assert any(str(chain[-1].attributes["messaging.kafka.message.key"]).rsplit(":", 2)[0] != chain[1].attributes[
        "cbt.model"] for chain in chains), "no cascade reached a dependent"


def assert_gauges_settle(dep: Deployment, timeout_s: float = 90.0) -> None:
    """The gauges are refreshed every ``telemetry.status_interval`` (2 s here): soon after quiet, every model's lag
    is under one interval, its backlog empty, and the workers' task partitions fully committed. "Soon" allows for a
    scheduled model's run (every minute here), which holds its message uncommitted while it runs and, on a loaded
    machine, through a retry's backoff; the failure names what the worker was running."""
    deadline = time.monotonic() + timeout_s
    while True:
        lag = {dict(labels)["model"]: value for labels, value in dep.series("coordinator",
                                                                             "cbt_model_lag_positions").items()}
        backlog = dep.series("coordinator", "cbt_model_backlog_intervals")
        consumer_lag = dep.series("coordinator", "cbt_consumer_lag_messages")
        behind = {m.id: lag.get(m.id) for m in dep.healthy_incrementals()
                  if lag.get(m.id) is None or lag[m.id] >= m.interval.max}
        if not behind and not any(backlog.values()) and consumer_lag and not any(consumer_lag.values()):
            return
        running = {dict(labels).get("model"): value
                   for labels, value in dep.series("worker", "cbt_tasks_running").items() if value}
        assert time.monotonic() < deadline, (f"lag {behind}, backlog {backlog}, consumer lag {consumer_lag}, "
                                             f"worker running {running}; logs in {dep.log_dir}")
        time.sleep(1)


@pytest.mark.parametrize("spark_backend", BACKENDS, indirect=True)
def test_worker_killed_mid_task_and_coordinator_restarted_still_converge(
    deployment: Deployment, spark_backend: SparkBackend
) -> None:
    """On a Spark standalone cluster, the Spark worker and its executor are SIGKILLed too while the executor runs a
    task of the pipeline's, and the worker comes back with the services."""
    dep, cluster = deployment, spark_backend.cluster
    dep.write_entities()
    dep.write_sources(T0, T0 + 300)
    dep.start("coordinator", "bounds-cache", "worker")
    _wait_for_running_task(dep, timeout_s=300.0)  # a cold Connect server and executor take longer to the first task
    crash = cluster.crash_worker_mid_task() if cluster else None
    dep.procs.kill("worker", signal.SIGKILL)
    dep.procs.kill("coordinator", signal.SIGKILL)
    if cluster:
        cluster.restart_worker()
    dep.write_sources(T0 + 300, SOURCE_END)  # data keeps arriving while they are down
    dep.start("worker", "coordinator")
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep, every_fire_time=False)  # fire times while the coordinator was down collapse into one
    if cluster and crash:
        assert_the_work_ran_on_the_cluster(dep, cluster, crash)


def assert_the_work_ran_on_the_cluster(dep: Deployment, cluster: StandaloneCluster, crash: Crash) -> None:
    """The Connect server's master is the standalone one, which lists its application and a worker registered anew
    after the crash; the executors ran every task (the driver none): the crashed one up to the crash, its
    replacement the rest."""
    assert dep.spark.conf.get("spark.master") == cluster.cluster.master_url
    master = cluster.master()
    assert [app["id"] for app in master["activeapps"]] == [cluster.app_id()]
    (worker,) = alive_workers(master)
    assert worker["id"] != crash.worker_id and worker["coresused"] > 0, worker
    executors = {e["id"]: e for e in cluster.executors()}
    assert executors["driver"]["totalTasks"] == 0, "tasks ran in the driver"
    assert not executors[crash.executor_id]["isActive"], "the crashed executor is still counted alive"
    assert executors[crash.executor_id]["completedTasks"] > 0, "the crashed executor had run nothing"
    replacements = [e for e in executors.values() if e["id"] not in ("driver", crash.executor_id) and e["isActive"]]
    assert replacements and sum(e["completedTasks"] for e in replacements) > 0, executors


def _wait_for_running_task(dep: Deployment, timeout_s: float = 120.0) -> None:
    """Until some task holds its lease (a worker is in the middle of it)."""
    async def poll() -> None:
        async with asyncio.timeout(timeout_s):
            while not list(dep.redis.scan_iter(match=f"{dep.config.redis.key_prefix}lease:task:*")):
                await asyncio.sleep(0.05)

    asyncio.run(poll())


def test_an_invalidation_while_its_range_runs_then_redis_emptied_converges(deployment: Deployment) -> None:
    """An upstream rewrite is announced while a task over the rewritten range is running, and Redis is emptied
    right after the event is applied: the running task must not count, the rebuild must not restore the range,
    and nothing completed outside the invalidated ranges runs again."""
    dep = deployment
    dep.write_entities()
    dep.write_sources(T0, T0 + 300)
    dep.start("coordinator", "worker", "bounds-cache", "invalidator")
    running = _wait_for_running_task_in(dep, (T0 + 60, T0 + 240))
    first = max(running[0], T0 + 60)  # a minute of the running task's range (a batch may start before the window)
    reorg = (first - (first - T0) % 60, first - (first - T0) % 60 + 60)
    write_blocks(dep.spark, SourceTables(dep.source_db), *reorg, version=1)
    event_id = publish_invalidation(dep.config.kafka.bootstrap_servers, "beacon_blocks", *reorg, reason="reorg",
                                    source="e2e", id=f"reorg:{reorg[0]}", topic_prefix=dep.config.kafka.topic_prefix)
    dep.wait_applied(event_id)
    ids = [m.id for m in dep.models.incrementals]
    in_flight = dep.state.ledger.in_flight(ids, 0)
    done_before = admin_from_config(dep.spark, dep.config).coverage(ids)  # durable: only grows from here on
    flushed_ms = int(time.time() * 1000)
    dep.redis.delete(*dep.redis.scan_iter(match=f"{dep.config.redis.key_prefix}*"))  # coverage, ledger, leases, …
    dep.write_sources(T0 + 300, SOURCE_END)
    dep.wait_quiet(LAST_SLOT_END)
    assert_equals_oracle(dep)

    (record,) = admin_from_config(dep.spark, dep.config).invalidations()
    assert record.affected, "the event reached the derived models"
    running = {(m, t.range) for m, tasks in in_flight.items() for t in tasks}  # their claims went with Redis
    again = [(m, s, e) for m, s, e in _runs_since(dep, flushed_ms)
             if covers(done_before[m], (s, e)) and (m, (s, e)) not in running
             and not any(s < r.end and r.start < e for r in record.affected.get(m, ()))]
    assert again == [], "intervals completed outside the invalidated ranges ran again after Redis was emptied"


def _wait_for_running_task_in(dep: Deployment, window: tuple[int, int], timeout_s: float = 240.0) -> tuple[int, int]:
    """The range of a task of a derived model that a worker is running over part of ``window`` (its lease is
    held)."""
    derived = [m.id for m in dep.models.incrementals]
    prefix = dep.config.redis.key_prefix

    async def poll() -> tuple[int, int]:
        async with asyncio.timeout(timeout_s):
            while True:
                for tasks in dep.state.ledger.in_flight(derived, int(time.time() * 1000)).values():
                    for task in tasks:
                        r = task.range
                        if r is not None and r[0] < window[1] and window[0] < r[1] and dep.redis.exists(
                                f"{prefix}lease:task:{task.task_id}"):
                            return r
                await asyncio.sleep(0.02)

    return asyncio.run(poll())


def _runs_since(dep: Deployment, since_ms: int) -> list[tuple[str, int, int]]:
    """``(model, start, end)`` of every admin row a worker wrote since ``since_ms``."""
    table = f"{dep.config.admin.incremental.database}.{dep.config.admin.incremental.table}"
    rows = dep.spark.sql(f"SELECT `database`, `table`, position, `interval` FROM {table} "
                         f"WHERE unix_millis(updated_date_time) >= {since_ms} "
                         f"AND direction <> '{CONSOLIDATED}'").collect()
    return [(f"{r['database']}.{r['table']}", r["position"], r["position"] + r["interval"]) for r in rows]


def _runs_ending_before(dep: Deployment, end: int, since_ms: int) -> int:
    """Admin rows a worker wrote since ``since_ms`` for intervals ending by ``end`` (rows the coordinator's
    consolidation rewrote are not runs)."""
    table = f"{dep.config.admin.incremental.database}.{dep.config.admin.incremental.table}"
    query = (f"SELECT count(*) AS n FROM {table} WHERE position + `interval` <= {end} "
             f"AND unix_millis(updated_date_time) >= {since_ms} AND direction <> '{CONSOLIDATED}'")
    return int(dep.spark.sql(query).collect()[0]["n"])
