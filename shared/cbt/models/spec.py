"""Validated model specifications: the values every other part of the system plans and runs from.

Positions are integers; intervals are half-open ``[start, end)``. These are plain frozen values with no I/O: the
loader builds them from files, planners and workers only read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ModelId = str
"""``database.table``."""

Dependency = ModelId | tuple[ModelId, ...]
"""A plain id is required (AND); a tuple is an OR group: at least one member must have data."""


@dataclass(frozen=True)
class SourceRef:
    """Where a model was defined, for error messages: ``path:line``."""

    path: str
    line: int = 1
    body_line: int = 0
    """File line of the first SQL body line (0 for YAML-only models); template errors are reported from it."""


TIME_TYPES = frozenset({"timestamp", "datetime", "unix", "unix_seconds", "epoch"})
"""``interval.type`` names whose positions are unix seconds: lag in positions is lag in seconds, and views show
positions as times."""


def is_time_type(interval_type: str) -> bool:
    return interval_type.strip().lower() in TIME_TYPES


@dataclass(frozen=True)
class Interval:
    max: int
    min: int
    type: str


@dataclass(frozen=True)
class Limits:
    min: int | None = None
    max: int | None = None


@dataclass(frozen=True)
class Fill:
    direction: Literal["head", "tail"] = "head"
    allow_gap_skipping: bool = False
    buffer: int = 0


@dataclass(frozen=True)
class Schedules:
    """Cron-like strings (``*/5 * * * *``, ``@every 30s``, ``@hourly``); ``""`` disables the schedule."""

    forwardfill: str = ""
    backfill: str = ""


@dataclass(frozen=True)
class Write:
    """How a SQL transformation writes an interval (SPEC §7)."""

    strategy: Literal["sql", "replace", "append"] = "sql"
    unique_key: tuple[str, ...] = ()
    replace_where: str | None = None
    """For ``replace``: a template of the predicate selecting the interval's rows of the target, e.g.
    ``ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }})``."""


BatchMode = Literal["auto", "union", "bounds", "off"]


_READS_SELF = re.compile(r"\{\{[^}]*\bself\b")
"""A template expression that names the model's own table (``{{ self.from }}``, ``{{ self.table }}``…)."""


@dataclass(frozen=True)
class Batch:
    """How a backlog of ready intervals may run as one job and one commit (SPEC §5.6).

    - ``union``: one SELECT rendered per interval, combined with ``UNION ALL`` under one ``REPLACE WHERE`` of the
      intervals' predicates — the same rows as the runs one by one, whatever the SQL does with its bounds (write
      strategy ``replace`` only);
    - ``bounds``: one run over the batch's whole range; the model declares that gives the rows the runs one by one
      would (row-wise, or grouped by a key inside the interval) — any write strategy, exec models too;
    - ``off``: one interval per run;
    - ``auto`` (the default): ``union`` for ``replace`` models, ``off`` otherwise — and ``off`` for a model whose SQL
      reads its own table (``{{ self.… }}``: running totals, "the previous interval"): in one statement every
      interval would read the table as it was before the batch, not after the intervals before it.
    """

    mode: BatchMode = "auto"
    max_intervals: int | None = None
    """At most this many intervals per run; ``None``: the scheduler's ``batch.max_intervals``."""


@dataclass(frozen=True)
class Cache:
    incremental_scan_interval_s: int = 60
    full_scan_interval_s: int = 3600


@dataclass(frozen=True)
class ExternalModel:
    database: str
    table: str
    interval_type: str
    source: SourceRef
    sql: str | None = None
    exec: str | None = None
    lag: int = 0
    cache: Cache = Cache()
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: int | None = None
    """Longest the bounds query (or script) may run; ``None``: the global setting."""

    @property
    def id(self) -> ModelId:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class IncrementalModel:
    database: str
    table: str
    interval: Interval
    schedules: Schedules
    source: SourceRef
    dependencies: tuple[Dependency, ...] = ()
    limits: Limits = Limits()
    fill: Fill = Fill()
    tags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    sql: str | None = None
    exec: str | None = None
    write: Write = Write()
    timeout_s: int | None = None
    """Longest one SQL statement (or the whole script) of a task may run; ``None``: the global setting."""
    batch: Batch = Batch()

    @property
    def id(self) -> ModelId:
        return f"{self.database}.{self.table}"

    @property
    def batch_mode(self) -> Literal["union", "bounds", "off"]:
        """How a backlog of this model's intervals runs (``Batch``, with ``auto`` resolved)."""
        if self.batch.mode != "auto":
            return self.batch.mode
        reads_itself = self.sql is not None and _READS_SELF.search(self.sql) is not None
        return "union" if self.sql is not None and self.write.strategy == "replace" and not reads_itself else "off"


@dataclass(frozen=True)
class ScheduledModel:
    database: str
    table: str
    schedule: str
    source: SourceRef
    dependencies: tuple[Dependency, ...] = ()
    tags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    sql: str | None = None
    exec: str | None = None
    timeout_s: int | None = None
    """Longest one SQL statement (or the whole script) of a task may run; ``None``: the global setting."""

    @property
    def id(self) -> ModelId:
        return f"{self.database}.{self.table}"


Model = ExternalModel | IncrementalModel | ScheduledModel
Transformation = IncrementalModel | ScheduledModel


ModelKind = Literal["external", "incremental", "scheduled"]


def model_kind(model: Model) -> ModelKind:
    """``external``, ``incremental`` or ``scheduled``."""
    if isinstance(model, ExternalModel):
        return "external"
    return "incremental" if isinstance(model, IncrementalModel) else "scheduled"


def all_dependency_ids(model: Model) -> tuple[ModelId, ...]:
    """Every id a model depends on, OR-group members included, in declaration order (externals have none)."""
    if isinstance(model, ExternalModel):
        return ()
    return tuple(member for dep in model.dependencies for member in dependency_ids(dep))


def dependency_ids(dep: Dependency) -> tuple[ModelId, ...]:
    """Every model id a dependency names (one for AND, each member for an OR group)."""
    return dep if isinstance(dep, tuple) else (dep,)
