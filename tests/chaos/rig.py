"""Randomized faults on the real stack, then quiet, then the checks: the chaos suite's moving parts.

The pipeline is the example's, plus two models that misbehave on purpose: ``chaos_hung`` (its script never ends;
its ``timeout`` kills it) and ``chaos_failing`` (its SQL reads a table that does not exist). Source data keeps
arriving between faults. Every fault is drawn from a seeded ``random.Random``, so a failing run is replayed with
its seed.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer
from pyspark.sql import SparkSession

from cbt.adapters.delta_admin import DeltaAdmin, admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.adapters.spark import connect
from cbt.contract.messages import TaskFailed, TaskRequested, decode
from cbt.contract.topics import Topics
from cbt.dev import stack
from cbt.dev.generator import SourceTables, write_blocks
from cbt.dev.process import wait_until
from cbt.models.spec import IncrementalModel
from tests.e2e.harness import CONFIG, PROJECT, T0, Deployment, isolated_deployment
from tests.e2e.oracle import IndependentOracle

HUNG, FAILING = "chaos_hung", "chaos_failing"
HUNG_TIMEOUT_S = 8
SOURCE_END = T0 + 600
LAST_SLOT_END = SOURCE_END - 12 + 1
FIRST_CHUNK_END = T0 + 240
READINESS_CHECK = {"kafka": "kafka", "spark-connect": "spark"}
"""The ``/readyz`` check that names each restarted component."""
READINESS_WAIT_S = 60.0
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator")

MISBEHAVING_MODELS = {
    f"{HUNG}.yml": f"""\
type: incremental
table: {HUNG}
interval: {{max: 60, min: 60, type: timestamp}}
schedules: {{forwardfill: "@every 10s", backfill: "@every 30s"}}
dependencies: ["{{{{external}}}}.beacon_blocks"]
exec: sleep 3600
timeout: {HUNG_TIMEOUT_S}s
""",
    f"{FAILING}.sql": f"""\
