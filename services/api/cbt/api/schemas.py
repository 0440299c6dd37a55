"""Response and request bodies of ``/api/v1`` (docs/design/interfaces.md#rest-api, published in OpenAPI).

Ranges are half-open ``[start, end)`` written as two-item arrays; times are unix milliseconds (``*_ms``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from cbt.contract.messages import MAX_POSITION

Span = Annotated[tuple[int, int], WithJsonSchema({"type": "array", "items": {"type": "integer"}, "minItems": 2,
                                                  "maxItems": 2})]
"""``[start, end)``: a two-item array (published as ``items`` + ``minItems``/``maxItems``, not ``prefixItems``,
which some OpenAPI tools mis-read)."""
ModelType = Literal["external", "incremental", "scheduled"]
ModelFilter = Literal["external", "incremental", "scheduled", "transformation"]
"""``transformation``: incremental or scheduled (CBT's filter)."""
Position = int


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntervalSettings(Body):
    max: int
    min: int


class ModelSummary(Body):
    valid_range: Span | None
    covered: Span | None = Field(description="span of the coverage (an external: its data after lag)")
    gaps: int
    in_flight: int
    failed: int = Field(description="tasks that failed their last attempt and have not completed since")
    lag: int | None
    lag_seconds: int | None
    skipped: Span | None = Field(description="span of the ranges an operator skipped (never planned)")


class ModelItem(Body):
    id: str
    type: ModelType
    database: str
    table: str
    interval_type: str | None
    interval: IntervalSettings | None
    tags: list[str]
    dependencies: list[str] = Field(description="every dependency id, OR-group members included")
    schedule: str | None
    summary: ModelSummary | None
    enabled: bool = Field(default=True, description="false: paused by a live override")
    overridden: list[str] = Field(default_factory=list, description="the fields a live override sets "
                                                                      "(their values here are the override's)")


class ModelList(Body):
    models: list[ModelItem]
    total: int = Field(description="how many models are listed (as CBT's lists)")


class ModelDetail(Body):
    id: str
    type: ModelType
    database: str
    table: str
    path: str = Field(description="the model file, relative to the config file's folder")
    interval_type: str | None
    config: dict[str, Any]
    sql: str | None
    exec: str | None
    dependencies: list[str | list[str]] = Field(description="an id (required) or a list of ids (an OR group)")
    dependents: list[str]
    enabled: bool = Field(default=True, description="false: paused by a live override")
    overridden: list[str] = Field(default_factory=list, description="the fields a live override sets (config "
                                                                      "shows the values in force: the override's)")


class Rendered(Body):
    model: str
    start: int | None
    end: int | None
    sql: str | None
    command: list[str] | None
    env: dict[str, str] | None


StatusName = Literal["covered", "in_flight", "failed", "missing", "invalidated_pending", "skipped", "held", "passed",
                     "warned", "accepted"]


class StatusRangeBody(Body):
    start: int
    end: int
    status: StatusName


class CoverageBody(Body):
    model: str
    window: Span | None = Field(description="null when the model has nothing to show and no window was asked for")
    valid_range: Span | None
    interval_type: str | None
    ranges: list[StatusRangeBody]
    counts: dict[str, int]
    intervals: dict[str, int] | None
    lag: int | None
    lag_seconds: int | None
    frontier: int | None


class GapsBody(Body):
    model: str
    gaps: list[Span]
    valid_range: Span | None


class DependencyNode(Body):
    id: str
    type: str
    kind: Literal["required", "or_group_member"]
    group: int | None
    range: Span | None
    covers: bool
    holes: list[Span]
    reason: str | None
    dependencies: list[DependencyNode]


class ExplainBody(Body):
    model: str
    position: int
    interval: Span
    valid_range: Span | None
    ready: bool
    covered: bool
    in_flight: bool
    reason: str | None
    dependencies: list[DependencyNode]


class TaskItem(Body):
    task_id: str
    range: Span | None
    scheduled_unix: int | None
    status: Literal["success", "retried", "failed"] = Field(
        description="success; retried: this attempt failed and the task was tried again; failed: its last attempt")
    error: str | None
    duration_ms: int | None
    worker: str
    direction: str | None = Field(description="forward | backfill | rerun | consolidated | scheduled; null when "
                                              "not recorded (a task's final failure)")
    at_ms: int
    attempts: int | None = Field(description="retried: which attempt this was; failed: the attempts made")


class TaskList(Body):
    tasks: list[TaskItem]


class FailureItem(Body):
    model: str
    task_id: str
    range: Span | None
    scheduled_unix: int | None
    attempts: int
    error: str
    failed_at_ms: int
    worker: str


class FailureList(Body):
    failures: list[FailureItem]


class CheckResultItem(Body):
    range: Span = Field(description="the interval [position, end)")
    check: str
    severity: Literal["error", "warn"]
    status: Literal["passed", "warned", "failed", "accepted"]
    violations: int = Field(description="violating rows found (row_count: 1 when the count is out of bounds)")
    rows: int | None = Field(description="the interval's rows as computed; null: not counted (the checks ran "
                             "inside the write and every row passed)")
    sample: list[str] = Field(description="up to five violating rows, each as JSON")
    version: str | None = Field(description="the model's version that computed the rows")
    task_id: str
    duration_ms: int = Field(description="how long the task's checks took (one query for all of them)")
    checked_at_ms: int


class HeldItem(Body):
    range: Span
    version: str | None
    reason: str = Field(description="the checks that failed, e.g. 'check not_null_a failed: 2 violating rows'")
    accepted_by: str | None = Field(default=None, description="who accepted its rows anyway (a token's "
                                    "fingerprint): it is being published; null while held")


class AcceptRequest(Body):
    start: int = Field(ge=0, le=MAX_POSITION, description="first position of the range")
    end: int = Field(gt=0, le=MAX_POSITION, description="end of the range, exclusive: [start, end)")
    reason: str = Field(default="manual", min_length=1, max_length=200, description="recorded in the audit row")


class ChecksAccepted(Body):
    model: str
    accepted: list[HeldItem] = Field(description="the held intervals the range overlaps, now accepted: planned "
                                     "again and published whatever their error checks say")


class CheckResultList(Body):
    checks: list[str] = Field(description="the model's checks, by name, as its file declares them")
    held: list[HeldItem] = Field(description="intervals failed checks hold now: not published, dependents waiting")
    results: list[CheckResultItem] = Field(description="recorded verdicts, newest first (cbt_check_results)")


class InvalidationItem(Body):
    id: str
    model: str
    start: int
    end: int
    reason: str
    source: str
    cascade: bool
    created_at_ms: int
    affected: dict[str, list[Span]]


class InvalidationList(Body):
    invalidations: list[InvalidationItem]


class BoundsItem(Body):
    model: str
    min: int | None
    max: int | None
    lag: int
    valid_range: Span | None
    scanned_at_ms: int | None


class BoundsList(Body):
    bounds: list[BoundsItem]


class ScheduledRunItem(Body):
    model: str
    scheduled_unix: int
    status: Literal["success", "failed"]
    error: str | None
    duration_ms: int | None
    at_ms: int


class ScheduledList(Body):
    runs: list[ScheduledRunItem]


class ScheduleItem(Body):
    model: str
    schedule: str = Field(description="the schedule in force (a live override's when one is set)")
    enabled: bool = Field(description="false: paused by a live override (no next run)")
    last_run: ScheduledRunItem | None = Field(description="the latest run (successful or not); null: never ran")
    next_unix: int | None = Field(description="next fire time (UTC unix seconds): the schedule evaluated from the "
                                              "last run, or from now when it never ran; null while paused")
    is_due: bool = Field(description="next_unix is not in the future: a run is owed now")
    problem: str | None = Field(default=None, description="why the schedule has no next fire time (the coordinator "
                                                          "set it aside); null when it has one or is paused")


class ScheduleList(Body):
    now_unix: int
    models: list[ScheduleItem]


class DagNode(Body):
    id: str
    type: ModelType
    rank: int
    status: Literal["ok", "lagging", "failing", "waiting", "external", "scheduled"]


class DagEdge(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(alias="from", description="the dependency")
    target: str = Field(alias="to", description="the dependent")
    or_group: int | None


class DagBody(Body):
    nodes: list[DagNode]
    edges: list[DagEdge]


class ModelChangeItem(Body):
    id: str
    category: str = Field(description="new, breaking, non-breaking or metadata")
    reasons: list[str] = Field(description="why, e.g. 'column total: expression changed'")


class RecomputeItem(Body):
    id: str
    why: list[str]
    ranges: list[list[int]] = Field(description="the covered ranges a deployment recomputes, [start, end) each; "
                                                "none for a scheduled model (it recomputes at its next run)")
    intervals: int | None = Field(None, description="an incremental model: how many intervals the ranges hold")
    tasks: int | None = Field(None, description="how many tasks they run as (batched as the coordinator would)")
    estimate_s: float | None = Field(None, description="about how long those tasks take, from the model's recorded "
                                                       "runs; null when none is recorded")


class KeptItem(Body):
    id: str
    why: str


class ModelChangesBody(Body):
    compared: bool = Field(description="false when the deployed versions cannot be read (spark.warehouse unset)")
    why_not: str | None = None
    first_deployment: bool = False
    changed: list[ModelChangeItem] = []
    recompute: list[RecomputeItem] = []
    unaffected: list[KeptItem] = []
    not_versioned: list[KeptItem] = []


class ModelVersionItem(Body):
    model: str
    version: int
    state: str = Field(description="live, building, retired, superseded or rolled_back (docs/changing-models.md)")
    category: str
    reasons: list[str]
    deployed_at_ms: int = Field(description="when the version reached this state")
    build_table: str | None = Field(default=None, description="a building version: the table it is built into")
    build_covered: list[list[int]] | None = Field(default=None, description="a building version: what its build "
                                                                             "covers, [start, end) each")
    live_covered: list[list[int]] | None = Field(default=None, description="a building version: what the live "
                                                                            "version covers (the build's goal)")
    table_version: int | None = Field(default=None, description="a retired version: the table version a rollback "
                                                                "restores")
    holds: list[list[int]] = Field(default_factory=list, description=(
        "the intervals of the model's table this version's rows hold, [start, end) each (the admin record's "
        "model_version): the live version's whole coverage, or — while an in-place change runs — part of it"))


class ModelVersionsBody(Body):
    recorded: bool = Field(description="false when the versions cannot be read (spark.warehouse unset)")
    versions: list[ModelVersionItem] = Field(description="every model's versions, newest first per model")


class AuditItem(Body):
    at_ms: int
    who: str
    action: str
    target: str
    detail: dict[str, Any]


class AuditList(Body):
    actions: list[AuditItem]


class RerunRequest(Body):
    start: int = Field(ge=0, le=MAX_POSITION, description="first position re-run")
    end: int = Field(gt=0, le=MAX_POSITION, description="end of the range, exclusive: [start, end)")
    cascade: bool = Field(default=True, description="also re-run every descendant's tasks over the range")
    reason: str = Field(default="manual", min_length=1, max_length=200)
    preview: bool = Field(default=False, description="only compute what would re-run; publish nothing")


class SkipRequest(Body):
    start: int = Field(ge=0, le=MAX_POSITION, description="first position skipped (or no longer skipped)")
    end: int = Field(gt=0, le=MAX_POSITION, description="end of the range, exclusive: [start, end)")
    reason: str = Field(default="manual", min_length=1, max_length=200)


class SkippedRanges(Body):
    model: str
    skipped: list[Span] = Field(description="the model's skipped ranges after the change")


class RerunPreview(Body):
    preview: Literal[True] = True
    affected: dict[str, list[Span]]
    intervals: int


class RerunAccepted(Body):
    id: str
    affected: dict[str, list[Span]]
    intervals: int


class RunNowAccepted(Body):
    task_id: str


class RefreshAccepted(Body):
    model: str


class Problem(BaseModel):
    """RFC 9457 problem details; ``errors`` lists each invalid field of a request."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, str]] | None = None


class TransformationItem(Body):
    """One way of showing a position of an interval type (config ``interval_types``)."""

    name: str
    expression: str | None = None
    format: str | None = Field(default=None, description="datetime, date, time, duration, relative or number")
    label: str | None = Field(default=None, description="a template whose {value} is the formatted result")
    program: Any = Field(description="the expression compiled: a number, \"value\", or [operator, *operands]; what "
                                     "the web UI evaluates (operators + - * / // % neg, functions floor ceil round "
                                     "abs min max)")


class IntervalTypeItem(Body):
    is_time: bool = Field(description="positions are unix seconds")
    configured: bool = Field(description="listed in the config's interval_types (else the default)")
    transformations: list[TransformationItem]


class IntervalTypeList(Body):
    interval_types: dict[str, IntervalTypeItem]


class ShownItem(Body):
    name: str
    text: str | None = Field(description="the position shown this way; null when the expression cannot compute it")
    error: str | None = None


class ShownPosition(Body):
    interval_type: str
    position: Position
    shown: list[ShownItem]
