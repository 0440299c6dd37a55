"""Validated model specifications: the values every other part of the system plans and runs from.

Positions are integers; intervals are half-open ``[start, end)``. These are plain frozen values with no I/O: the
loader builds them from files, planners and workers only read them.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass, field
from typing import Literal

from cbt.models.interval_checks import IntervalCheck

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
    allow_gap_skipping: bool = True
    """Forward fill jumps over a dependency's hole (CBT's default) instead of waiting at it."""
    buffer: int = 0


@dataclass(frozen=True)
class Schedules:
    """Cron-like strings (``*/5 * * * *``, ``@every 30s``, ``@hourly``); ``""`` disables the schedule."""

    forwardfill: str = ""
    backfill: str = ""


@dataclass(frozen=True)
class Write:
    """How a SQL transformation writes an interval (docs/design/state.md#write-strategies)."""

    strategy: Literal["sql", "replace", "append"] = "sql"
    unique_key: tuple[str, ...] = ()
    replace_where: str | None = None
    """For ``replace``: a template of the predicate selecting the interval's rows of the target, e.g.
    ``ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }})``."""


@dataclass(frozen=True)
class Expose:
    """The model's table is served by the api's read API (``/api/v1/tables/{model}``; docs/read-api.md)."""

    key: tuple[str, ...] = ()
    """Columns identifying one row, for get by key (default: the write's ``unique_key``); none: no get by key."""
    position: str | None = None
    """The column holding a row's position (an integer, or a timestamp read as unix seconds): with it a read may ask
    for covered ranges only (``covered_only``)."""


BatchMode = Literal["auto", "union", "bounds", "off"]


"""A template expression that names the model's own table (``{{ self.from }}``, ``{{ self.table }}``…)."""


ChangeMode = Literal["recompute", "in_place", "forward_only"]
ChangeCategory = Literal["breaking", "non-breaking", "metadata"]


KEPT_FILES_S = 7 * 24 * 3600
"""How long a switch keeps the old version's files by default (``change.retention``)."""


@dataclass(frozen=True)
class ChangePolicy:
    """What a change of the model's version recomputes (docs/changing-models.md#forward-only-and-forced-categories).

    - ``mode: recompute`` (the default): what the change's category says, built beside the live version and switched
      to in one step when the model can be (``cbt.models.builds.is_buildable``), else replaced interval by interval;
    - ``mode: in_place``: recomputed interval by interval in its own table (for tables too large to copy);
    - ``mode: forward_only``: history is kept; the new definition computes from ``effective_from`` on (re-running
      what was covered from there), or — without it — only intervals not computed yet;
    - ``category``: take this category instead of the classified one (e.g. ``metadata`` for a change known not to
      alter any row, ``breaking`` to recompute every descendant);
    - ``retention``: how long a switch keeps the old version's files for ``cbt rollback`` (seconds; ``None``: until
      deleted by hand).
    """

    mode: ChangeMode = "recompute"
    effective_from: int | None = None
    category: ChangeCategory | None = None
    retention_s: int | None = KEPT_FILES_S


@dataclass(frozen=True)
class Batch:
    """How a backlog of ready intervals may run as one job and one commit (docs/design/scheduling.md#batched-runs).

    - ``union``: one SELECT rendered per interval, all in one statement — the same table as the runs one by one,
      whatever the SQL does with its bounds. Write strategy ``replace``: the SELECTs ``UNION ALL``-ed under one
      ``REPLACE WHERE`` of the intervals' predicates. Strategy ``append``: one ``MERGE`` of the rows the runs one by
      one would insert — each interval's SELECT tagged with its place in the run order (ascending positions, newest
      first for a backfill), and of each key only the rows of the first run that has it;
    - ``bounds``: one run over the batch's whole range, which must give the rows the runs one by one would (row-wise
      SQL, or grouped by a bucket of the position inside the interval) — any write strategy, exec models too;
    - ``off``: one interval per run;
    - ``auto`` (the default): ``bounds`` where the SQL proves it safe (``cbt.models.batch_safety``), else ``union``
      for ``replace`` and ``append`` models, ``off`` for the others — and ``off`` for a model whose SQL reads its own
      table (``{{ self.… }}``: running totals, "the previous interval"): in one statement every interval would read
      the table as it was before the batch, not after the intervals before it. ``cbt.models.batch_choice``
      says which and why.
    """

    mode: BatchMode = "auto"
    max_intervals: int | None = None
    """At most this many intervals per run; ``None``: the scheduler's ``batch.max_intervals``."""


@dataclass(frozen=True)
class BatchChoice:
    """A model's batch mode with ``auto`` resolved, and why, in words for ``cbt render --explain-batching``."""

    mode: Literal["union", "bounds", "off"]
    reason: str
    align: int = 1
    """``bounds`` proven over buckets of the position (``date_trunc('HOUR', ts)``: 3600): a batch runs over its whole
    range only when its intervals start at multiples of ``align`` (then no bucket straddles two intervals), and as
    ``union`` otherwise. 1: every batch."""
    is_declared: bool = False
    """The model's own ``batch.mode``, not ``auto``'s choice (only ``auto``'s choices are checked per batch)."""
    needs_whole_hour_zone: bool = False
    """Proven over ``date_trunc('HOUR', …)``, whose hours are the Spark session's time zone's: aligned with the
    position's hours only when that zone is whole hours from UTC (the worker asks its session; a batch runs as
    ``union`` when it is not, or not known)."""

    def runs_whole(self, start: int, step: int, is_whole_hour_zone: bool = True) -> bool:
        """Whether a batch of intervals of ``step`` from ``start`` runs as one run over its range (mode bounds), in a
        session whose time zone is (``is_whole_hour_zone``) or is not whole hours from UTC."""
        if self.needs_whole_hour_zone and not is_whole_hour_zone:
            return False
        return self.mode == "bounds" and (self.align <= 1 or (start >= 0 and start % self.align == 0
                                                              and step % self.align == 0))


_UTC_OFFSET = re.compile(r"^(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def is_whole_hour_zone(zone: str, year: int) -> bool:
    """Whether the time zone a Spark session names (a region such as ``Europe/Berlin``, ``UTC``, or an offset such as
    ``+05:30``) is a whole number of hours from UTC in January and July of ``year`` (standard and daylight time).
    Unknown names are not (a batch then runs as ``union``)."""
    name = zone.strip()
    if name.upper() in ("UTC", "Z", "GMT", "UT"):
        return True
    offset = _UTC_OFFSET.match(name.upper())
    if offset is not None:
        return int(offset.group(3) or 0) == 0
    try:
        tz = zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    offsets = (dt.datetime(year, month, 1, tzinfo=tz).utcoffset() for month in (1, 7))
    return all(o is not None and o.total_seconds() % 3600 == 0 for o in offsets)


@dataclass(frozen=True)
class ExecOptions:
    """How an exec model's command runs (docs/design/models.md#exec-models); the defaults are the safer ones."""

    shell: bool = False
    """Run the command through ``sh -c`` (pipes, ``&&``, ``$VAR``), as CBT did; else split shell-style and run
    directly."""
    inherit_env: bool | tuple[str, ...] = False
    """``true``: pass the service's environment to the command, as CBT did, but for the infrastructure's settings and
    credentials (``cbt.adapters.scripts.INFRASTRUCTURE_PREFIXES``); a list: only those names besides the basics;
    ``false``: only PATH, HOME and the like."""


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
    """The command of an exec model (``None``: a SQL model); how it runs: ``exec_options``."""
    lag: int = 0
    cache: Cache = Cache()
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: int | None = None
    """Longest the bounds query (or script) may run; ``None``: the global setting."""
    exec_options: ExecOptions = ExecOptions()

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
    """The command of an exec model (``None``: a SQL model); how it runs: ``exec_options``."""
    write: Write = Write()
    timeout_s: int | None = None
    """Longest one SQL statement (or the whole script) of a task may run; ``None``: the global setting."""
    batch: Batch = Batch()
    expose: Expose | None = None
    """Served by the read API; ``None``: not served."""
    exec_options: ExecOptions = ExecOptions()
    change: ChangePolicy = ChangePolicy()
    checks: tuple[IntervalCheck, ...] = ()
    """What each interval's rows must satisfy before they are published (``cbt.models.interval_checks``)."""
    reads: dict[ModelId, ModelId] = field(default_factory=dict)
    """Set on a build only (``cbt.models.builds``), never from a file: for a dependency being rebuilt too, the
    build table its ``ref()`` and ``dep`` read instead (its dependencies already name that build)."""

    @property
    def id(self) -> ModelId:
        return f"{self.database}.{self.table}"


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
    """The command of an exec model (``None``: a SQL model); how it runs: ``exec_options``."""
    timeout_s: int | None = None
    """Longest one SQL statement (or the whole script) of a task may run; ``None``: the global setting."""
    expose: Expose | None = None
    """Served by the read API; ``None``: not served."""
    exec_options: ExecOptions = ExecOptions()

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