---
type: incremental
table: {FAILING}
interval: {{max: 60, min: 60, type: timestamp}}
schedules: {{forwardfill: "@every 10s", backfill: "@every 30s"}}
dependencies: ["{{{{external}}}}.beacon_blocks"]
---
SELECT * FROM no_such_database.no_such_table
""",
}


@contextmanager
def chaos_deployment(spark_remote: str, kafka: str, redis_url: str, spark: SparkSession) -> Iterator[Deployment]:
    """An isolated deployment of the example pipeline plus the two misbehaving models; removed afterwards."""
    tag = f"tc{uuid.uuid4().hex[:8]}"
    models_dir = PROJECT / "var" / "chaos-models" / tag
    models_dir.mkdir(parents=True, exist_ok=True)
    for name, text in MISBEHAVING_MODELS.items():
        (models_dir / name).write_text(text)
    overrides = {"CBT__MODELS__TRANSFORMATIONS__PATHS": f"[{PROJECT / 'models' / 'transformations'}, {models_dir}]",
                 "CBT__WORKER__RETRY__MAX_ATTEMPTS": "2", "CBT__WORKER__SHUTDOWN_TIMEOUT_S": "10"}
    with isolated_deployment(kafka, redis_url, spark, spark_remote, tag, overrides,
                             faulty=frozenset({HUNG, FAILING})) as dep:
        dep.create_tables()
        yield dep


@dataclass
class Fault:
    kind: str
    at_s: float
    detail: str = ""
    took_s: float = 0.0
    together_with: tuple[str, ...] = ()
    """The faults applied at the same moment as this one (a round of several at once)."""

    @property
    def is_skipped(self) -> bool:
        """The fault could not be applied (a component this run does not control): it proves nothing."""
        return "skipped" in self.detail


ALONE_ONLY = frozenset({"restart-spark-connect", "sigterm-worker-mid-task"})
"""Faults that are never combined: the first reconnects the rig's own Spark session (which another fault would be
using), the second waits for a task to run."""
PROCESS_KILLS = ("sigkill-worker", "sigkill-coordinator", "sigkill-bounds-cache", "sigkill-invalidator")


@dataclass
class Chaos:
    """Applies faults to one deployment and keeps what happened, for the report."""

    dep: Deployment
    rng: random.Random
    faults: list[Fault] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    written_until: int = FIRST_CHUNK_END

    def kinds(self) -> dict[str, Callable[[], str]]:
        return {
            "sigkill-worker": lambda: self._kill("worker", signal.SIGKILL),
            "sigterm-worker-mid-task": self._term_worker_mid_task,
            "sigkill-coordinator": lambda: self._kill("coordinator", signal.SIGKILL),
            "sigkill-bounds-cache": lambda: self._kill("bounds-cache", signal.SIGKILL),
            "sigkill-invalidator": lambda: self._kill("invalidator", signal.SIGKILL),
            "restart-kafka": lambda: self._restart_component("kafka"),
            "restart-spark-connect": lambda: self._restart_component("spark-connect"),
            "empty-redis": self._empty_redis,
            "duplicate-reordered-tasks": self._duplicate_tasks,
            "invalidation-while-running": self._invalidate_running,
        }

    def start(self) -> None:
        """Start the services and wait until the pipeline flows (faults during the very first start-up, while the
        admin tables are being created, are not what this suite is about)."""
        self.dep.write_entities()
        self.dep.write_sources(T0, FIRST_CHUNK_END)
        self.dep.start(*SERVICES)
        flowing = wait_until(lambda: any(self.dep.coverage(m.id) for m in self.dep.healthy_incrementals()), 240.0)
        assert flowing, f"nothing completed within 240 s of the start; logs in {self.dep.log_dir}"

    def apply(self, kind: str) -> Fault:
        """Apply one fault (after a random pause, so it lands at a random moment), then let data arrive."""
        time.sleep(self.rng.uniform(0.5, 4.0))
        fault = Fault(kind, round(time.monotonic() - self.started, 1))
        began = time.monotonic()
        fault.detail = self.kinds()[kind]()
        fault.took_s = round(time.monotonic() - began, 1)
        self.faults.append(fault)
        self._more_data()
        return fault

    def random_round(self) -> Fault:
        return self.apply(self.rng.choice(sorted(self.kinds())))

    def rounds(self, count: int) -> list[tuple[str, ...]]:
        """``count`` rounds: every kind alone once first (shuffled), then random rounds, one in three of them a
        service killed while another fault hits the infrastructure or the messages (several at once)."""
        kinds = sorted(self.kinds())
        plan: list[tuple[str, ...]] = [(kind,) for kind in self.rng.sample(kinds, len(kinds))]
        others = [k for k in kinds if k not in ALONE_ONLY and k not in PROCESS_KILLS]
        while len(plan) < count:
            if self.rng.random() < 1 / 3:
                plan.append((self.rng.choice(PROCESS_KILLS), self.rng.choice(others)))
            else:
                plan.append((self.rng.choice(kinds),))
        return plan[:count]

    def apply_together(self, kinds: tuple[str, ...]) -> list[Fault]:
        """Apply one fault, or several at the same moment (each in a thread of its own), then let data arrive."""
        if len(kinds) == 1:
            return [self.apply(kinds[0])]
        time.sleep(self.rng.uniform(0.5, 4.0))
        at_s = round(time.monotonic() - self.started, 1)
        faults = [Fault(kind, at_s, together_with=tuple(k for k in kinds if k != kind)) for kind in kinds]
        errors: list[BaseException] = []

        def run(fault: Fault) -> None:
            began = time.monotonic()
            try:
                fault.detail = self.kinds()[fault.kind]()
            except BaseException as e:  # (re-raised below, after every thread ended)
                errors.append(e)
            fault.took_s = round(time.monotonic() - began, 1)

        threads = [threading.Thread(target=run, args=(fault,)) for fault in faults]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.faults.extend(faults)
        if errors:
            raise errors[0]
        self._more_data()
        return faults

    def settle(self, timeout_s: float = 900.0) -> float:
        """Every service running again, all data written; seconds until the pipeline is quiet."""
        for name in SERVICES:
            if name not in self.dep.procs.running:
                self.dep.procs.start(name)
        if self.written_until < SOURCE_END:
            self.dep.write_sources(self.written_until, SOURCE_END)
            self.written_until = SOURCE_END
        return self.dep.wait_quiet(LAST_SLOT_END, timeout_s=timeout_s, settle_s=5.0)

    # -- faults -------------------------------------------------------------------------------------------------

    def _kill(self, name: str, sig: signal.Signals) -> str:
        self.dep.procs.kill(name, sig, timeout_s=180.0)  # SIGTERM: the shutdown timeout, then a forced exit
        time.sleep(self.rng.uniform(0.0, 3.0))  # down for a moment, like a pod being rescheduled
        self.dep.procs.start(name)
        return name

    def _term_worker_mid_task(self) -> str:
        prefix = self.dep.config.redis.key_prefix
        found = wait_until(lambda: any(self.dep.redis.scan_iter(match=f"{prefix}lease:task:*", count=1000)), 20.0,
                           every_s=0.05)
        self._kill("worker", signal.SIGTERM)
        return "a task was running" if found else "no task was running"

    def _restart_component(self, name: str) -> str:
        (part,) = [p for p in stack.components() if p.name == name]
        if part.process.pid() is None:
            return f"{name} is not started by cbt dev: skipped"
        check = READINESS_CHECK[name]
        # the restart is seen through the worker's /readyz: a worker restarted by an earlier fault must answer first
        if not wait_until(lambda: self._worker_readiness(check) == "ok", READINESS_WAIT_S):
            raise AssertionError(f"the worker's /readyz does not say {check} is ok")
        part.process.stop()
        try:
            if not wait_until(lambda: self._worker_readiness(check) not in (None, "ok"), READINESS_WAIT_S):
                raise AssertionError(f"the worker's /readyz did not report {check} gone")
            said = self._worker_readiness(check)
            time.sleep(self.rng.uniform(0.0, 3.0))
        finally:  # back even when the check failed: the stack is shared with what runs next
            part.start()
            if not wait_until(part.is_ready, stack.READY_TIMEOUT_S[name]):
                raise AssertionError(f"{name} did not come back: {part.process.log_tail()}")
            part.after_ready()
        if name == "spark-connect":  # the server forgot every session, this one's too
            self.dep.spark = connect(self.dep.config.spark.remote or "")
        if not wait_until(lambda: self._worker_readiness(check) == "ok", READINESS_WAIT_S):
            raise AssertionError(f"the worker's /readyz still reports {check} gone after it came back")
        return f"{name}; the worker's /readyz said {check}: {said!r}, then ready again"

    def _worker_readiness(self, check: str) -> str | None:
        """What the worker's ``/readyz`` says of one dependency; None while it does not answer (restarting)."""
        checks = self.dep.procs.readiness("worker")
        return None if checks is None else checks.get(check, "missing")

    def _empty_redis(self) -> str:
        keys = list(self.dep.redis.scan_iter(match=f"{self.dep.config.redis.key_prefix}*"))
        if keys:
            self.dep.redis.delete(*keys)
        return f"{len(keys)} keys"

    def _duplicate_tasks(self) -> str:
        """Task requests for intervals already covered or in flight, published again in shuffled order."""
        tasks = [TaskRequested(task_id=f"{m.id}:{p}:{m.interval.max}", model=m.id, position=p,
                               interval=m.interval.max, direction="backfill")
                 for m in self.dep.healthy_incrementals()
                 for lo, hi in self.dep.coverage(m.id)[:1]
                 for p in range(lo, hi - m.interval.max + 1, m.interval.max)][:40]
        self.rng.shuffle(tasks)
        producer = Producer({"bootstrap.servers": self.dep.config.kafka.bootstrap_servers})
        topics, worker = Topics(self.dep.config.kafka.topic_prefix), self.dep.config.worker
        for task in tasks:
            model = self.dep.models.models[task.model]
            assert isinstance(model, IncrementalModel)
            topic = topics.task_requested(worker.pool_for(model.tags))
            producer.produce(topic, task.encode(), key=task.task_id.encode())
        assert producer.flush(30) == 0
        return f"{len(tasks)} tasks"

    def _invalidate_running(self) -> str:
        """Rewrite a minute of blocks that a running task reads (or the newest minute), and announce it."""
        derived = [m.id for m in self.dep.healthy_incrementals()]
        running = [t.range for tasks in self.dep.state.ledger.in_flight(derived, int(time.time() * 1000)).values()
                   for t in tasks if t.range is not None and t.range[0] < self.written_until]
        start = running[0][0] if running else self.written_until - 60
        start -= (start - T0) % 60
        write_blocks(self.dep.spark, SourceTables(self.dep.source_db), start, start + 60, version=len(self.faults) + 1)
        publish_invalidation(self.dep.config.kafka.bootstrap_servers, "beacon_blocks", start, start + 60,
                             reason="reorg", source="chaos", id=f"chaos:{uuid.uuid4().hex[:8]}",
                             topic_prefix=self.dep.config.kafka.topic_prefix)
        return f"[{start - T0}, {start - T0 + 60}) relative to T0" + (" while running" if running else "")

    def _more_data(self) -> None:
        if self.written_until < SOURCE_END:
            end = min(self.written_until + 60, SOURCE_END)
            self.dep.write_sources(self.written_until, end)
            self.written_until = end


