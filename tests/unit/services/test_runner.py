"""The worker's use case on in-memory ports: what runs, what is skipped, and what gets recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pytest

from cbt.contract.messages import IntervalCompleted, Message, TaskFailed, TaskRequested
from cbt.contract.topics import Topics
from cbt.models.dag import ModelSet
from cbt.models.interval_checks import CheckedRun, CheckResult, IntervalCheck, IntervalVerdict
from cbt.models.spec import IncrementalModel, Transformation, Write
from cbt.models.templates import TaskContext
from cbt.scheduling.snapshot import RawBounds
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CheckedInterval, RetriedAttempt
from cbt.state.ports import HeldInterval, InFlightTask
from cbt.worker.runner import CompletionRow, Outcome, RetryPolicy, TaskRunner, WorkerPorts
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext, inc, sched

SRC, MODEL, REF = "src.blocks", "out.minute", "out.entities"


@dataclass
class Published:
    messages: list[tuple[str, Message]] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.messages.append((topic, message))


@dataclass
class Rows:
    rows: list[CompletionRow] = field(default_factory=list)
    failures: list[TaskFailed] = field(default_factory=list)
    retries: list[RetriedAttempt] = field(default_factory=list)
    checks: list[CheckedInterval] = field(default_factory=list)

    async def record(self, row: CompletionRow) -> None:
        self.rows.append(row)

    async def record_failure(self, failed: TaskFailed) -> None:
        self.failures.append(failed)

    async def record_retry(self, retried: RetriedAttempt) -> None:
        self.retries.append(retried)

    async def record_checks(self, results: list[CheckedInterval]) -> None:
        self.checks.extend(results)


@dataclass
class Executor:
    """Counts runs; fails the first ``failures`` attempts; ``during`` runs inside the task (a concurrent event)."""

    failures: int = 0
    runs: list[TaskContext] = field(default_factory=list)
    during: list[object] = field(default_factory=list)
    seconds: float = 0.0
    finished: int = 0
    models: list[Transformation] = field(default_factory=list)

    async def run(self, model: Transformation, task: TaskContext) -> None:
        self.runs.append(task)
        self.models.append(model)
        for action in self.during:
            action()  # type: ignore[operator]
        await asyncio.sleep(self.seconds)
        self.finished += 1
        if len(self.runs) <= self.failures:
            raise RuntimeError(f"boom {len(self.runs)}")


def make_runner(executor: Executor, state: MemoryState,
                models: ModelSet | None = None) -> tuple[TaskRunner, Published, Rows]:
    published, rows = Published(), Rows()
    models = models or ModelSet({SRC: ext(SRC), MODEL: inc(MODEL, [SRC], imax=60)})
    ports = WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, published, rows, state.holds)
    runner = TaskRunner(models, ports, executor, Topics("t."), "worker-1",
                        retry=RetryPolicy(max_attempts=3, backoff_initial_s=0.001), lease_ttl_s=0.3)
    return runner, published, rows


def task(position: int = 0) -> TaskRequested:
    return TaskRequested(task_id=f"{MODEL}:{position}:60", model=MODEL, position=position, interval=60)


def handle(runner: TaskRunner, request: TaskRequested) -> Outcome:
    return asyncio.run(runner.handle(request))


class Clock:
    """Monotonic milliseconds that a test can move forward (a pause longer than a lease's ttl)."""

    def __init__(self) -> None:
        self.skipped_ms = 0

    def __call__(self) -> int:
        return time.monotonic_ns() // 1_000_000 + self.skipped_ms


def ready_state(clock: Clock | None = None) -> MemoryState:
    state = MemoryState(clock_ms=clock or Clock())
    state.bounds.put_bounds(SRC, RawBounds(0, 600))
    return state


def test_a_ready_task_runs_records_then_publishes_completion() -> None:
    state, executor = ready_state(), Executor()
    runner, published, rows = make_runner(executor, state)
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task()) == "completed"
    assert len(executor.runs) == 1 and len(rows.rows) == 1
    assert state.coverage.coverage(MODEL) == ((0, 60),)
    assert [type(m) for _, m in published.messages] == [IntervalCompleted]
    assert state.ledger.in_flight([MODEL], 0)[MODEL] == ()


