"""Schedules: 5-field cron, ``@every <duration>`` and the ``@hourly``-style descriptors, all in UTC.

Every schedule fires at aligned wall-clock times: ``@every 30s`` fires at unix times that are multiples of 30, not
"30 s after start-up", so any instance computes the same fire times and a restarted service catches up exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from croniter import CroniterBadDateError, croniter

from cbt.base.errors import CbtError

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d)")


class ScheduleError(CbtError, ValueError):
    """A schedule or duration string does not parse; the message says what is accepted."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: either a fixed period in seconds or a 5-field cron expression."""

    text: str
    every_s: int | None = None
    cron: str | None = None


def parse_duration_s(value: str | int) -> int:
    """Whole seconds from ``90``, ``"90"``, ``"30s"``, ``"5m"``, ``"1h30m"``, ``"2d"`` (Go-style, no spaces)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ScheduleError(f"expected a duration such as 30s, 5m or 1h, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ScheduleError(f"a duration cannot be negative, got {value}")
        return value
    text = value.strip()
    if text.isdigit():
        return int(text)
    if not text or _DURATION_PART.sub("", text):
        raise ScheduleError(f"expected a duration such as 30s, 5m, 1h or 1h30m, got {value!r}")
    total_ms = 0
    for number, unit in _DURATION_PART.findall(text):
        total_ms += int(number) * (1 if unit == "ms" else _UNIT_S[unit] * 1000)
    if total_ms % 1000:
        raise ScheduleError(f"durations are whole seconds, got {value!r}")
    return total_ms // 1000


def parse_schedule(text: str) -> Schedule:
    """Parse a schedule; raise ScheduleError saying what is accepted when it does not parse."""
    if not isinstance(text, str):
        raise ScheduleError(f"expected a schedule string, got {text!r}")
    stripped = " ".join(text.split())
    if not stripped:
        raise ScheduleError("schedule is empty")
    if stripped.startswith("@every"):
        return _parse_every(text, stripped)
    if stripped.startswith("@"):
        cron = DESCRIPTORS.get(stripped.lower())
        if cron is None:
            known = ", ".join(sorted(DESCRIPTORS))
            raise ScheduleError(f"unknown schedule {text!r}; use @every <duration>, {known} or 5-field cron")
        return Schedule(text=text, cron=cron)
    fields = stripped.split(" ")
    if len(fields) != 5:
        raise ScheduleError(
            f"cron expression {text!r} has {len(fields)} fields; expected 5 (minute hour day month weekday)"
        )
    if not croniter.is_valid(stripped):
        raise ScheduleError(f"cron expression {text!r} does not parse")
    _require_fires(text, stripped)
    return Schedule(text=text, cron=stripped)


def _require_fires(text: str, cron: str) -> None:
    """A cron expression that parses may still name no date (``0 0 30 2 *``: 30 February): refuse it, as every
    scheduler computes its next and previous fire times from it, and one that has neither stops the tick."""
    now = datetime.now(UTC)
    try:
        croniter(cron, now).get_next(float)
        croniter(cron, now).get_prev(float)
    except CroniterBadDateError:
        raise ScheduleError(f"cron expression {text!r} never fires (it names no date that exists, "
                            "such as 30 February)") from None


def _parse_every(text: str, stripped: str) -> Schedule:
    parts = stripped.split(" ")
    if len(parts) != 2:
        raise ScheduleError(f"expected '@every <duration>' such as '@every 30s', got {text!r}")
    if parts[1].isdigit():
        raise ScheduleError(f"@every needs a unit (s, m, h, d), got {text!r}")
    period_s = parse_duration_s(parts[1])
    if period_s <= 0:
        raise ScheduleError(f"@every needs a positive duration, got {text!r}")
    return Schedule(text=text, every_s=period_s)


def schedule_problem(text: str) -> str | None:
    """The reason ``text`` is not a valid schedule, or None when it is."""
    try:
        parse_schedule(text)
    except ScheduleError as e:
        return str(e)
    return None


def next_fire(schedule: str | Schedule, after_unix: int) -> int:
    """The first fire time strictly after ``after_unix`` (UTC unix seconds)."""
    parsed = schedule if isinstance(schedule, Schedule) else parse_schedule(schedule)
    if parsed.every_s is not None:
        return (after_unix // parsed.every_s + 1) * parsed.every_s
    assert parsed.cron is not None
    start = datetime.fromtimestamp(after_unix, tz=UTC)
    try:
        return int(croniter(parsed.cron, start).get_next(float))
    except CroniterBadDateError:
        raise ScheduleError(f"schedule {parsed.text!r} has no fire time after {start:%Y-%m-%d %H:%M} UTC") from None


def previous_fire(schedule: str | Schedule, at_unix: int) -> int:
    """The last fire time at or before ``at_unix``: the run a recovering service still owes."""
    parsed = schedule if isinstance(schedule, Schedule) else parse_schedule(schedule)
    if parsed.every_s is not None:
        return at_unix // parsed.every_s * parsed.every_s
    assert parsed.cron is not None
    start = datetime.fromtimestamp(at_unix + 1, tz=UTC)
    try:
        return int(croniter(parsed.cron, start).get_prev(float))
    except CroniterBadDateError:
        raise ScheduleError(f"schedule {parsed.text!r} has no fire time before {start:%Y-%m-%d %H:%M} UTC") from None
