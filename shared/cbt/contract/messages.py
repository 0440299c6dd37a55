"""Message bodies on the Kafka topics (docs/design/services.md#messages): JSON, validated by pydantic, each with a
``kind`` and version.

Every message is frozen and forbids unknown fields, so a malformed or foreign body is rejected by name instead of
half-understood. ``decode`` picks the class from the ``kind`` field, never by guessing from the shape.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from cbt.base.tasks import TaskDirection, incremental_task_id, scheduled_task_id
from cbt.models.interval_checks import IntervalCheck
from cbt.models.spec import ModelId

MAX_POSITION = 2**53
"""Positions above this are not exact through Redis's Lua scripts (doubles); no real position domain needs them."""
Position = Annotated[int, Field(ge=0, le=MAX_POSITION)]
Length = Annotated[int, Field(gt=0, le=MAX_POSITION)]
"""An interval's or a batch step's number of positions."""


def now_ms() -> int:
    return int(time.time() * 1000)


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    schema_version: Literal[1] = 1

    def encode(self) -> bytes:
        return self.model_dump_json().encode()


class TaskRequested(Message):
    """Run one model for one interval (incremental) or one scheduled time (scheduled)."""

    kind: Literal["task-requested"] = "task-requested"
    task_id: str
    model: ModelId
    position: Position | None = None
    interval: Length | None = None
    scheduled_unix: Position | None = None
    direction: TaskDirection = "forward"
    pool: str = "default"
    enqueued_at_ms: int = Field(default_factory=now_ms)
    step: Length | None = None
    """A batch (docs/design/scheduling.md#batched-runs): ``[position, position + interval)`` is ``interval / step``
    intervals of ``step``, run as one job and recorded per interval; ``None``: one interval."""
    version: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """The model's version the coordinator planned it with (``cbt.models.versions``): a worker whose files define
    another version hands the task back or drops it (docs/changing-models.md); ``None``: any version."""
    recheck: tuple[IntervalCheck, ...] | None = None
    """Run only these checks over the interval's published rows, as a deployment whose checks changed asks
    (docs/checks.md#when-a-check-changes): nothing is computed, written or covered; ``None``: run the model."""

    @model_validator(mode="after")
    def _one_shape(self) -> TaskRequested:
        incremental = self.position is not None and self.interval is not None
        if incremental == (self.scheduled_unix is not None):
            raise ValueError("a task has either position+interval (incremental) or scheduled_unix (scheduled)")
        if self.step is not None and (self.interval is None or self.interval % self.step):
            raise ValueError(f"step {self.step} must divide the interval {self.interval}")
        expected = (
            incremental_task_id(self.model, self.position, self.interval)  # type: ignore[arg-type]
            if incremental
            else scheduled_task_id(self.model, self.scheduled_unix)  # type: ignore[arg-type]
        )
        if self.task_id != expected:
            raise ValueError(f"task_id must be {expected!r}, got {self.task_id!r}")
        return self

    @property
    def end(self) -> int | None:
        return None if self.position is None or self.interval is None else self.position + self.interval


class IntervalCompleted(Message):
    """A task's effect is durable and its coverage recorded; dependents may be re-planned at once."""

    kind: Literal["interval-completed"] = "interval-completed"
    task_id: str
    model: ModelId
    position: Position | None = None
    interval: Length | None = None
    scheduled_unix: Position | None = None
    direction: TaskDirection = "forward"
    attempt: int = 1
    duration_ms: int = 0
    enqueued_at_ms: int = 0
    completed_at_ms: int = Field(default_factory=now_ms)
    worker: str = ""
    step: Length | None = None
    """The task's ``step`` (a batch of ``interval / step`` intervals), else ``None``."""
    version: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """The version of the model that computed it: its data fingerprint as the worker loaded it
    (``cbt.models.versions``, docs/changing-models.md); ``None`` from a worker that could not fingerprint it."""


class TaskFailed(Message):
    """A task failed its last attempt; it is retried on a later backfill tick."""

    kind: Literal["task-failed"] = "task-failed"
    task_id: str
    model: ModelId
    position: Position | None = None
    interval: Length | None = None
    scheduled_unix: Position | None = None
    attempts: int
    error: str
    failed_at_ms: int = Field(default_factory=now_ms)
    worker: str = ""


