"""The coordinator process: cascades on events at once, ticks schedules as the elected leader."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace

from faststream import AckPolicy
from faststream.confluent import KafkaMessage
from pydantic import ValidationError

from cbt.adapters import runtime
from cbt.adapters.delta_admin import DeltaAdmin, admin_from_config
from cbt.adapters.health import Check
from cbt.adapters.kafka_bus import POLL_S, delivery_of, partition_of, process_span
from cbt.adapters.kafka_consumers import GroupLag
from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.adapters.switch import SparkSwitch
from cbt.base.cron import next_fire
from cbt.base.errors import InfraError
from cbt.config.settings import Config
from cbt.contract.messages import BoundsUpdated, IntervalCompleted, Invalidation, TaskFailed, decode, describe, rejected
from cbt.coordinator import deploy
from cbt.coordinator.switch import Switch, is_complete
from cbt.coordinator.ticker import DueTracker, Fill, missed_run
from cbt.models.builds import (
    VERSIONS_READ_S,
    Build,
    Pin,
    builds_from,
    pinned,
    pins_from,
    running_versions,
    with_builds,
)
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeploymentPlan, VersionRecord
from cbt.models.spec import IncrementalModel, ModelId, ScheduledModel
from cbt.models.versions import Fingerprint
from cbt.observability import metrics, model_state
from cbt.observability.metrics import Labels
from cbt.planning import hot_index
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import Applied, LiveOverrides, ModelView
from cbt.planning.planner import Planner
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.message_checks import event_problem
from cbt.service import skeleton
from cbt.service.lease import LeaseHolder
from cbt.service.poison import PoisonGuard
from cbt.service.skeleton import Clients, Loop, Work
from cbt.state.override_ports import OverrideRecord

log = logging.getLogger("cbt.coordinator")
LEADER_LEASE = "coordinator-leader"
SWITCH_LOOK_S = 0.05
"""How often a build's completion looks again whether the switch can run (its task still in flight)."""


