"""Bodies of the original CBT's REST API (ethpandaops/cbt ``api/openapi.yaml``), as the CBT-compatible routes answer
them: CBT's field names and enums, its ``{position, interval}`` ranges (not our ``[start, end)`` pairs) and a
``total`` beside every list. Optional fields CBT omits are omitted (the routes drop ``None``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CbtBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


RunStatus = Literal["success", "failed", "running", "pending"]
CoverageStatus = Literal["full_coverage", "has_gaps", "no_data", "not_initialized"]


class ModelSummary(CbtBody):
    id: str
    type: Literal["external", "transformation"]
    database: str
    table: str
    description: str | None = None


class ModelSummaryList(CbtBody):
    models: list[ModelSummary]
    total: int


class ExternalInterval(CbtBody):
    type: str


class ExternalCache(CbtBody):
    incremental_scan_interval: str
    full_scan_interval: str


class ExternalModel(CbtBody):
    id: str
    database: str
    table: str
    description: str | None = None
    interval: ExternalInterval
    cache: ExternalCache
    lag: int


class ExternalModelList(CbtBody):
    models: list[ExternalModel]
    total: int


class TransformationInterval(CbtBody):
    min: int
    max: int
    type: str


class TransformationSchedules(CbtBody):
    forwardfill: str
    backfill: str


class TransformationLimits(CbtBody):
    min: int | None = None
    max: int | None = None


class TransformationFill(CbtBody):
    direction: Literal["head", "tail"]
    allow_gap_skipping: bool
    buffer: int


class TransformationMetadata(CbtBody):
    last_run_status: RunStatus = Field(description="failed: tasks in the failure log; running: tasks in flight; "
                                                   "pending: nothing completed yet; else success")


class TransformationModel(CbtBody):
    id: str
    database: str
    table: str
    description: str | None = None
    type: Literal["scheduled", "incremental"]
    content_type: Literal["sql", "exec"]
    content: str
    tags: list[str]
    depends_on: list[str | list[str]] = Field(description="an id (required) or a list of ids (an OR group)")
    metadata: TransformationMetadata
    schedule: str | None = None
    interval: TransformationInterval | None = None
    schedules: TransformationSchedules | None = None
    limits: TransformationLimits | None = None
    fill: TransformationFill | None = None


class TransformationModelList(CbtBody):
    models: list[TransformationModel]
    total: int


class ExternalBounds(CbtBody):
    id: str
    min: int
    max: int = Field(description="raw scanned bounds, max exclusive, before lag (as CBT's bounds cache)")
    initial_scan_complete: bool


class ExternalBoundsList(CbtBody):
    bounds: list[ExternalBounds]
    total: int


class Range(CbtBody):
    position: int
    interval: int


class CoverageSummary(CbtBody):
    id: str
    ranges: list[Range] = Field(description="the completed ranges, merged where they touch")


class CoverageList(CbtBody):
    coverage: list[CoverageSummary]
    total: int


class GapInfo(CbtBody):
    start: int
    end: int
    size: int
    overlaps_request: bool


class ModelCoverageInfo(CbtBody):
    has_data: bool
    first_position: int
    last_end_position: int
    ranges_in_window: list[Range] | None = None
    gaps_in_window: list[GapInfo] | None = None


class BoundsInfo(CbtBody):
    min: int
    max: int
    has_data: bool
    lag_applied: int | None = None


class DependencyDebugInfo(CbtBody):
    id: str
    type: Literal["required", "or_group"]
    node_type: Literal["external", "transformation"]
    is_incremental: bool | None = None
    bounds: BoundsInfo
    gaps: list[GapInfo] | None = None
    coverage_status: CoverageStatus | None = None
    blocking: bool
    or_group_members: list[DependencyDebugInfo] | None = None
    child_dependencies: list[DependencyDebugInfo] | None = None


class ValidRange(CbtBody):
    min: int
    max: int


class BlockingGap(CbtBody):
    dependency_id: str
    gap: GapInfo


class ValidationDebugInfo(CbtBody):
    in_bounds: bool
    valid_range: ValidRange | None = None
    has_dependency_gaps: bool
    blocking_gaps: list[BlockingGap]
    next_valid_position: int | None = None
    reasons: list[str]


class CoverageDebug(CbtBody):
    model_id: str
    position: int
    interval: int
    end_position: int
    can_process: bool = Field(description="the worker's own verdict on [position, end_position)")
    model_coverage: ModelCoverageInfo
    dependencies: list[DependencyDebugInfo]
    validation: ValidationDebugInfo


class IntervalTypeTransformation(CbtBody):
    name: str
    expression: str | None = None
    format: Literal["datetime", "date", "time", "duration", "relative"] | None = None


class IntervalTypes(CbtBody):
    interval_types: dict[str, list[IntervalTypeTransformation]]


class ScheduledRun(CbtBody):
    id: str
    last_run: str | None = Field(default=None, description="RFC 3339: when the latest successful run was recorded")


class ScheduledRunList(CbtBody):
    runs: list[ScheduledRun]
    total: int


class AuthSession(CbtBody):
    management_enabled: bool
    auth_methods: list[str]
    authenticated: bool