@dataclass
class Checking(Executor):
    """Runs like ``Executor``, then says the intervals starting at ``failing`` failed a check (not written)."""

    failing: tuple[int, ...] = ()

    async def run(self, model: Transformation, task: TaskContext) -> CheckedRun:  # type: ignore[override]
        await super().run(model, task)
        assert task.start is not None and task.end is not None
        step = task.step or task.end - task.start
        verdicts = []
        for start in range(task.start, task.end, step):
            bad = start in self.failing
            accepted = any(a <= start < e for a, e in task.accepted)  # (as the executor: accepted_anyway)
            result = CheckResult("not_null_a", "error", ("accepted" if accepted else "failed") if bad else "passed",
                                 2 if bad else 0, ('{"a":null}',) if bad else ())
            verdicts.append(IntervalVerdict(start, start + step, (result,), 10))
        return CheckedRun(0.1, tuple(verdicts), 0.02)


def test_a_batch_publishes_the_intervals_that_passed_and_holds_the_one_that_failed() -> None:
    state, executor = ready_state(), Checking(failing=(60,))
    runner, published, rows = make_runner(executor, state)
    runner.versions = {MODEL: "v1"}
    batch = TaskRequested(task_id=f"{MODEL}:0:180", model=MODEL, position=0, interval=180, step=60)
    state.ledger.claim(MODEL, InFlightTask(batch.task_id, (0, 180), 10**15))

    assert handle(runner, batch) == "checks-failed"
    assert state.coverage.coverage(MODEL) == ((0, 60), (120, 180))
    assert [(r.task.position, r.task.interval) for r in rows.rows] == [(0, 60), (120, 60)]
    assert [(m.position, m.interval) for _, m in published.messages if isinstance(m, IntervalCompleted)] == [
        (0, 60), (120, 60)]
    assert state.holds.held([MODEL]) == {MODEL: (HeldInterval(60, 120, "v1",
                                                              "check not_null_a failed: 2 violating rows"),)}
    assert [(c.position, c.status, c.violations, c.sample) for c in rows.checks] == [
        (0, "passed", 0, ()), (60, "failed", 2, ('{"a":null}',)), (120, "passed", 0, ())]
    assert state.ledger.in_flight([MODEL], 0)[MODEL] == ()
    assert len(executor.runs) == 1, "a failed check is not retried: the same inputs give the same rows"


def test_a_redelivered_task_of_a_held_interval_is_acknowledged_without_running() -> None:
    """Found on CI: the coordinator's task message came twice; the second ran the failing interval again."""
    checked = ModelSet({SRC: ext(SRC), MODEL: replace(inc(MODEL, [SRC], imax=60), checks=(
        IntervalCheck("not_null_a", "not_null", columns=("a",)),))})
    state, executor = ready_state(), Checking(failing=(60,))
    runner, _, rows = make_runner(executor, state, checked)
    runner.versions = {MODEL: "v1"}
    batch = TaskRequested(task_id=f"{MODEL}:0:180", model=MODEL, position=0, interval=180, step=60)

    assert handle(runner, batch) == "checks-failed"
    assert handle(runner, batch) == "held"
    assert len(executor.runs) == 1 and len(rows.checks) == 3
    runner.versions = {MODEL: "v2"}
    assert handle(runner, batch) == "checks-failed", "a hold of another version is not this version's"


def test_a_duplicate_waiting_for_the_lease_does_not_run_the_interval_its_holder_found_failing() -> None:
    """Found on CI too: two copies of one task at once; the second took the lease after the first held the
    interval, and ran it again."""
    checked = ModelSet({SRC: ext(SRC), MODEL: replace(inc(MODEL, [SRC], imax=60), checks=(
        IntervalCheck("not_null_a", "not_null", columns=("a",)),))})
    state, executor = ready_state(), Checking(failing=(0,), seconds=0.3)
    runner, _, rows = make_runner(executor, state, checked)

    async def both() -> list[Outcome]:
        return list(await asyncio.gather(runner.handle(task()), runner.handle(task())))

    assert sorted(asyncio.run(both())) == ["checks-failed", "held"]
    assert len(executor.runs) == 1 and len(rows.checks) == 1