@dataclass(frozen=True)
class Verdict:
    tables_equal: dict[str, tuple[int, int]]
    """Per healthy model: (rows only in the pipeline's table, rows only in the oracle's) — both must be 0."""
    failures_reported: dict[str, int]
    """Per misbehaving model: ``task-failed`` messages published for it."""
    hung_timed_out: bool
    misbehaving_coverage: dict[str, int]
    status_failures: dict[str, int]
    """Per model with failures: how many ``cbt status --json`` lists."""
    recorded_failures: dict[str, int]
    """Per misbehaving model: failures in the admin tables' history (``cbt_failures``)."""
    recorded_retries: dict[str, int]
    """Per misbehaving model: attempts that failed and were tried again, in the history (``cbt_retries``)."""
    failures_counted: dict[str, float]
    """Per misbehaving model: ``cbt_tasks_total{status="failed"}`` on the running worker's ``/metrics``."""

    @property
    def lost_rows(self) -> int:
        return sum(missing for _, missing in self.tables_equal.values())

    @property
    def duplicate_rows(self) -> int:
        return sum(extra for extra, _ in self.tables_equal.values())

    def problems(self) -> list[str]:
        found = [f"{table}: {extra} extra, {missing} missing rows vs the oracle"
                 for table, (extra, missing) in self.tables_equal.items() if (extra, missing) != (0, 0)]
        found += [f"{table}: no task-failed published" for table, n in self.failures_reported.items() if n == 0]
        found += [f"{table}: covers {n} positions" for table, n in self.misbehaving_coverage.items() if n]
        found += [f"{table}: cbt status shows no failure" for table in (HUNG, FAILING)
                  if not self.status_failures.get(table)]
        found += [f"{table}: no failure in the admin tables" for table, n in self.recorded_failures.items() if n == 0]
        found += [f"{table}: no retried attempt in the admin tables" for table, n in self.recorded_retries.items()
                  if n == 0]
        found += [f"{table}: the worker's metrics count no failed task" for table, n in self.failures_counted.items()
                  if n == 0]
        if not self.hung_timed_out:
            found.append(f"{HUNG}: no failure says its run timed out")
        return found