@dataclass
class Coordinator:
    config: Config
    models: ModelSet
    state: RedisState
    planner: Planner
    marks: RedisMarks
    owner: str
    admin: Callable[[], DeltaAdmin]
    """The admin tables, opened on first use (rebuilding the hot index, consolidation)."""
    is_leader: bool = False
    tracker: DueTracker | None = None
    next_consolidation: int | None = None
    consolidation: asyncio.Task[None] | None = None
    """The consolidation running in the background, if any: the leader's ticks go on meanwhile."""
    view: ModelView | None = None
    """The loaded models plus the live config overrides, refreshed each tick (``cbt.planning.override_sync``)."""
    paused: frozenset[ModelId] = frozenset()
    milestone: Callable[[str], None] = lambda _: None
    """Records a start-up milestone (``leader``, ``index ready``, ``first plan``: ``cbt.service.startup``)."""
    versions: Callable[[], VersionRecord] | None = None
    """The deployed model versions' record (``None``: versions are not compared, as in tests of other parts)."""
    prints: Mapping[ModelId, Fingerprint] = field(default_factory=dict)
    """The loaded models' versions (``cbt.coordinator.deploy.fingerprints``)."""
    is_deployed: bool = False
    """Whether this process compared the loaded files with the deployed versions and acted on the changes."""
    builds: dict[ModelId, Build] = field(default_factory=dict)
    """The builds in progress (``cbt.models.builds``): planned beside the live models until the switch."""
    pins: dict[ModelId, Pin] = field(default_factory=dict)
    """The models ``cbt rollback`` switched back (their live definitions run, whatever the files say)."""
    switch: Switch | None = None
    versions_read_at: int = 0
    is_switching: bool = False
    """The builds are complete: their models are paused until their tasks in flight end and the switch runs."""
    leadership: LeaseHolder = field(init=False)
    switch_lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    """Held by whoever checks the builds or switches them (the tick, or a build's completion)."""
    switch_soon: asyncio.Task[None] | None = field(init=False, default=None)

    @property
    def files_versions(self) -> dict[ModelId, str]:
        return {model_id: print_.short for model_id, print_ in self.prints.items()}

    def __post_init__(self) -> None:
        self.files_models = self.models
        """The loaded files' models with the live overrides, without builds (``models`` has them)."""
        self.leadership = LeaseHolder(self.state.leases, LEADER_LEASE, self.owner,
                                      self.config.scheduler.leader_lease_ttl_s)

    async def on_event(self, raw: bytes, topic: str) -> None:
        """A completion or bounds change: re-plan the model's dependents now (and the model itself). A failure: kept
        in the model's failure log (``cbt status``) until that task completes. Any other body is published to
        ``message-rejected`` with the reason, and acknowledged."""
        try:
            message = decode(raw)
        except ValidationError as e:
            await self.reject(raw, topic, describe(e))
            return
        if isinstance(message, IntervalCompleted | TaskFailed):  # nothing kept for a model nobody loaded
            why = event_problem(message, self.models.models, self.config.scheduler.batch.max_intervals)
            if why is not None:
                await self.reject(raw, topic, why)
                return
        if isinstance(message, IntervalCompleted):
            self.state.failures.clear_failure(message.model, message.task_id)
            if message.interval is not None:  # the batch sizes follow the measured run times
                intervals = message.interval // message.step if message.step else 1
                self.planner.observe_run(message.model, intervals, message.duration_ms)
        if isinstance(message, IntervalCompleted):
            self._switch_after(message.model)
        if isinstance(message, IntervalCompleted | BoundsUpdated):
            cascaded = await self.planner.replan_dependents(message.model)
            if cascaded and isinstance(message, IntervalCompleted) and message.model in self.models:
                metrics.cascade_latency.record(max(time.time() * 1000 - message.completed_at_ms, 0) / 1000,
                                               {"model": message.model})
        elif isinstance(message, TaskFailed):
            self.state.failures.record_failure(message)
            model = self.models.models.get(message.model)
            if isinstance(model, IncrementalModel) and message.interval is not None:  # a batch: smaller ones next
                self.planner.observe_failure(message.model, message.interval // model.interval.max)
        else:
            await self.reject(raw, topic, f"kind: expected 'interval-completed', 'bounds-updated' or 'task-failed', "
                                           f"got {message.kind!r}")

    def is_busy(self) -> bool:
        """Work in flight that no consumer lag shows (``--until-idle``): the hot index not built yet (the other
        services wait for it), or a consolidation running."""
        consolidating = self.consolidation is not None and not self.consolidation.done()
        return consolidating or not self.state.coverage.is_built()

    async def reject(self, raw: bytes, topic: str, reason: str) -> None:
        log.error("rejecting an event", extra={"topic": topic, "reason": reason[:500]})
        await self.planner.publish_rejected(rejected(topic, "coordinator", raw, reason))
        metrics.count_rejected(topic, "coordinator", reason)

    async def tick(self) -> None:
        """Renew or take leadership; apply changed live config overrides; as leader, run what the wall clock says
        is due."""
        try:
            self.is_leader = self._hold_leadership()
        except Exception:  # Redis unreachable: this process cannot know it still leads
            self.is_leader = False
            metrics.leader.set(0)
            raise
        await self._refresh_overrides()
        if not self.is_leader:
            metrics.scheduled_tasks_registered.replace({})
            metrics.schedule_broken.replace({})
            return
        self.milestone("leader")
        now = int(time.time())
        if not self.state.coverage.is_built():
            async with self._leadership_kept():
                await self._rebuild_hot_index(now)
            self.tracker = None
        self.milestone("index ready")
        if not self.is_deployed:
            await self._deploy_versions()
        else:
            await self._follow_versions(now)
        await self._switch_when_built()
        if self.tracker is None:
            tracker = DueTracker.for_models([m for m in self.models.incrementals if m.id not in self.paused],
                                            [m for m in self.models.scheduled if m.id not in self.paused], now)
            async with self._leadership_kept():  # (it may read the admin tables: seconds on a busy Spark)
                await self._recover(now, tracker)  # when it raises, the next tick recovers again (it is idempotent)
            self.tracker = tracker
            metrics.scheduled_tasks_registered.replace({**tracker.registered(), **self._consolidation_registered()})
        await self.tracker.run_due(now, self._run_scheduled, self._plan_fills)
        self.milestone("first plan")
        metrics.schedule_broken.replace(self.tracker.broken_series())
        await self._consolidate_when_due(now)

    async def _deploy_versions(self) -> None:
        """Once per process as leader: compare the loaded files with the deployed versions, re-run what the changes
        reach, record the new versions (``cbt.coordinator.deploy``). A failure is logged and tried again next tick;
        planning goes on meanwhile."""
        if self.versions is None:
            self.is_deployed = True
            return
        record = self.versions
        topic = self.planner.topics.invalidation

        async def publish(event: Invalidation) -> None:
            await self.planner.publisher.publish(topic, event, key=event.model)

        async def recheck(plan: DeploymentPlan, covered: Mapping[ModelId, Coverage]) -> None:
            planner = self.planner
            for task in deploy.recheck_tasks(plan, self.files_models, covered, lambda m: planner.pool_for(m.tags),
                                             planner.versions):
                await planner.publisher.publish(planner.topics.task_requested(task.pool), task, key=task.task_id)

        try:
            async with self._leadership_kept():
                versions = await asyncio.to_thread(record)
                await deploy.deploy(self.files_models, self.prints, versions, self.state.coverage.coverages, publish,
                                    int(time.time() * 1000), self.state.coverage.announce_versions, recheck)
                states = await asyncio.to_thread(versions.all_versions)
                self.builds, self.pins = builds_from(states), pins_from(states)
                self.versions_read_at = int(time.time())
        except Exception:
            log.exception("model versions: comparing the files with the deployed versions failed; trying again")
            return
        self.is_deployed = True
        self._plan_with_builds()

    async def _follow_versions(self, now: int) -> None:
        """Every ``VERSIONS_READ_S``, as leader: delete the files switches left behind past their retention, and take
        up what changed the versions record meanwhile (``cbt rollback``), so the models switched back run their kept
        definitions from then on."""
        if self.versions is None or now < self.versions_read_at + VERSIONS_READ_S:
            return
        self.versions_read_at = now
        async with self.switch_lock:  # (a switch running meanwhile would make what is read here stale)
            await self._take_up_versions(self.versions, now)

    async def _take_up_versions(self, versions: Callable[[], VersionRecord], now: int) -> None:
        try:
            states = await asyncio.to_thread(versions().all_versions)
        except Exception:
            log.exception("model versions: reading the versions record failed; trying again")
            return
        builds, pins = builds_from(states), pins_from(states)
        if self.switch is not None and not self.is_switching:
            try:
                async with self._leadership_kept():
                    await self.switch.prune(self.files_models, states, now * 1000)
            except Exception:
                log.exception("model versions: deleting files past their retention failed; trying again")
        if not self.is_switching:  # (again every time: a Redis emptied meanwhile forgot them)
            await asyncio.to_thread(self.state.coverage.announce_versions,
                                    running_versions(self.files_versions, builds, pins))
        if (builds, pins) != (self.builds, self.pins) and not self.is_switching:
            log.info("model versions: the record changed; planning with it", extra={
                "building": sorted(builds), "rolled_back": sorted(pins)})
            self.builds, self.pins = builds, pins
            self._plan_with_builds()

    def _switch_after(self, model_id: ModelId) -> None:
        """A completion of a build (or of its live model) may be the one the switch waits for: check now, in the
        background, rather than at the next tick. The completed task's ledger entry is released just after its
        completion is published, so a switch that finds it still in flight looks again a few times within a tick."""
        if not self.is_leader or not any(model_id in (b.model, b.table) for b in self.builds.values()):
            return
        if self.switch_soon is None or self.switch_soon.done():
            self.switch_soon = asyncio.create_task(self._switch_soon())

    async def _switch_soon(self) -> None:
        looks = max(1, int(self.config.scheduler.tick_s / SWITCH_LOOK_S))
        for _ in range(looks):
            await self._switch_when_built()
            if not self.is_switching:
                return
            await asyncio.sleep(SWITCH_LOOK_S)

    async def _switch_when_built(self) -> None:
        """As leader: once every build covers what its live model covers, pause them, and when nothing of theirs
        is in flight any more, switch (``cbt.coordinator.switch``). A failed switch is tried again next tick."""
        async with self.switch_lock:
            await self._switch_when_built_locked()

    async def _switch_when_built_locked(self) -> None:
        if not self.builds or self.switch is None:
            return
        if not self.is_switching:
            ids = [*self.builds, *(b.table for b in self.builds.values())]
            if not is_complete(self.builds, self.state.coverage.coverages(ids)):
                return
            log.info("model version: builds complete; pausing them for the switch", extra={"models": ids})
            self.is_switching = True
            self._plan_with_builds()  # (paused from here on: once nothing is in flight, nothing more can start)
        if not await asyncio.to_thread(self.switch.ready, self.builds):
            return
        try:
            async with self._leadership_kept():
                await self.switch.run(self.files_models, self.builds)
        except Exception:
            log.exception("model version: the switch failed; trying again")
            return
        self.builds, self.is_switching = {}, False
        self._plan_with_builds()

    def _plan_with_builds(self) -> None:
        """Plan the files' models with the builds in progress beside them (the switching ones paused); the
        schedules are rebuilt (and everything planned once) at the next tick when leading."""
        self.models = with_builds(pinned(self.files_models, self.pins), self.builds)
        switching = {m for b in self.builds.values() for m in (b.model, b.table)} if self.is_switching else set()
        self.planner.models, self.planner.paused = self.models, self.paused | switching
        self.planner.reader = LiveStateReader.of(self.models, self.state)
        self.planner.versions = running_versions(self.files_versions, self.builds, self.pins)
        self.tracker = None

    async def _refresh_overrides(self) -> None:
        """Take up changed live overrides. After a Redis flush the first reader restores them from the admin table
        (seconds on a busy Spark): the leader keeps its lease renewed meanwhile. When the read fails, the models in
        force stay, and the next tick reads again."""
        if self.view is None:
            return
        try:
            if self.is_leader:
                async with self._leadership_kept():
                    applied = await asyncio.to_thread(self.view.refresh)
            else:
                applied = await asyncio.to_thread(self.view.refresh)
        except Exception:
            log.exception("reading the live config overrides failed; the models in force stay until the next tick")
            return
        if applied is not None:
            self._apply_overrides(applied)

    def _apply_overrides(self, applied: Applied) -> None:
        """Plan with the overridden models from now on; the schedules are rebuilt (and everything planned once) at
        this tick when leading."""
        self.files_models, self.paused = applied.models, applied.paused
        self._plan_with_builds()

    def _consolidation_registered(self) -> dict[Labels, float]:
        """The consolidation schedule, as the original CBT's ``system:consolidation`` task (none when off)."""
        return {(("model", "system"), ("operation", "consolidation")): 1} if self.config.scheduler.consolidation else {}

    async def report_model_state(self) -> None:
        """As leader, refresh every model's lag, gaps, backlog and bounds gauges (from Redis) and each worker pool's
        consumer lag (from Kafka); otherwise (or when they cannot be read) report none, so each series has one source
        and none goes stale. Kafka away drops only the consumer lag."""
        if not self.is_leader:
            model_state.publish(model_state.ModelStateTables())
            metrics.consumer_lag.replace({})
            return
        try:
            model_state.publish(await asyncio.to_thread(self._read_model_state))
        except Exception:
            model_state.publish(model_state.ModelStateTables())
            metrics.consumer_lag.replace({})
            raise
        try:
            lag = await asyncio.to_thread(self._read_consumer_lag)
        except InfraError as e:  # (a broker restart): said once per status interval, without a traceback
            metrics.consumer_lag.replace({})
            log.warning("consumer lag not read", extra={"error": str(e)[:300]})
            return
        metrics.consumer_lag.replace({(("pool", pool),): behind for pool, behind in lag.items()})

    @functools.cached_property
    def group_lag(self) -> GroupLag:
        """The worker groups' consumer lag, read from Kafka (its readers open on first use)."""
        return GroupLag(self.config.kafka.bootstrap_servers, self.config.kafka.client)

    def _read_model_state(self) -> model_state.ModelStateTables:
        reader = LiveStateReader.of(self.models, self.state)
        snapshot = reader.read_snapshot([m.id for m in self.models.incrementals])
        snapshot = replace(snapshot, bounds=self.state.bounds.bounds([m.id for m in self.models.externals]))
        return model_state.tables(self.models, snapshot)

    def _read_consumer_lag(self) -> dict[str, int]:
        topics = runtime.topics(self.config)
        return {pool: self.group_lag.behind(topics.worker_group(pool), topics.task_requested(pool))
                for pool in ("default", *self.config.worker.pools)}

    async def _plan_fills(self, kind: Fill, model_ids: list[ModelId]) -> None:
        await self.planner.replan(model_ids, directions=(kind,))

    async def _rebuild_hot_index(self, now: int) -> None:
        """Redis lost the hot index (emptied, or first start): reload it from the admin tables before planning."""
        log.warning("hot coverage index missing in Redis; rebuilding it from the admin tables")
        ids, scheduled = [m.id for m in self.models.incrementals], [m.id for m in self.models.scheduled]
        admin = await self._open_admin()
        ranges = await asyncio.to_thread(hot_index.rebuild, admin, self.state.coverage, ids, scheduled, now)
        log.info("hot coverage index rebuilt", extra={"ranges": sum(ranges.values()), "models": len(ranges)})

    async def _open_admin(self) -> DeltaAdmin:
        """The admin tables, opened in a thread: opening them connects to Spark and creates missing tables, seconds on
        a busy server, and on the event loop it held the lease renewals until the leader lease was lost."""
        return await asyncio.to_thread(self.admin)

    async def _consolidate_when_due(self, now: int) -> None:
        schedule = self.config.scheduler.consolidation
        if not schedule:
            return
        if self.next_consolidation is None:
            self.next_consolidation = next_fire(schedule, now)
        if now < self.next_consolidation or (self.consolidation is not None and not self.consolidation.done()):
            return
        self.next_consolidation = next_fire(schedule, now)
        self.consolidation = asyncio.create_task(self._consolidate())

    async def _consolidate(self) -> None:
        """Merge the admin rows, off the tick: schedules, fills and recoveries keep their times meanwhile (a long
        consolidation used to hold the tick, and every fire inside it collapsed into one late run)."""
        try:
            async with self._leadership_kept():
                admin = await self._open_admin()
                results = await asyncio.to_thread(admin.consolidate, still_allowed=self._still_leader)
        except Exception:
            log.exception("consolidation failed; it runs again at its next fire time")
            return
        for result in results:
            log.info("admin rows consolidated", extra={"model": result.model, "rows_before": result.rows_before,
                                                       "rows_after": result.rows_after,
                                                       "is_deferred": result.is_deferred})

    async def _recover(self, now: int, tracker: DueTracker) -> None:
        """On taking leadership: plan everything once, and run scheduled models whose run was missed (not those
        whose schedule the tracker set aside: it has no fire time to owe)."""
        await self.planner.replan(m.id for m in self.models.incrementals)
        last_runs = await self._last_fire_times()
        for model in self.models.scheduled:
            if model.id in self.paused or (model.id, "scheduled") in tracker.broken:
                continue
            owed = missed_run(model.schedule, last_runs.get(model.id), now)
            if owed is not None:
                await self._run_scheduled(model.id, owed)

    async def _last_fire_times(self) -> dict[ModelId, int]:
        """The fire time each scheduled model last ran for: Redis's mark, else — Redis emptied — the admin tables'
        record of runs, so a fire time that already ran is not run a second time."""
        marks = {m.id: self.marks.get(f"scheduled:{m.id}") for m in self.models.scheduled}
        unknown = [model_id for model_id, mark in marks.items() if mark is None]
        recorded = await asyncio.to_thread((await self._open_admin()).last_scheduled_runs, unknown) if unknown else {}
        out = {model_id: mark for model_id, mark in marks.items() if mark is not None}
        out.update({model_id: run.scheduled_unix for model_id, run in recorded.items()})
        return out

    async def _run_scheduled(self, model_id: str, fire_time: int) -> None:
        model = self.models.get(model_id)
        assert isinstance(model, ScheduledModel)
        await self.planner.run_scheduled(model, fire_time)
        self.marks.put(f"scheduled:{model_id}", fire_time)

    @contextlib.asynccontextmanager
    async def _leadership_kept(self) -> AsyncIterator[None]:
        """Keep renewing the leader lease while a long step (rebuild, consolidation) runs, so it is not lost."""

        def lost() -> None:
            self.is_leader = False
            metrics.leader.set(0)
            log.warning("leadership lost during a long step")

        renewer = asyncio.create_task(self.leadership.keep(self.config.scheduler.leader_lease_renew_s, lost))
        try:
            yield
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer

    def _still_leader(self) -> bool:
        """The fencing check before a leader's write: this process still holds the leader lease (renewed now). A
        leader paused past the lease's ttl (GC, a stalled VM) finds another holder and writes nothing."""
        return self.leadership.renew()

    def _hold_leadership(self) -> bool:
        held = self.leadership.hold()
        if held == "taken":
            log.info("leadership taken", extra={"fencing_token": self.leadership.token})
            self.tracker = None
        metrics.leader.set(int(held is not None))
        return held is not None

def build(config: Config, models: ModelSet, clients: Clients) -> Coordinator:
    state = clients.state
    planner = Planner.from_config(config, models, LiveStateReader.of(models, state), state.ledger, clients.publisher)
    marks = RedisMarks(clients.redis, config.redis.key_prefix)
    admin = functools.cache(lambda: _admin(clients))
    view = ModelView(models, LiveOverrides(state.overrides, functools.cache(lambda: _override_record(admin()))))
    prints = deploy.fingerprints(config, models)
    planner.versions = {model_id: print_.short for model_id, print_ in prints.items()}
    versions = functools.cache(lambda: admin().versions_record())
    on_spark = SparkSwitch(lambda: clients.spark, None if clients.admission is None else functools.partial(
        clients.admission.held_sync, "forward", "switch"))

    async def publish(event: Invalidation) -> None:
        await planner.publisher.publish(planner.topics.invalidation, event, key=event.model)

    switch = Switch(state.coverage, state.ledger, versions, admin,
                    on_spark.switch_table, on_spark.drop_table, publish, on_spark.delete_files, on_spark.delete_build)
    return Coordinator(config, models, state, planner, marks, clients.owner, admin, view=view,
                       milestone=clients.startup.reached, versions=versions, prints=prints, switch=switch)


def _override_record(admin: DeltaAdmin) -> OverrideRecord:
    """The live config overrides' admin table, beside the others (read when Redis lost the overrides)."""
    return admin.overrides_record()


def _admin(clients: Clients) -> DeltaAdmin:
    """The admin tables, each statement holding one of the Spark cluster's permits at the highest priority: the
    rebuild, recovery and consolidation reads unblock every worker's tasks."""
    admin = clients.admin_tables(admin_from_config)
    admin.ensure_tables()
    return admin


def hot_index_built(state: RedisState) -> Check:
    """Ready once the hot coverage index is in Redis (the leader rebuilds it from the admin tables when Redis lost
    it; until then nothing can be planned)."""

    async def check() -> None:
        if not await asyncio.to_thread(state.coverage.is_built):
            raise LookupError("the hot coverage index is not built yet (the leader is rebuilding it)")

    return check


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None,
                until_idle_s: float | None = None) -> None:
    await skeleton.run("coordinator", config, stop, functools.partial(wire, models), health_addr, until_idle_s)