def test_an_accepted_interval_is_run_again_published_whatever_its_checks_say_and_no_longer_held() -> None:
    checked = ModelSet({SRC: ext(SRC), MODEL: replace(inc(MODEL, [SRC], imax=60), checks=(
        IntervalCheck("not_null_a", "not_null", columns=("a",)),))})
    state, executor = ready_state(), Checking(failing=(60,))
    runner, published, rows = make_runner(executor, state, checked)
    runner.versions = {MODEL: "v1"}
    state.coverage.record_completed(MODEL, (0, 60), 0)
    state.holds.hold(MODEL, [HeldInterval(60, 120, "v1", "check not_null_a failed: 2 violating rows")])
    again = TaskRequested(task_id=f"{MODEL}:60:60", model=MODEL, position=60, interval=60)
    assert handle(runner, again) == "held", "held: a redelivered copy does not run"

    state.holds.accept(MODEL, (60, 120), "tok-1", None)
    assert handle(runner, again) == "completed"
    assert executor.runs[-1].accepted == ((60, 120),), "the executor is told which intervals were accepted"
    assert state.coverage.coverage(MODEL) == ((0, 120),)
    assert state.holds.held([MODEL]) == {}, "published: no longer held"
    assert [(c.position, c.status) for c in rows.checks] == [(60, "accepted")]
    assert [m.position for _, m in published.messages if isinstance(m, IntervalCompleted)] == [60]


@dataclass
class Rechecking(Checking):
    """``Checking``, and a re-check that says the intervals starting at ``failing`` fail its checks."""

    rechecked: list[tuple[TaskContext, tuple[str, ...]]] = field(default_factory=list)

    async def recheck(self, model: IncrementalModel, task: TaskContext,
                      checks: Sequence[IntervalCheck]) -> CheckedRun:
        self.rechecked.append((task, tuple(c.name for c in checks)))
        assert task.start is not None and task.end is not None
        step = task.step or task.end - task.start
        return CheckedRun(0.1, tuple(IntervalVerdict(s, s + step, tuple(
            CheckResult(c.name, c.severity, "failed" if s in self.failing else "passed", int(s in self.failing))
            for c in checks), 5) for s in range(task.start, task.end, step)), 0.1)


def test_a_recheck_task_records_the_verdicts_of_the_published_intervals_and_writes_or_covers_nothing() -> None:
    replacing = Write("replace", replace_where="slot >= {{ bounds.start }} AND slot < {{ bounds.end }}")
    checked = ModelSet({SRC: ext(SRC), MODEL: replace(inc(MODEL, [SRC], imax=60), write=replacing, checks=(
        IntervalCheck("not_null_a", "not_null", columns=("a",)),))})
    state, executor = ready_state(), Rechecking(failing=(60,))
    runner, published, rows = make_runner(executor, state, checked)
    state.coverage.record_completed(MODEL, (0, 180), 0)
    positive = IntervalCheck("positive", "expression", sql="a > 0")
    request = TaskRequested(task_id=f"{MODEL}:0:180", model=MODEL, position=0, interval=180, step=60,
                            direction="backfill", recheck=(positive,))

    assert handle(runner, request) == "rechecked", "covered: a re-check runs all the same"
    assert executor.runs == [] and [(t.start, t.end, t.step, names) for t, names in executor.rechecked] == [
        (0, 180, 60, ("positive",))]
    assert [(c.position, c.check, c.status, c.task_id) for c in rows.checks] == [
        (0, "positive", "passed", f"recheck:{MODEL}:0:180"), (60, "positive", "failed", f"recheck:{MODEL}:0:180"),
        (120, "positive", "passed", f"recheck:{MODEL}:0:180")]
    assert rows.rows == [] and published.messages == [], "no completion recorded or announced"
    assert state.coverage.coverage(MODEL) == ((0, 180),) and state.holds.held([MODEL]) == {}, \
        "a failed re-check holds nothing: the rows were published before"