def verdict(dep: Deployment) -> Verdict:
    """The checks after quiet (the coverage of each healthy model must be one range: the oracle asserts it)."""
    oracle = IndependentOracle(dep.spark, dep.source_db, dep.output_db)  # (SQL written in the test, not rendered)
    checked = oracle.verdict({m.table: dep.coverage(m.id) for m in dep.healthy_incrementals()})
    assert not checked["coverage_problems"], checked["coverage_problems"]
    equal = checked["differences"]
    failed = failures_published(dep)
    counts = Counter(f.model.split(".")[-1] for f in failed)
    hung_timed_out = any(f.model.endswith(HUNG) and "timed out" in f.error for f in failed)
    coverage = {table: sum(hi - lo for lo, hi in dep.coverage(f"{dep.output_db}.{table}"))
                for table in (HUNG, FAILING)}
    admin, misbehaving = admin_from_config(dep.spark, dep.config), [f"{dep.output_db}.{t}" for t in (HUNG, FAILING)]
    recorded = Counter(f.model.split(".")[-1] for f in failures_recorded(admin, misbehaving))
    retried = Counter(r.model.split(".")[-1] for r in admin.retries(misbehaving))
    shown = status_failures_once_recorded(dep)
    return Verdict(equal, {t: counts[t] for t in (HUNG, FAILING)}, hung_timed_out, coverage, shown,
                   {t: recorded[t] for t in (HUNG, FAILING)}, {t: retried[t] for t in (HUNG, FAILING)},
                   failures_counted(dep))


