"""Schedules: parsing, validation messages and aligned fire times (UTC)."""

from __future__ import annotations

import pytest

from cbt.base.cron import (
    Schedule,
    ScheduleError,
    next_fire,
    parse_duration_s,
    parse_schedule,
    previous_fire,
    schedule_problem,
)

VALID = [
    pytest.param("@every 30s", 30, None, id="every-seconds"),
    pytest.param("@every 1h30m", 5400, None, id="every-compound"),
    pytest.param("@every 2d", 172800, None, id="every-days"),
    pytest.param("@hourly", None, "0 * * * *", id="hourly"),
    pytest.param("@daily", None, "0 0 * * *", id="daily"),
    pytest.param("@midnight", None, "0 0 * * *", id="midnight"),
    pytest.param("@weekly", None, "0 0 * * 0", id="weekly"),
    pytest.param("@monthly", None, "0 0 1 * *", id="monthly"),
    pytest.param("@yearly", None, "0 0 1 1 *", id="yearly"),
    pytest.param("*/5 * * * *", None, "*/5 * * * *", id="cron"),
    pytest.param("  0   3 * * 1-5 ", None, "0 3 * * 1-5", id="cron-extra-spaces"),
]


@pytest.mark.parametrize(("text", "every_s", "cron"), VALID)
def test_valid(text: str, every_s: int | None, cron: str | None) -> None:
    parsed = parse_schedule(text)
    assert (parsed.every_s, parsed.cron) == (every_s, cron)
    assert schedule_problem(text) is None


INVALID = [
    pytest.param("", "schedule is empty", id="empty"),
    pytest.param("* * * *", "has 4 fields; expected 5", id="four-fields"),
    pytest.param("* * * * * *", "has 6 fields; expected 5", id="six-fields"),
    pytest.param("61 * * * *", "does not parse", id="minute-out-of-range"),
    pytest.param("a b c d e", "does not parse", id="words"),
    pytest.param("@every", "expected '@every <duration>'", id="every-without-duration"),
    pytest.param("@every 30", "@every needs a unit", id="every-without-unit"),
    pytest.param("@every 0s", "positive duration", id="every-zero"),
    pytest.param("@every 500ms", "whole seconds", id="every-sub-second"),
    pytest.param("@every 5 minutes", "expected '@every <duration>'", id="every-words"),
    pytest.param("@every 5x", "expected a duration", id="every-bad-unit"),
    pytest.param("@reboot", "unknown schedule '@reboot'", id="unknown-descriptor"),
    pytest.param("0 0 30 2 *", "never fires", id="cron-30-february"),
    pytest.param("0 0 31 4,6,9,11 *", "never fires", id="cron-31st-of-30-day-months"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid(text: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        parse_schedule(text)
    problem = schedule_problem(text)
    assert problem is not None and message in problem


def test_a_rare_schedule_that_fires_is_valid() -> None:
    """29 February fires every four years: rare, not never."""
    assert parse_schedule("0 0 29 2 *").cron == "0 0 29 2 *"


def test_a_schedule_that_never_fires_raises_a_schedule_error_at_run_time_too() -> None:
    """Built without validation (a stored override from before it was checked): the fire-time functions say which
    schedule and why, as a ScheduleError, not croniter's own error."""
    never = Schedule(text="0 0 30 2 *", cron="0 0 30 2 *")
    with pytest.raises(ScheduleError, match="no fire time after"):
        next_fire(never, 1_700_000_000)
    with pytest.raises(ScheduleError, match="no fire time before"):
        previous_fire(never, 1_700_000_000)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        pytest.param("@every 30s", 60, 90, id="every-on-boundary-is-strictly-after"),
        pytest.param("@every 30s", 61, 90, id="every-aligned-to-epoch"),
        pytest.param("*/5 * * * *", 299, 300, id="cron-next"),
        pytest.param("*/5 * * * *", 300, 600, id="cron-strictly-after"),
        pytest.param("@hourly", 3600, 7200, id="hourly"),
        pytest.param("0 0 * * *", 1_700_000_000, 1_700_006_400, id="daily-utc"),
    ],
)
def test_next_fire(schedule: str, after: int, expected: int) -> None:
    assert next_fire(schedule, after) == expected


@pytest.mark.parametrize(
    ("schedule", "at", "expected"),
    [
        pytest.param("@every 30s", 89, 60, id="every"),
        pytest.param("@every 30s", 90, 90, id="every-at-fire-time"),
        pytest.param("*/5 * * * *", 599, 300, id="cron"),
        pytest.param("*/5 * * * *", 600, 600, id="cron-at-fire-time"),
    ],
)
def test_previous_fire(schedule: str, at: int, expected: int) -> None:
    assert previous_fire(schedule, at) == expected


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param(90, 90, id="int"),
        pytest.param("90", 90, id="digits"),
        pytest.param("5m", 300, id="minutes"),
        pytest.param("1h30m15s", 5415, id="compound"),
        pytest.param("1500ms", None, id="fraction-rejected"),
        pytest.param("-5s", None, id="negative-rejected"),
        pytest.param(True, None, id="bool-rejected"),
    ],
)
def test_durations(value: str | int, seconds: int | None) -> None:
    if seconds is None:
        with pytest.raises(ScheduleError):
            parse_duration_s(value)
    else:
        assert parse_duration_s(value) == seconds