def test_a_task_whose_checks_pass_is_recorded_whole_with_its_results() -> None:
    state, executor = ready_state(), Checking()
    runner, _, rows = make_runner(executor, state)
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task()) == "completed"
    assert state.coverage.coverage(MODEL) == ((0, 60),) and len(rows.rows) == 1
    assert [(c.check, c.status, c.rows, c.duration_ms) for c in rows.checks] == [("not_null_a", "passed", 10, 20)]
    assert state.holds.held([MODEL]) == {}


def test_a_completion_says_which_version_of_the_model_computed_it() -> None:
    state, executor = ready_state(), Executor()
    runner, published, rows = make_runner(executor, state)
    runner.versions = {MODEL: "3f9a0c1d2e4b"}
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task()) == "completed"
    [(_, completed)] = published.messages
    assert isinstance(completed, IntervalCompleted) and completed.version == "3f9a0c1d2e4b"
    assert [row.version for row in rows.rows] == ["3f9a0c1d2e4b"], "the admin row says it too"
    assert state.coverage.version_coverage([MODEL]) == {MODEL: {"3f9a0c1d2e4b": ((0, 60),)}}, "and the hot index"


def test_a_task_of_another_version_never_runs_with_this_worker_s_definition() -> None:
    """A rolling update: the task was planned with version "new". A worker still on "old" hands it back while "new"
    is deployed; a worker on "new" drops a task planned with "old" once "new" is deployed (its claim released, so the
    coordinator plans it again with the deployed version)."""
    state, executor = ready_state(), Executor()
    runner, published, _ = make_runner(executor, state)
    runner.versions, runner.hand_back_pause_s = {MODEL: "old"}, 0.0
    runner.deployed_version = lambda _: "new"
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task().model_copy(update={"version": "new"})) == "handed-back"
    [(topic, again)] = published.messages
    assert topic == "t.task-requested.default" and isinstance(again, TaskRequested) and again.version == "new"
    assert state.ledger.in_flight([MODEL], 0)[MODEL] != (), "its claim stays for the worker that runs it"

    runner.versions = {MODEL: "new"}
    assert handle(runner, task().model_copy(update={"version": "old"})) == "stale-version"
    assert state.ledger.in_flight([MODEL], 0)[MODEL] == ()
    assert executor.runs == [], "neither ran"

    assert handle(runner, task().model_copy(update={"version": "new"})) == "completed"


def test_a_task_planned_before_a_deployment_is_dropped_not_run_even_by_a_worker_of_its_version() -> None:
    """A worker still on the old files takes an old task left in the queue after the deployment announced the new
    version: it must not compute the interval with the old definition (the deployment's re-run would accept it)."""
    state, executor = ready_state(), Executor()
    runner, published, rows = make_runner(executor, state)
    runner.versions = {MODEL: "old"}
    state.coverage.announce_versions({MODEL: "new"})
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task().model_copy(update={"version": "old"})) == "stale-version"
    assert executor.runs == [] and rows.rows == [] and published.messages == []
    assert not state.ledger.in_flight([MODEL], 0).get(MODEL), "its claim is released: planned again, as new"
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))
    assert handle(runner, task()) == "stale-version", "planned without a version: this worker's is not the one"
    assert executor.runs == []

    state.coverage.announce_versions({MODEL: "old"})  # (a rollback)
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))
    assert handle(runner, task().model_copy(update={"version": "old"})) == "completed"


def test_a_version_announced_while_a_task_runs_keeps_its_completion_out_of_the_record() -> None:
    """Its range may lie beyond the change's invalidation (forward fill at the head): recorded, the old definition's
    rows would stand; not recorded, the interval is planned again in the new version, whose run rewrites them."""
    state = ready_state()
    executor = Executor(during=[lambda: state.coverage.announce_versions({MODEL: "new"})])
    runner, published, rows = make_runner(executor, state)
    runner.versions = {MODEL: "old"}
    state.coverage.announce_versions({MODEL: "old"})
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))

    assert handle(runner, task().model_copy(update={"version": "old"})) == "stale-version"
    assert len(executor.runs) == 1 and rows.rows == [] and published.messages == []
    assert state.coverage.coverage(MODEL) == (), "not covered: planned again"


