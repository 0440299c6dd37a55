"""What the routes work with: the config, the models, and ports to the hot state (``cbt.state.ports``, read through
``cbt.planning.live``), the admin tables and the commands that go out over Kafka — the last two declared here (the
API consumes them), implemented by ``records`` and ``app``. The app is built from one ``ApiContext``, so tests can
build it with real adapters or stand-ins."""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cbt.api.access.auth import RevocationStore
from cbt.api.events import EventHub
from cbt.api.history import Completion
from cbt.config.settings import Config
from cbt.contract.messages import BoundsUpdated, Invalidation, TaskFailed
from cbt.models.dag import ModelSet
from cbt.models.spec import ModelId, ScheduledModel
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import LiveOverrides
from cbt.scheduling.coverage import Range
from cbt.scheduling.protocol import Piece
from cbt.state.admin_records import (
    AuditAction,
    CheckedInterval,
    Consolidation,
    InvalidationRecord,
    RetriedAttempt,
    ScheduledRun,
)
from cbt.state.ports import ALL_RESULTS, CheckFilter, RefreshRequests, StatePorts


class AdminRecords(Protocol):
    """The Delta admin tables: blocking calls of a few hundred milliseconds."""

    def completions(self, model_id: ModelId, limit: int) -> list[Completion]: ...
    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]: ...
    def recent_scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]: ...
    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]: ...
    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]: ...
    def check_results(self, model_ids: Collection[ModelId] | None, limit: int,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]: ...
    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]: ...
    def record_action(self, action: AuditAction) -> None: ...
    def actions(self, limit: int) -> list[AuditAction]: ...
    def consolidate(self, model_id: ModelId) -> Consolidation:
        """Merge one incremental model's completion rows now (``AdminStore.consolidate``: coverage unchanged)."""
        ...


class Commands(Protocol):
    """What goes out over Kafka, as the CLI and the coordinator send it."""

    async def publish_invalidation(self, event: Invalidation) -> None: ...
    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        """Claim the run in the ledger and publish its ``task-requested``; False when it is in flight already."""
        ...
    async def announce_bounds(self, event: BoundsUpdated) -> None:
        """Publish ``bounds-updated`` as the bounds-cache does after a scan: the dependents are planned at once."""
        ...


@dataclass(frozen=True)
class ApiContext:
    config: Config
    models: ModelSet
    hot: StatePorts
    """Redis: blocking calls of a few milliseconds."""
    refresh: RefreshRequests
    admin: AdminRecords
    commands: Commands
    events: EventHub
    overrides: LiveOverrides | None = None
    """Live config overrides (Redis, restored from their admin table); None: the routes answer 503."""
    sessions: RevocationStore | None = None
    """Signed-out browser sessions shared by the replicas (Redis); None: each process knows only its own."""
    configured: ModelSet | None = None
    """The models as the config loads them, when ``models`` has live overrides applied (``in_force``); None: the
    same as ``models``."""
    paused: frozenset[ModelId] = frozenset()
    """The models a live override pauses (``enabled: false``)."""
    overridden: Mapping[ModelId, Mapping[str, Any]] = field(default_factory=dict)
    """Each overridden model's override in force: the fields it sets."""

    @property
    def config_models(self) -> ModelSet:
        """The models before any live override: what an override is checked against and shown beside."""
        return self.models if self.configured is None else self.configured

    @functools.cached_property
    def live(self) -> LiveStateReader:
        """The snapshots the pages show, read from ``hot``."""
        return LiveStateReader.of(self.models, self.hot)
