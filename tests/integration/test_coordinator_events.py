"""The coordinator's event consumer (``interval-completed``, ``bounds-updated``, ``task-failed``) on a real Redis: a
body it cannot use is published to ``message-rejected`` with the reason, and the coordinator goes on; a failure is
kept in the model's failure log."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import pytest
from redis import Redis

from cbt.adapters.kafka_consumers import GroupLag
from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import load_config
from cbt.contract.messages import IntervalCompleted, Invalidation, MessageRejected, TaskFailed, TaskRequested
from cbt.contract.topics import Topics
from cbt.coordinator.app import Coordinator
from cbt.coordinator.switch import Switch
from cbt.models.builds import Build, Switched, with_builds
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion
from cbt.models.spec import IncrementalModel, Write
from cbt.observability import metrics, model_state
from cbt.observability.metrics import Labels
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from cbt.state.ports import KEEP_FAILURES
from tests.e2e.harness import CONFIG
from tests.integration.test_coordinator_schedules import Publisher
from tests.twins.memory_record import MemoryRecord, MemoryVersions
from tests.unit.scheduling.factories import ext, inc, models_of

pytestmark = pytest.mark.integration
TOPICS = Topics("t.")


def coordinator_on(redis_client: Redis, redis_prefix: str, publisher: Publisher,
                   minute: IncrementalModel | None = None) -> tuple[Coordinator, RedisState]:
    """A coordinator of one incremental model over one external, on the real Redis (no admin tables needed)."""
    models = ModelSet(models_of(ext("ext.blocks"), minute or inc("an.minute", ["ext.blocks"], imax=60)))
    state = RedisState(redis_client, redis_prefix)
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger,
                      publisher, TOPICS, lambda tags: "default", model_concurrency=1, task_deadline_ms=60_000)
    coordinator = Coordinator(load_config(CONFIG), models, state, planner, RedisMarks(redis_client, redis_prefix),
                              "c1", lambda: None)  # type: ignore[arg-type,return-value]
    return coordinator, state


def test_bodies_the_coordinator_cannot_use_are_rejected_with_the_reason(redis_client: Redis,
                                                                         redis_prefix: str) -> None:
    publisher = Publisher()
    coordinator, _ = coordinator_on(redis_client, redis_prefix, publisher)
    task = TaskRequested(task_id="an.minute:0:60", model="an.minute", position=0, interval=60)

    async def scenario() -> None:
        await coordinator.on_event(b'{"kind": "interval-completed", "model": 5}', TOPICS.interval_completed)
        await coordinator.on_event(task.encode(), TOPICS.bounds_updated)
        await coordinator.on_event(IntervalCompleted(task_id="an.minute:0:60", model="an.minute", position=0,
                                                     interval=60).encode(), TOPICS.interval_completed)

    asyncio.run(scenario())
    rejections = [m for m in publisher.sent if isinstance(m, MessageRejected)]
    assert [(r.topic, r.service) for r in rejections] == [(TOPICS.interval_completed, "coordinator"),
                                                          (TOPICS.bounds_updated, "coordinator")]
    assert "model: Input should be a valid string" in rejections[0].reason
    assert rejections[1].reason == ("kind: expected 'interval-completed', 'bounds-updated' or 'task-failed', got "
                                    "'task-requested'")
    assert rejections[1].raw == task.encode().decode()


def test_events_for_a_model_not_loaded_or_of_an_impossible_length_are_rejected_and_keep_nothing(
        redis_client: Redis, redis_prefix: str) -> None:
    """Before, each kept a failure log entry or batch-size history for whatever model a producer named."""
    publisher = Publisher()
    coordinator, state = coordinator_on(redis_client, redis_prefix, publisher)
    gone = TaskFailed(task_id="an.gone:0:60", model="an.gone", position=0, interval=60, attempts=3, error="x")
    odd = IntervalCompleted(task_id="an.minute:0:7", model="an.minute", position=0, interval=7)

    async def scenario() -> None:
        await coordinator.on_event(gone.encode(), TOPICS.task_failed)
        await coordinator.on_event(odd.encode(), TOPICS.interval_completed)

    asyncio.run(scenario())
    reasons = [m.reason for m in publisher.sent if isinstance(m, MessageRejected)]
    assert reasons == ["an.gone: no transformation of that name is loaded",
                       "an.minute: interval 7 is outside the model's interval.min..interval.max (60..60)"]
    assert state.failures.recent_failures(["an.gone"]) == {}


def test_a_failing_task_is_in_the_models_failure_log_until_it_completes(redis_client: Redis,
                                                                           redis_prefix: str) -> None:
    coordinator, state = coordinator_on(redis_client, redis_prefix, Publisher())
    failures = [TaskFailed(task_id=f"an.minute:{p}:60", model="an.minute", position=p, interval=60, attempts=3,
                           error=f"boom {p}", failed_at_ms=1_000 + p) for p in range(0, 60 * (KEEP_FAILURES + 2), 60)]
    newest = failures[-1]

    async def scenario() -> None:
        for failure in failures:
            await coordinator.on_event(failure.encode(), TOPICS.task_failed)
        await coordinator.on_event(failures[0].encode(), TOPICS.task_failed)  # redelivered: still one entry

    asyncio.run(scenario())
    recent = state.failures.recent_failures(["an.minute", "ext.blocks"])
    assert list(recent) == ["an.minute"]
    assert recent["an.minute"] == failures[::-1][:KEEP_FAILURES]

    completed = IntervalCompleted(task_id=newest.task_id, model="an.minute", position=newest.position, interval=60)
    asyncio.run(coordinator.on_event(completed.encode(), TOPICS.interval_completed))
    assert state.failures.recent_failures(["an.minute"])["an.minute"] == failures[::-1][1:KEEP_FAILURES]


def test_completions_feed_the_batch_sizes_with_their_measured_run_times(redis_client: Redis,
                                                                          redis_prefix: str) -> None:
    coordinator, _ = coordinator_on(redis_client, redis_prefix, Publisher())
    runs = [IntervalCompleted(task_id="an.minute:0:60", model="an.minute", position=0, interval=60, duration_ms=1_300),
            IntervalCompleted(task_id="an.minute:60:1200", model="an.minute", position=60, interval=1200, step=60,
                              duration_ms=1_490)]

    async def scenario() -> None:
        for completed in runs:
            await coordinator.on_event(completed.encode(), TOPICS.interval_completed)

    asyncio.run(scenario())
    fixed_s, per_interval_s = coordinator.planner.batch.fit("an.minute")
    assert fixed_s == pytest.approx(1.29) and per_interval_s == pytest.approx(0.01)


def test_a_failed_batch_makes_the_models_next_batches_smaller(redis_client: Redis, redis_prefix: str) -> None:
    batched = replace(inc("an.minute", ["ext.blocks"], imax=60), sql="SELECT 1",
                      write=Write("replace", replace_where="p >= {{ bounds.start }} AND p < {{ bounds.end }}"))
    coordinator, _ = coordinator_on(redis_client, redis_prefix, Publisher(), batched)
    model = coordinator.models.models["an.minute"]
    assert isinstance(model, IncrementalModel)
    before = coordinator.planner.batch.size(model)
    failed = TaskFailed(task_id=f"an.minute:0:{60 * before}", model="an.minute", position=0, interval=60 * before,
                        attempts=3, error="query timeout")

    asyncio.run(coordinator.on_event(failed.encode(), TOPICS.task_failed))
    assert coordinator.planner.batch.size(model) == before // 2


def test_kafka_away_leaves_the_model_gauges_and_reports_no_consumer_lag(
        redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The model gauges come from Redis and the consumer lag from Kafka: while Kafka is away (a broker restart) the
    leader goes on reporting every model's gaps and lag, drops only the consumer-lag series, and says why in one
    warning (it used to drop every gauge and log a traceback per status interval)."""
    coordinator, _ = coordinator_on(redis_client, redis_prefix, Publisher())
    coordinator.is_leader = True
    coordinator.group_lag = GroupLag("127.0.0.1:9", timeout_s=0.5)  # nothing listens there
    published: list[model_state.ModelStateTables] = []
    lag_series: list[dict[Labels, float]] = []
    monkeypatch.setattr(model_state, "publish", published.append)
    monkeypatch.setattr(metrics.consumer_lag, "replace", lag_series.append)
    try:
        with caplog.at_level(logging.WARNING, logger="cbt.coordinator"):
            asyncio.run(coordinator.report_model_state())
    finally:
        coordinator.group_lag.close()
    assert [tables.gaps for tables in published] == [{(("model", "an.minute"),): 0}]
    assert lag_series == [{}]
    (warning,) = [r for r in caplog.records if r.name == "cbt.coordinator"]
    assert warning.levelno == logging.WARNING and "consumer lag not read" in warning.getMessage()