def failures_counted(dep: Deployment, timeout_s: float = 90.0) -> dict[str, float]:
    """The running worker's count of failed tasks per misbehaving model; waits (a restarted worker starts from 0,
    and the models fail again on their next backfill tick) until both are counted or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        failed = dep.series("worker", "cbt_tasks_total")
        counted = {table: failed.get(frozenset({("model", f"{dep.output_db}.{table}"), ("status", "failed")}), 0.0)
                   for table in (HUNG, FAILING)}
        if all(counted.values()) or time.monotonic() > deadline:
            return counted
        time.sleep(2)


def status_failures_once_recorded(dep: Deployment, timeout_s: float = 60.0) -> dict[str, int]:
    """``status_failures`` once both misbehaving models show one, or after ``timeout_s``: their last failures may
    have been published an instant ago (the verdict waits for the topic), and the coordinator records each one only
    once it has read it."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = status_failures(dep)
        if all(shown.get(table) for table in (HUNG, FAILING)) or time.monotonic() > deadline:
            return shown
        time.sleep(2)


def status_failures(dep: Deployment) -> dict[str, int]:
    """What an operator sees: ``cbt status --json``'s failures per model table."""
    run = subprocess.run([sys.executable, "-m", "cbt.cli", "status", "--json", "--config", str(CONFIG)],
                         env=dep.procs.env(), capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return {m["id"].split(".")[-1]: len(m["failures"]) for m in json.loads(run.stdout)["models"] if m["failures"]}


def failures_published(dep: Deployment, timeout_s: float = 180.0) -> list[TaskFailed]:
    """The deployment's ``task-failed`` messages, read from the topic's beginning until both misbehaving models have
    one and the hung one's says it timed out, or ``timeout_s`` passed. The pipeline is quiet when the healthy models
    have caught up; a misbehaving model's last attempts (waiting for a Spark permit, then its timeout, the retry's
    delay and a second attempt) may still be running then."""
    consumer = Consumer({"bootstrap.servers": dep.config.kafka.bootstrap_servers,
                         "group.id": f"chaos-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([Topics(dep.config.kafka.topic_prefix).task_failed])
    found: list[TaskFailed] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and not _every_failure_seen(found):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            event = decode(message.value() or b"")
            if isinstance(event, TaskFailed):
                found.append(event)
    finally:
        consumer.close()
    return found


def _every_failure_seen(failed: list[TaskFailed]) -> bool:
    tables = {f.model.split(".")[-1] for f in failed}
    return {HUNG, FAILING} <= tables and any(f.model.endswith(HUNG) and "timed out" in f.error for f in failed)


def failures_recorded(admin: DeltaAdmin, models: list[str], timeout_s: float = 60.0) -> list[TaskFailed]:
    """The misbehaving models' failures in the admin tables, waiting (up to ``timeout_s``) until each has one: a
    failure is recorded just after it is published."""
    deadline = time.monotonic() + timeout_s
    while True:
        recorded = admin.failures(models)
        if {f.model for f in recorded} >= set(models) or time.monotonic() > deadline:
            return recorded
        time.sleep(2)
