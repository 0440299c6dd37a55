"""What the routes work with: the config, the models, and ports to the hot state, the admin tables and the
commands that go out over Kafka — declared here (the API consumes them), implemented by ``hot_state``, ``records``
and ``app``. The app is built from one ``ApiContext``, so tests can build it with real adapters or stand-ins."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from cbt.api.events import EventHub
from cbt.api.history import AuditAction, Completion
from cbt.config.settings import Config
from cbt.contract.messages import Invalidation, TaskFailed
from cbt.models.dag import ModelSet
from cbt.models.spec import ModelId, ScheduledModel
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import Piece
from cbt.scheduling.state import RawBounds, StateSnapshot
from cbt.state.admin_records import InvalidationRecord, RetriedAttempt, ScheduledRun


class HotState(Protocol):
    """Redis: blocking calls of a few milliseconds."""

    def snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot: ...
    def failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]: ...
    def bounds(self, model_ids: Collection[ModelId]) -> dict[ModelId, RawBounds]: ...
    def request_refresh(self, model_id: ModelId) -> None: ...
    def skip(self, model_id: ModelId, r: Range) -> Coverage: ...
    def unskip(self, model_id: ModelId, r: Range) -> Coverage: ...


class AdminRecords(Protocol):
    """The Delta admin tables: blocking calls of a few hundred milliseconds."""

    def completions(self, model_id: ModelId, limit: int) -> list[Completion]: ...
    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]: ...
    def recent_scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]: ...
    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]: ...
    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]: ...
    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]: ...
    def record_action(self, action: AuditAction) -> None: ...
    def actions(self, limit: int) -> list[AuditAction]: ...


class Commands(Protocol):
    """What goes out over Kafka, as the CLI and the coordinator send it."""

    async def publish_invalidation(self, event: Invalidation) -> None: ...
    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        """Claim the run in the ledger and publish its ``task-requested``; False when it is in flight already."""
        ...


@dataclass(frozen=True)
class ApiContext:
    config: Config
    models: ModelSet
    hot: HotState
    admin: AdminRecords
    commands: Commands
    events: EventHub