def test_a_task_of_a_build_or_a_kept_version_runs_the_definition_the_versions_record_gives() -> None:
    """A build began after this worker loaded its files: a task names the build, or the live version of a model its
    files define anew; the worker reads the models to run (files, builds, kept definitions) and runs the task's."""
    state, executor = ready_state(), Executor()
    runner, published, _ = make_runner(executor, state)
    build = f"{MODEL}__cbt_v2"
    kept = replace(inc(MODEL, [SRC], imax=60), sql="SELECT 'the live definition'")
    running = ModelSet({SRC: ext(SRC), MODEL: kept, build: inc(build, [SRC], imax=60)})
    runner.versions = {MODEL: "new"}
    runner.running = lambda: (running, {MODEL: "old", build: "new"})
    for model_id, version in ((build, "new"), (MODEL, "old")):
        request = TaskRequested(task_id=f"{model_id}:0:60", model=model_id, position=0, interval=60, version=version)
        state.ledger.claim(model_id, InFlightTask(request.task_id, (0, 60), 10**15))
        assert handle(runner, request) == "completed", model_id
    assert [m.id for m in executor.models] == [build, MODEL]
    assert executor.models[1].sql == "SELECT 'the live definition'"
    assert [m.version for _, m in published.messages if isinstance(m, IntervalCompleted)] == ["new", "old"]


def test_a_duplicate_of_a_covered_interval_is_acknowledged_without_running() -> None:
    state, executor = ready_state(), Executor()
    runner, published, _ = make_runner(executor, state)
    handle(runner, task())
    assert handle(runner, task()) == "already-covered"
    assert len(executor.runs) == 1 and len(published.messages) == 1


def test_a_task_whose_dependency_has_no_data_does_not_run() -> None:
    state, executor = MemoryState(), Executor()  # no bounds: the source has no data
    runner, published, rows = make_runner(executor, state)
    assert handle(runner, task()) == "not-ready"
    assert executor.runs == [] and rows.rows == [] and published.messages == []


def test_a_task_outside_the_dependency_range_does_not_run() -> None:
    state, executor = ready_state(), Executor()
    runner, _, _ = make_runner(executor, state)
    assert handle(runner, task(position=600)) == "not-ready"
    assert executor.runs == []


def test_failures_are_retried_and_the_last_one_is_published() -> None:
    state = ready_state()
    runner, _, rows = make_runner(Executor(failures=2), state)
    assert handle(runner, task()) == "completed"
    assert [(r.attempt, r.error, r.task_id, r.position, r.interval) for r in rows.retries] == [
        (1, "boom 1", task().task_id, task().position, task().interval),
        (2, "boom 2", task().task_id, task().position, task().interval)], "each retried attempt is in the history"

    state2, failing = ready_state(), Executor(failures=5)
    runner2, published2, rows2 = make_runner(failing, state2)
    assert handle(runner2, task()) == "failed"
    assert len(failing.runs) == 3 and rows2.rows == []
    (topic, message), = published2.messages
    assert topic == "t.task-failed" and isinstance(message, TaskFailed) and "boom 3" in message.error
    assert rows2.failures == [message], "the failure is kept in the admin tables' history"
    assert [r.attempt for r in rows2.retries] == [1, 2], "the last attempt is the failure, not a retry"
    assert state2.coverage.coverage(MODEL) == ()


