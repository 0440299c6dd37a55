"""``interval_types``: how a position of each interval type is shown to people (a slot as its time, a block as a label).

The original CBT's form loads unchanged::

    interval_types:
      slot:
        - name: Time
          expression: "(value * 12 + 1606824023) * 1000"
          format: datetime
        - name: Slot
          label: "slot {value}"

Each interval type (a model's ``interval.type``) lists named transformations, shown in order: ``expression`` (the
safe arithmetic of ``cbt.config.position_expr``; none means the position itself), then ``format`` of the result
(as in CBT, ``datetime``/``date``/``time``/``relative`` read milliseconds since the epoch and ``duration``
milliseconds; ``number`` or none: the number), then ``label``, a template whose ``{value}`` is the formatted result.
A type the config does not list is shown by ``default_transformations``: a time type (unix seconds) as its time,
any other as its number. Pure: no I/O.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from cbt.config.position_expr import ExpressionError, Program, compile_expression, evaluate

Format = Literal["datetime", "date", "time", "duration", "relative", "number"]


class Transformation(BaseModel):
    """One way of showing a position: a name, an optional expression, a format and a label."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    expression: str | None = None
    format: Format | None = None
    label: str | None = None
    _program: Program = PrivateAttr(default="value")

    @field_validator("expression")
    @classmethod
    def _valid_expression(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compile_expression(value)
            except ExpressionError as e:
                raise ValueError(f"invalid expression {value!r}: {e}") from None
        return value

    @field_validator("label")
    @classmethod
    def _valid_label(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            fields = [f for _, f, spec, conv in string.Formatter().parse(value) if f is not None or spec or conv]
        except ValueError as e:
            raise ValueError(f"invalid label {value!r}: {e}") from None
        if fields != ["value"]:
            raise ValueError(f"a label holds exactly one {{value}} placeholder and no other braces, got {value!r}")
        return value

    def model_post_init(self, context: object, /) -> None:
        self._program = "value" if self.expression is None else compile_expression(self.expression)

    @property
    def program(self) -> Program:
        """The expression compiled (``"value"`` without one): what the web UI evaluates."""
        return self._program

    def show(self, position: int, now_ms: int) -> str:
        """``position`` transformed, formatted and labelled; ExpressionError when the expression cannot compute it
        (a division by zero, a value out of range)."""
        number = evaluate(self._program, position)
        text = format_value(number, self.format, now_ms)
        return text if self.label is None else self.label.replace("{value}", text)


IntervalTypes = Mapping[str, Sequence[Transformation]]

TIME_DEFAULT = (Transformation(name="Time", expression="value * 1000", format="datetime"),)
"""How a time type (unix seconds) is shown when the config does not say."""
NUMBER_DEFAULT = (Transformation(name="Position"),)


def transformations_for(interval_type: str, configured: IntervalTypes, is_time: bool) -> Sequence[Transformation]:
    """The configured transformations of ``interval_type``, else its default."""
    if interval_type in configured:
        return configured[interval_type]
    return TIME_DEFAULT if is_time else NUMBER_DEFAULT


def format_value(number: float, fmt: Format | None, now_ms: int) -> str:
    """``number`` in ``fmt``: times in UTC (``2020-12-01 12:00:23 UTC``), numbers with thousands separators."""
    if fmt in ("datetime", "date", "time"):
        try:
            at = datetime.fromtimestamp(number / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ExpressionError(f"{number} is not a time in milliseconds") from None
        pattern = {"datetime": "%Y-%m-%d %H:%M:%S UTC", "date": "%Y-%m-%d", "time": "%H:%M:%S UTC"}[fmt]
        return at.strftime(pattern)
    if fmt == "duration":
        return duration_text(number / 1000)
    if fmt == "relative":
        seconds = (now_ms - number) / 1000
        return f"{duration_text(seconds)} ago" if seconds >= 0 else f"in {duration_text(-seconds)}"
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    return f"{number:,}" if isinstance(number, int) else f"{number:,.2f}"


def duration_text(seconds: float) -> str:
    """``90`` → ``1m 30s``, ``90000`` → ``1d 1h`` (the web UI's formatDuration)."""
    s = round(abs(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d" + (f" {hours}h" if hours else "")
    if hours:
        return f"{hours}h" + (f" {minutes}m" if minutes else "")
    if minutes:
        return f"{minutes}m" + (f" {s}s" if s else "")
    return f"{s}s"