async def wire(models: ModelSet, clients: Clients) -> Work:
    """Events cascade at once; ticks run the schedules as leader; the gauges report every status interval."""
    config = clients.config
    coordinator = build(config, models, clients)
    guard = PoisonGuard("coordinator", config.kafka.max_handling_attempts,
                        ambiguous_max_s=config.kafka.max_ambiguous_s)

    async def on_event(message: KafkaMessage) -> None:
        topic, _ = partition_of(message)
        with process_span(message):
            await guard.handle(delivery_of(message), message.body, lambda: coordinator.on_event(message.body, topic),
                               lambda body, reason: coordinator.reject(body, topic, reason))

    topics = clients.topics
    events = clients.broker.subscriber(
        topics.interval_completed, topics.bounds_updated, topics.task_failed,
        group_id=f"{config.kafka.topic_prefix}coordinator", auto_offset_reset="earliest",
        ack_policy=AckPolicy.NACK_ON_ERROR, polling_interval=POLL_S)
    events(on_event)

    async def wind_down() -> None:
        await asyncio.to_thread(coordinator.group_lag.close)
        if coordinator.consolidation is not None:  # finish it while still leader: no second one may overlap it
            await coordinator.consolidation

    clients.on_close(coordinator.leadership.release)
    return Work(subscribers=[events],
                loops=[Loop("tick", config.scheduler.tick_s, coordinator.tick),
                       Loop("model_state", config.telemetry.status_interval_s, coordinator.report_model_state)],
                checks={"hot_index": hot_index_built(coordinator.state)}, wind_down=wind_down,
                is_busy=coordinator.is_busy)