def test_a_failure_that_cannot_be_recorded_in_the_admin_tables_is_still_published() -> None:
    class Unrecordable(Rows):
        async def record_failure(self, failed: TaskFailed) -> None:
            raise RuntimeError("Spark Connect is gone")

        async def record_retry(self, retried: RetriedAttempt) -> None:
            raise RuntimeError("Spark Connect is gone")

    state = ready_state()
    runner, published, _ = make_runner(Executor(failures=5), state)
    runner.ports = replace(runner.ports, recorder=Unrecordable())
    assert handle(runner, task()) == "failed"
    assert [topic for topic, _ in published.messages] == ["t.task-failed"]


def test_an_invalidation_during_the_run_wins_over_the_completion() -> None:
    state = ready_state()
    executor = Executor(during=[lambda: state.coverage.apply_invalidation(1, {MODEL: [TaskRun.single((0, 60))]})])
    runner, published, rows = make_runner(executor, state)
    state.ledger.claim(MODEL, InFlightTask(task().task_id, (0, 60), 10**15))
    assert handle(runner, task()) == "superseded"
    assert state.coverage.coverage(MODEL) == ()
    assert rows.rows[0].invalidation_seq == 0, "the admin row carries the sequence it read, so it reads as stale"
    (topic, requeued), = published.messages
    assert topic == "t.task-requested.default" and isinstance(requeued, TaskRequested)
    assert requeued.task_id == task().task_id, "run again at once, on the new data"
    assert state.ledger.in_flight([MODEL], 0)[MODEL] != (), "still claimed: the coordinator must not add a copy"

    executor.during.clear()
    assert handle(runner, requeued) == "completed"
    assert state.coverage.coverage(MODEL) == ((0, 60),)


def _lease_expires(state: MemoryState, clock: Clock, taken_by: str | None) -> None:
    clock.skipped_ms += 60_000  # the worker paused past its lease's ttl ...
    if taken_by is not None:  # ... and another worker took the task over
        state.leases.acquire(f"task:{task().task_id}", taken_by, 600_000)


def test_a_run_whose_lease_was_taken_over_records_nothing() -> None:
    """The lease expired (a pause, a partition) and another worker took the task over: only that one records."""
    clock = Clock()
    state = ready_state(clock)
    runner, published, rows = make_runner(Executor(during=[lambda: _lease_expires(state, clock, "worker-2")]), state)
    assert handle(runner, task()) == "lease-lost"
    assert rows.rows == [] and published.messages == [] and state.coverage.coverage(MODEL) == ()


def test_a_run_whose_lease_expired_untaken_records_nothing_and_requeues_the_task() -> None:
    clock = Clock()
    state = ready_state(clock)
    runner, published, rows = make_runner(Executor(during=[lambda: _lease_expires(state, clock, None)]), state)
    assert handle(runner, task()) == "lease-lost"
    assert rows.rows == [] and state.coverage.coverage(MODEL) == ()
    (topic, requeued), = published.messages
    assert topic == "t.task-requested.default" and isinstance(requeued, TaskRequested), "not left to the deadline"


def test_losing_the_lease_stops_the_run() -> None:
    clock = Clock()
    state = ready_state(clock)
    executor = Executor(during=[lambda: _lease_expires(state, clock, "worker-2")], seconds=5.0)
    runner, _, rows = make_runner(executor, state)
    assert handle(runner, task()) == "lease-lost"
    assert executor.finished == 0 and rows.rows == [], "the heartbeat found the lease lost and stopped the run"


@dataclass
class FlakyLeases:
    """Leases whose renewals fail ``failures`` times (Redis unreachable for a moment)."""

    inner: object
    failures: int

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("Redis unreachable")
        return bool(self.inner.renew(name, owner, ttl_ms))  # type: ignore[attr-defined]


def test_the_lease_is_kept_through_a_transient_renewal_error() -> None:
    state = ready_state()
    lease = f"task:{task().task_id}"
    stolen: list[int | None] = []
    executor = Executor(seconds=0.8)
    runner, _, rows = make_runner(executor, state)
    runner.ports = dataclasses.replace(runner.ports, leases=FlakyLeases(state.leases, failures=1))  # type: ignore[arg-type]

    async def scenario() -> Outcome:
        pending = asyncio.create_task(runner.handle(task()))
        await asyncio.sleep(0.6)  # past the 0.3 s ttl: held only if the heartbeat renewed after its failure
        stolen.append(state.leases.acquire(lease, "worker-2", 60_000))
        return await pending

    assert asyncio.run(scenario()) == "completed"
    assert stolen == [None] and len(rows.rows) == 1


