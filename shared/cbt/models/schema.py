"""The fields a model file may contain (docs/design/models.md#fields), as strict pydantic schemas: unknown fields are
errors.

These check each field on its own; rules that tie fields together (``interval.min <= interval.max``, ``append``
needs ``unique_key``…) are in ``rules.py`` so each can point at the exact key it is about.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from cbt.base.cron import parse_duration_s, parse_schedule
from cbt.models.spec import KEPT_FILES_S

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"expected a name of letters, digits, '_' or '-' (no dots or spaces), got {value!r}")
    return value


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _schedule(value: str) -> str:
    parse_schedule(value)
    return value


def _optional_schedule(value: str) -> str:
    return _schedule(value) if value != "" else value


def _duration(value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return parse_duration_s(value)
    return value


def _env_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else value


def _env(env: dict[str, str]) -> dict[str, str]:
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"env name {name!r} must match [A-Za-z_][A-Za-z0-9_]*")
    return env


def _env_name(name: str) -> str:
    if not ENV_NAME.fullmatch(name):
        raise ValueError(f"env name {name!r} must match [A-Za-z_][A-Za-z0-9_]*")
    return name


def _number(value: Any) -> Any:
    """An int where a float is wanted (``within: 3``) is that float; a bool is not a number."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Name = Annotated[str, AfterValidator(_name)]
Text = Annotated[str, AfterValidator(_non_empty)]
CronText = Annotated[str, AfterValidator(_schedule)]
OptionalCronText = Annotated[str, AfterValidator(_optional_schedule)]
DurationS = Annotated[int, BeforeValidator(_duration), Field(gt=0)]
Env = Annotated[dict[str, Annotated[str, BeforeValidator(_env_value)]], AfterValidator(_env)]
Position = Annotated[int, Field(ge=0)]
EnvName = Annotated[str, AfterValidator(_env_name)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ExecFields(Strict):
    """``exec`` in its long form; ``exec: "cmd"`` is ``exec: {command: "cmd"}``."""

    command: Text
    shell: bool = False
    inherit_env: bool | list[EnvName] = False


def _exec_short_form(value: Any) -> Any:
    return {"command": value} if isinstance(value, str) else value


ExecField = Annotated[ExecFields, BeforeValidator(_exec_short_form)]


class ExternalInterval(Strict):
    type: Text


class CacheFields(Strict):
    incremental_scan_interval: DurationS = 60
    full_scan_interval: DurationS = 3600


class ExternalFields(Strict):
    type: Literal["external"] = "external"
    database: Name | None = None
    table: Name
    interval: ExternalInterval
    cache: CacheFields = CacheFields()
    lag: Position = 0
    exec: ExecField | None = None
    env: Env = {}
    timeout: DurationS | None = None


class IntervalFields(Strict):
    max: int = Field(gt=0)
    min: Position = 0
    type: Text


class SchedulesFields(Strict):
    forwardfill: OptionalCronText = ""
    backfill: OptionalCronText = ""


class LimitsFields(Strict):
    min: Position | None = None
    max: Position | None = None


class FillFields(Strict):
    direction: Literal["head", "tail"] = "head"
    allow_gap_skipping: bool = True
    buffer: Position = 0


class WriteFields(Strict):
    strategy: Literal["sql", "replace", "append"] = "sql"
    unique_key: Annotated[list[Text], BeforeValidator(_one_or_many)] = []
    replace_where: Text | None = None


class BatchFields(Strict):
    mode: Literal["auto", "union", "bounds", "off"] = "auto"
    max_intervals: int | None = Field(default=None, gt=0)


class ChangeFields(Strict):
    mode: Literal["recompute", "in_place", "forward_only"] = "recompute"
    effective_from: Position | None = None
    category: Literal["breaking", "non-breaking", "metadata"] | None = None
    retention: DurationS | None = KEPT_FILES_S

    @model_validator(mode="after")
    def _effective_from_is_forward_only(self) -> ChangeFields:
        if self.effective_from is not None and self.mode != "forward_only":
            raise ValueError("effective_from applies to mode forward_only (set change.mode: forward_only)")
        return self


class RowCountFields(Strict):
    min: Position | None = None
    max: Position | None = None
    within: Annotated[float, BeforeValidator(_number), Field(gt=1)] | None = None
    """A factor: the count must lie within [median / within, median * within] of the last ``of_last`` published."""
    of_last: int = Field(default=10, gt=0)

    @model_validator(mode="after")
    def _a_bound(self) -> RowCountFields:
        if self.min is None and self.max is None and self.within is None:
            raise ValueError("give min, max, within (a factor of the recent median) or several")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) must be <= max ({self.max})")
        return self


CHECK_KINDS = ("not_null", "unique", "accepted_values", "row_count", "expression", "sql")


class CheckFields(Strict):
    """One item of ``checks:``: exactly one kind (its key), with an optional name, severity and threshold."""

    name: Name | None = None
    severity: Literal["error", "warn"] = "error"
    threshold: Position = 0
    not_null: Annotated[list[Text], BeforeValidator(_one_or_many), Field(min_length=1)] | None = None
    unique: Annotated[list[Text], BeforeValidator(_one_or_many), Field(min_length=1)] | None = None
    accepted_values: Annotated[dict[Text, Annotated[list[str | int | float | bool], Field(min_length=1)]],
                               Field(min_length=1)] | None = None
    row_count: RowCountFields | None = None
    expression: Text | None = None
    sql: Text | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> CheckFields:
        kinds = [k for k in CHECK_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"a check has exactly one of {', '.join(CHECK_KINDS)}; got "
                             f"{', '.join(kinds) if kinds else 'none'}")
        return self


class ExposeFields(Strict):
    key: Annotated[list[Text], BeforeValidator(_one_or_many)] | None = None
    position: Text | None = None


def _expose(value: Any) -> Any:
    """``expose: true`` is ``expose: {}``; ``false`` is no exposure."""
    if value is True:
        return {}
    return None if value is False else value


Exposure = Annotated[ExposeFields | None, BeforeValidator(_expose)]


class IncrementalFields(Strict):
    type: Literal["incremental"]
    database: Name | None = None
    table: Name
    interval: IntervalFields
    schedules: SchedulesFields
    dependencies: list[Any]
    limits: LimitsFields = LimitsFields()
    fill: FillFields = FillFields()
    tags: list[Text] = []
    env: Env = {}
    exec: ExecField | None = None
    write: WriteFields | None = None
    timeout: DurationS | None = None
    batch: BatchFields = BatchFields()
    expose: Exposure = None
    change: ChangeFields = ChangeFields()
    checks: list[CheckFields] = []


class ScheduledFields(Strict):
    type: Literal["scheduled"]
    database: Name | None = None
    table: Name
    schedule: CronText
    dependencies: list[Any] = []
    tags: list[Text] = []
    env: Env = {}
    exec: ExecField | None = None
    timeout: DurationS | None = None
    expose: Exposure = None


Fields = ExternalFields | IncrementalFields | ScheduledFields
