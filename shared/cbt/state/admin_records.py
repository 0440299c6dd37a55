"""Rows of the admin tables (docs/design/state.md#admin-tables) as values, and the JSON forms some of their
columns hold.

Ranges are half-open ``[start, end)``. Times are unix milliseconds (UTC), like the messages. These are plain
values: the Delta adapter (``cbt.adapters.delta_admin``) reads and writes them, services build them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from cbt.base.errors import CbtError
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Range
from cbt.scheduling.task_runs import TaskRun

RunStatus = Literal["success", "failed"]
CONSOLIDATED = "consolidated"
"""``direction`` (and ``worker``) of a row written by consolidation rather than by a task."""


def now_ms() -> int:
    return int(time.time() * 1000)


class AdminRecordError(CbtError):
    """A value cannot be stored in, or was not understood from, an admin table."""


def split_model_id(model: ModelId) -> tuple[str, str]:
    """``database.table`` → ``(database, table)``; the database part is everything before the first dot."""
    database, dot, table = model.partition(".")
    if not dot or not database or not table:
        raise AdminRecordError(f"model id: expected 'database.table', got {model!r}")
    return database, table


@dataclass(frozen=True)
class CompletedInterval:
    """One completed task of an incremental model: ``[position, position + interval)`` is covered.

    ``invalidation_seq`` is the model's invalidation sequence the worker read before running the task; the parts
    of the row that an invalidation recorded under a higher epoch overlaps are stale (``cbt.scheduling.protocol``).
    ``task_interval``: the length of each task the row records (``None``: one task, the whole row; a consolidated
    row is a run of touching tasks of one length). ``version``: the model's version that computed it
    (``cbt.models.versions``; ``None``: not known).
    """

    model: ModelId
    position: int
    interval: int
    task_id: str
    direction: str = "forward"
    invalidation_seq: int = 0
    worker: str = ""
    duration_ms: int = 0
    completed_at_ms: int = field(default_factory=now_ms)
    task_interval: int | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        split_model_id(self.model)
        if self.task_interval is not None and (self.task_interval <= 0 or self.interval % self.task_interval):
            raise AdminRecordError(f"{self.task_id}: task_interval {self.task_interval} does not divide interval "
                                   f"{self.interval}")
        if self.position < 0 or self.interval <= 0:
            raise AdminRecordError(
                f"{self.task_id}: expected position >= 0 and interval > 0, got {self.position}, {self.interval}"
            )

    @property
    def range(self) -> Range:
        return (self.position, self.position + self.interval)


@dataclass(frozen=True)
class ScheduledRun:
    """One run of a scheduled model (every run is kept, successful or not)."""

    model: ModelId
    scheduled_unix: int
    task_id: str
    status: RunStatus
    error: str = ""
    duration_ms: int = 0
    updated_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        split_model_id(self.model)


@dataclass(frozen=True)
class RetriedAttempt:
    """An attempt of a task that failed and was tried again (the last attempt's failure is a ``TaskFailed``).

    ``position``/``interval`` are the task's range (``None`` for a scheduled run, which has ``scheduled_unix``)."""

    model: ModelId
    task_id: str
    attempt: int
    error: str
    position: int | None = None
    interval: int | None = None
    scheduled_unix: int | None = None
    direction: str = ""
    worker: str = ""
    duration_ms: int = 0
    failed_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        split_model_id(self.model)


@dataclass(frozen=True)
class InvalidationRecord:
    """An accepted invalidation event and what applying it did.

    ``affected`` holds per model the tasks it re-runs (the named model and, with cascade, its descendants: the
    intervals that ran over the range, or were running) as runs of tasks (``cbt.scheduling.task_runs``);
    ``seqs`` maps each of those models to the event's epoch,
    allocated by the durable record when it records the event (``cbt.scheduling.protocol``).
    """

    id: str
    model: ModelId
    start: int
    end: int
    reason: str
    source: str
    cascade: bool = True
    metadata: Mapping[str, object] = field(default_factory=dict)
    affected: Mapping[ModelId, tuple[TaskRun, ...]] = field(default_factory=dict)
    seqs: Mapping[ModelId, int] = field(default_factory=dict)
    received_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        split_model_id(self.model)

    @property
    def epoch(self) -> int:
        """The event's epoch (0 before it is recorded, or when it affected no incremental model)."""
        return max(self.seqs.values(), default=0)


@dataclass(frozen=True)
class Consolidation:
    """Rows one model had before consolidation and has after it (equal when nothing was merged)."""

    model: ModelId
    rows_before: int
    rows_after: int
    is_deferred: bool = False
    """Concurrent appends to the model kept conflicting with the rewrite; nothing changed, try again later."""


def encode_ranges(affected: Mapping[ModelId, Sequence[TaskRun]]) -> str:
    """``{"db.t": [[start, end, step], …]}`` (runs of tasks), keys sorted so equal values give equal text."""
    return json.dumps({m: [[r.start, r.end, r.step] for r in rs] for m, rs in sorted(affected.items())},
                      separators=(",", ":"))


def encode_seqs(seqs: Mapping[ModelId, int]) -> str:
    return json.dumps(dict(sorted(seqs.items())), separators=(",", ":"))


def encode_metadata(metadata: Mapping[str, object]) -> str:
    try:
        return json.dumps(dict(metadata), sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise AdminRecordError(f"invalidation metadata: expected JSON-serialisable values: {e}") from e


def _json_object(text: str | None, column: str) -> dict[str, object]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise AdminRecordError(f"{column}: expected a JSON object, got {text[:80]!r}") from e
    if not isinstance(value, dict):
        raise AdminRecordError(f"{column}: expected a JSON object, got {text[:80]!r}")
    return value


def _as_int(value: object, column: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AdminRecordError(f"{column}: expected integers, got {value!r}")
    return value


def decode_ranges(text: str | None) -> dict[ModelId, tuple[TaskRun, ...]]:
    """``encode_ranges``'s runs; a two-item ``[start, end]`` (how records listed tasks before runs) is one task."""
    out: dict[ModelId, tuple[TaskRun, ...]] = {}
    for model, ranges in _json_object(text, "affected").items():
        if not isinstance(ranges, list) or not all(isinstance(r, list) and len(r) in (2, 3) for r in ranges):
            raise AdminRecordError(f"affected: {model}: expected [[start, end, step], …], got {str(ranges)[:80]}")
        out[model] = tuple(_run([_as_int(v, "affected") for v in r], model) for r in ranges)
    return out


def _run(values: list[int], model: ModelId) -> TaskRun:
    start, end = values[0], values[1]
    step = values[2] if len(values) == 3 else end - start
    if start >= end or step <= 0:
        raise AdminRecordError(f"affected: {model}: expected start < end and step > 0, got {values}")
    return TaskRun(start, end, step)


def decode_seqs(text: str | None) -> dict[ModelId, int]:
    return {model: _as_int(seq, "seq") for model, seq in _json_object(text, "seq").items()}


def decode_metadata(text: str | None) -> dict[str, object]:
    return _json_object(text, "metadata")


@dataclass(frozen=True)
class CheckedInterval:
    """One check's verdict on one interval of a model, as recorded (``cbt_check_results``, docs/checks.md)."""

    model: ModelId
    position: int
    end: int
    check: str
    severity: str
    status: str
    """passed, warned, failed, or accepted (published by an operator after it failed)."""
    violations: int
    rows: int | None
    """The interval's rows, as computed; None: not counted (the checks ran inside the write, docs/checks.md)."""
    sample: tuple[str, ...] = ()
    """Up to five violating rows, each as JSON."""
    version: str | None = None
    task_id: str = ""
    duration_ms: int = 0
    """How long the task's checks took (every check of the task in one query)."""
    checked_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        split_model_id(self.model)


@dataclass(frozen=True)
class AuditAction:
    """One change an operator made: who (a token's fingerprint, or ``cli:<user>@<host>``), when, what and on which
    target."""

    at_ms: int
    who: str
    action: str
    target: str
    detail: Mapping[str, object] = field(default_factory=dict)