def test_a_task_leased_by_another_worker_is_not_run_twice_and_a_copy_stays_queued() -> None:
    """The copy is acknowledged as busy; had the holder then failed to record, no copy would be left to run it."""
    state, executor = ready_state(), Executor()
    runner, published, _ = make_runner(executor, state)
    assert state.leases.acquire(f"task:{task().task_id}", "worker-2", 60_000) is not None
    assert handle(runner, task()) == "busy"
    assert executor.runs == []
    assert [(topic, m.task_id) for topic, m in published.messages] == [("t.task-requested.default", task().task_id)]


@pytest.mark.parametrize("model", ["out.nope", SRC], ids=["unknown-model", "external-model"])
def test_a_task_for_a_model_that_cannot_run_is_failed_not_crashed(model: str) -> None:
    runner, published, _ = make_runner(Executor(), ready_state())
    request = TaskRequested(task_id=f"{model}:0:60", model=model, position=0, interval=60)
    assert handle(runner, request) == "unknown-model"
    assert isinstance(published.messages[0][1], TaskFailed)


def test_a_task_the_planner_could_not_have_made_is_unusable_one_of_a_model_not_loaded_fails_as_before() -> None:
    runner, _, _ = make_runner(Executor(), ready_state())
    year = TaskRequested(task_id=f"{MODEL}:0:31536000", model=MODEL, position=0, interval=31_536_000, step=1)
    assert "step 1 is outside the model's interval.min..interval.max (60..60)" in (runner.why_unusable(year) or "")
    assert "pool 'gpu'" in (runner.why_unusable(task().model_copy(update={"pool": "gpu"})) or "")
    assert runner.why_unusable(task()) is None
    assert runner.why_unusable(TaskRequested(task_id="out.nope:0:60", model="out.nope", position=0,
                                             interval=60)) is None


def test_a_task_waits_for_the_first_run_of_its_scheduled_dependency() -> None:
    state, executor = ready_state(), Executor()
    models = ModelSet({SRC: ext(SRC), REF: sched(REF), MODEL: inc(MODEL, [SRC, REF], imax=60)})
    runner, published, rows = make_runner(executor, state, models)
    assert handle(runner, task()) == "not-ready", "an empty reference table must not be joined in for good"

    reference_run = TaskRequested(task_id=f"{REF}:@1700000000", model=REF, scheduled_unix=1_700_000_000)
    assert handle(runner, reference_run) == "completed"
    assert state.coverage.scheduled_ran([REF]) == {REF}
    assert [m.model for _, m in published.messages] == [REF], "its completion lets the coordinator cascade"
    assert handle(runner, task()) == "completed"
    assert [r.task.model for r in rows.rows] == [REF, MODEL]


def test_a_second_copy_of_a_scheduled_run_that_succeeded_does_not_run() -> None:
    """Copies of one fire time arrive from a requeue and from the coordinator's recovery after Redis was emptied
    (found by the e2e's once-per-fire-time check). An older fire time that arrives after a newer one still runs."""
    state, executor = ready_state(), Executor()
    models = ModelSet({SRC: ext(SRC), REF: sched(REF)})
    runner, _, rows = make_runner(executor, state, models)

    def run(fire: int) -> Outcome:
        return handle(runner, TaskRequested(task_id=f"{REF}:@{fire}", model=REF, scheduled_unix=fire))

    assert [run(1_700_000_060), run(1_700_000_060), run(1_700_000_000)] == [
        "completed", "already-covered", "completed"]
    assert len(executor.runs) == 2 and len(rows.rows) == 2