class BoundsUpdated(Message):
    """An external model's scanned bounds changed (raw: ``[min, max)`` before lag)."""

    kind: Literal["bounds-updated"] = "bounds-updated"
    model: ModelId
    min: Position
    max: Position
    previous_min: int | None = None
    previous_max: int | None = None
    scan: Literal["full", "incremental"] = "full"
    scanned_at_ms: int = Field(default_factory=now_ms)


AnyMessage = Annotated[TaskRequested | IntervalCompleted | TaskFailed | BoundsUpdated, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyMessage)


def decode(raw: bytes | str) -> TaskRequested | IntervalCompleted | TaskFailed | BoundsUpdated:
    """Parse a message body by its ``kind``; raises ``pydantic.ValidationError`` with the reason."""
    message: TaskRequested | IntervalCompleted | TaskFailed | BoundsUpdated = _ADAPTER.validate_json(raw)
    return message


# -- invalidations (docs/design/invalidations.md#invalidation-events) ----------------------------------------------
# Their own topic, decoded on their own (``decode_invalidation``).

RAW_BODY_LIMIT = 64 * 1024
"""How much of a rejected body ``InvalidationRejected.raw`` keeps."""
Text = Annotated[str, Field(min_length=1, max_length=200)]
MetadataValue = str | int | float | bool | None


class Invalidation(Message):
    """Positions ``[start, end)`` of ``model`` changed upstream: recompute what was derived from them.

    ``model`` is a model id (``database.table``) or a table name that is unique among the models. ``id`` makes the
    event idempotent: a second event with the same id is a duplicate and changes nothing (derive it from what
    happened, e.g. ``reorg:<chain>:<fork block>:<new head>``, so a retried publish deduplicates). With ``cascade``
    (the default) every descendant is invalidated too, each on its own interval grid.
    """

    kind: Literal["invalidation"] = "invalidation"
    id: Text
    model: Annotated[str, Field(min_length=1, max_length=400)]
    start: Annotated[int, Field(ge=0, le=MAX_POSITION)]
    end: Annotated[int, Field(gt=0, le=MAX_POSITION)]
    reason: Text = Field(description="why, e.g. reorg, correction, manual")
    source: Text = Field(description="the system that sent the event")
    metadata: dict[str, MetadataValue] = Field(default_factory=dict, max_length=100)
    cascade: bool = True
    created_at_ms: Position = Field(default_factory=now_ms)

    @model_validator(mode="after")
    def _non_empty_range(self) -> Invalidation:
        if self.end <= self.start:
            raise ValueError(f"end must be greater than start (half-open [start, end)), got [{self.start}, {self.end})")
        return self


class InvalidationRejected(Message):
    """An event on the ``invalidation`` topic that was not applied, with the reason; ``raw`` is its body as text."""

    kind: Literal["invalidation-rejected"] = "invalidation-rejected"
    raw: Annotated[str, Field(max_length=RAW_BODY_LIMIT)]
    reason: str
    id: str | None = None
    """The event's id when it could be read."""
    received_at_ms: int = Field(default_factory=now_ms)


class MessageRejected(Message):
    """A body on a consumed topic that the consuming service could not use (malformed, or of another kind), with
    the reason; ``raw`` is the body as text. The service acknowledged it and kept running."""

    kind: Literal["message-rejected"] = "message-rejected"
    topic: str
    service: str
    raw: Annotated[str, Field(max_length=RAW_BODY_LIMIT)]
    reason: str
    received_at_ms: int = Field(default_factory=now_ms)


def rejected(topic: str, service: str, raw: bytes, reason: str) -> MessageRejected:
    """The ``message-rejected`` body for ``raw``."""
    return MessageRejected(topic=topic, service=service, raw=raw.decode("utf-8", errors="replace")[:RAW_BODY_LIMIT],
                           reason=reason[:2000])


def describe(error: ValidationError) -> str:
    """A pydantic error as one line per problem: ``field: message``."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "body"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def decode_invalidation(raw: bytes | str) -> Invalidation:
    """Parse an ``invalidation`` body; raises ``pydantic.ValidationError`` with the reason."""
    return Invalidation.model_validate_json(raw)