def test_the_completion_that_completes_a_build_switches_it_without_waiting_for_a_tick(
        redis_client: Redis, redis_prefix: str) -> None:
    live = replace(inc("an.minute", ["ext.blocks"], imax=60), sql="SELECT 1 AS v")
    new = replace(live, sql="SELECT 2 AS v")
    build = Build("an.minute", 2, live, new, "old", "new")
    coordinator, state = coordinator_on(redis_client, redis_prefix, Publisher(), live)
    versions = MemoryVersions()
    versions.record_versions([DeployedVersion("an.minute", 1, "a" * 64, "m", {}, deployed_ms=1),
                              DeployedVersion("an.minute", 2, "b" * 64, "m", {}, deployed_ms=2, state="building",
                                              build_table=build.table)])
    switched: list[tuple[str, str]] = []

    def switch_table(model_id: str, build_table: str, kept: str) -> Switched:
        switched.append((model_id, build_table))
        return Switched()

    async def publish(event: Invalidation) -> None:
        pass

    coordinator.switch = Switch(state.coverage, state.ledger, lambda: versions, MemoryRecord, switch_table,
                                lambda table: None, publish)
    coordinator.builds, coordinator.is_leader = {build.model: build}, True
    coordinator.models = with_builds(coordinator.files_models, coordinator.builds)
    state.coverage.record_completed("an.minute", (0, 120), 0)
    state.coverage.record_completed(build.table, (0, 60), 0)

    async def scenario() -> None:
        await coordinator.on_event(IntervalCompleted(task_id=f"{build.table}:60:60", model=build.table, position=60,
                                                     interval=60).encode(), TOPICS.interval_completed)
        assert switched == [], "the build is not complete yet"
        state.coverage.record_completed(build.table, (60, 120), 0)
        await coordinator.on_event(IntervalCompleted(task_id=f"{build.table}:60:60", model=build.table, position=60,
                                                     interval=60).encode(), TOPICS.interval_completed)
        for _ in range(50):  # (no tick runs here: only the completion can have switched it)
            if switched:
                break
            await asyncio.sleep(0.02)

    asyncio.run(scenario())
    assert switched == [("an.minute", build.table)] and coordinator.builds == {}
    assert {v.version: v.state for v in versions.all_versions()} == {1: "retired", 2: "live"}