@pytest.mark.parametrize("scheduled", [True, False], ids=["scheduled", "incremental"])
def test_a_copy_waiting_on_the_lease_does_not_run_once_the_holder_recorded_the_task(scheduled: bool) -> None:
    """Two copies of one task at once (a requeue after Redis was emptied, and the coordinator's recovery): the
    second waits for the lease; when the first releases it, the task is done, so the second must not run it again
    (found by the e2e's once-per-fire-time check: a scheduled model ran twice for one fire time)."""
    state, executor = ready_state(), Executor(seconds=0.2)
    models = ModelSet({SRC: ext(SRC), REF: sched(REF), MODEL: inc(MODEL, [SRC], imax=60)})
    runner, _, rows = make_runner(executor, state, models)
    copy = TaskRequested(task_id=f"{REF}:@1700000060", model=REF, scheduled_unix=1_700_000_060) if scheduled \
        else task()

    async def scenario() -> list[Outcome]:
        first = asyncio.create_task(runner.handle(copy))
        await asyncio.sleep(0.05)  # the first holds the lease and is running
        return list(await asyncio.gather(first, runner.handle(copy)))

    assert sorted(asyncio.run(scenario())) == ["already-covered", "completed"]
    assert len(executor.runs) == 1 and len(rows.rows) == 1


def test_tasks_wait_while_the_hot_index_is_rebuilt() -> None:
    """Redis emptied: "not covered" means nothing until the rebuild, so a covered interval must not run again."""
    state, executor = MemoryState(built=False), Executor()
    state.bounds.put_bounds(SRC, RawBounds(0, 600))
    runner, _, _ = make_runner(executor, state)
    runner.index_poll_s = 0.01

    async def scenario() -> Outcome:
        pending = asyncio.create_task(runner.handle(task()))
        await asyncio.sleep(0.1)
        assert not pending.done() and executor.runs == [], "ran before the index was rebuilt"
        generation, versions = state.coverage.generation(), state.coverage.versions([MODEL])
        state.coverage.replace_coverage(MODEL, ((0, 120),), 0, versions[MODEL])  # what the admin tables say
        state.coverage.mark_built(1_700_000_000, generation)
        return await pending

    assert asyncio.run(scenario()) == "already-covered"
    assert executor.runs == []


def test_begin_returns_after_the_work_and_leaves_the_recording_running() -> None:
    """What lets a consumer start its next task while the previous one's admin-table commit runs."""
    state, executor = ready_state(), Executor()
    runner, published, _ = make_runner(executor, state)
    gate = asyncio.Event()

    class SlowRecorder(Rows):
        async def record(self, row: CompletionRow) -> None:
            await gate.wait()
            await super().record(row)

    slow = SlowRecorder()
    runner.ports = WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, published, slow)

    async def scenario() -> Outcome:
        recording = await runner.begin(task())
        assert len(executor.runs) == 1 and not recording.done()
        assert state.coverage.coverage(MODEL) == () and published.messages == [], "nothing said before it is durable"
        assert state.leases.acquire(f"task:{task().task_id}", "worker-2", 60_000) is None, "still leased"
        gate.set()
        return await recording

    assert asyncio.run(scenario()) == "completed"
    assert len(slow.rows) == 1 and state.coverage.coverage(MODEL) == ((0, 60),)
    assert state.leases.acquire(f"task:{task().task_id}", "worker-2", 60_000) is not None, "released at the end"


def test_the_recorded_duration_is_the_work_not_the_wait_for_the_table_or_a_slot() -> None:
    """The batch sizes are fitted on it: with tasks of one model queued on its table, the waits made the fit see
    each interval 2-3 times as costly as it is, and batches came out that much smaller."""

    @dataclass
    class QueuedExecutor(Executor):
        async def run(self, model: Transformation, task: TaskContext) -> float | None:
            await asyncio.sleep(0.3)  # waiting for the model's table: another task of it is running
            await super().run(model, task)
            return 0.05

    state, executor = ready_state(), QueuedExecutor()
    runner, published, rows = make_runner(executor, state)
    assert handle(runner, task()) == "completed"
    (completed,) = [m for _, m in published.messages if isinstance(m, IntervalCompleted)]
    assert completed.duration_ms == 50 and rows.rows[0].duration_ms == 50
