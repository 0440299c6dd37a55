"""The demo generator's plan: a backlog, live slots, late older history and a stalled feed whose rows come late,
never a hole inside what was written."""

from __future__ import annotations

import itertools

import pytest

from cbt.dev.feed import SLOT_S, LiveFeed, Story, Write

NOW = 1_700_000_400  # a slot start
STORY = Story(cycle_s=180, history_at_s=30, history_times=2, outage_at_s=60, outage_s=30)


def started(backlog_s: int = 900) -> LiveFeed:
    feed = LiveFeed(backlog_s, STORY)
    for write in feed.begin(NOW + 5):
        feed.record(write)
    return feed


def step(feed: LiveFeed, elapsed_s: float) -> tuple[list[Write], list[str]]:
    """Plan at ``NOW + elapsed_s`` and record every write, as the demo does when they succeed."""
    writes, events = feed.plan(NOW + int(elapsed_s), elapsed_s)
    for write in writes:
        feed.record(write, elapsed_s)
    return writes, events


def test_backlog_covers_the_last_minutes_up_to_the_current_slot() -> None:
    writes = LiveFeed(900, STORY).begin(NOW + 5)
    assert [(w.feed, w.start, w.end) for w in writes] == [
        ("blocks", NOW + SLOT_S - 900, NOW + SLOT_S), ("transactions", NOW + SLOT_S - 900, NOW + SLOT_S)]
    assert writes[0].note.startswith("backlog: 15 min")


@pytest.mark.parametrize(
    ("elapsed_s", "expected"),
    [
        pytest.param(3, [], id="same-slot-nothing-new"),
        pytest.param(13, [("blocks", "live"), ("transactions", "live")], id="next-slot"),
    ],
)
def test_live_slots(elapsed_s: int, expected: list[tuple[str, str]]) -> None:
    writes, _ = step(started(), elapsed_s)
    assert [(w.feed, w.purpose) for w in writes] == expected


def test_older_history_arrives_late_once_per_cycle_up_to_history_times() -> None:
    feed = started(900)
    oldest = feed.oldest
    assert oldest is not None
    histories = [w for t in range(0, 3 * 180, 6) for w in step(feed, t)[0] if w.purpose == "history"]
    assert [(w.feed, w.start, w.end) for w in histories] == [
        ("blocks", oldest - 300, oldest), ("transactions", oldest - 300, oldest),
        ("blocks", oldest - 600, oldest - 300), ("transactions", oldest - 600, oldest - 300)]
    assert feed.oldest == oldest - 600


def test_outage_holds_blocks_back_then_delivers_them_in_one_late_batch_without_a_hole() -> None:
    feed = started()
    blocks: list[Write] = []
    events: list[str] = []
    for t in range(0, 120, 6):
        writes, new = step(feed, t)
        events += new
        blocks += [w for w in writes if w.feed == "blocks" and w.purpose in ("backlog", "live", "late")]
    assert any(e.startswith("outage") for e in events)
    late = [w for w in blocks if w.purpose == "late"]
    assert len(late) == 1 and late[0].end - late[0].start >= 30 // SLOT_S * SLOT_S
    assert all(a.end == b.start for a, b in itertools.pairwise(blocks)), "blocks are contiguous"


def test_outage_lasts_its_length_even_when_steps_come_late() -> None:
    feed = started()
    step(feed, 59)
    _, events = step(feed, 95)  # the step that would have started the outage came late
    assert events and feed.stalled_since_s == 95
    writes, _ = step(feed, 110)
    assert [w.feed for w in writes if w.purpose in ("live", "late")] == ["transactions"]
    writes, _ = step(feed, 126)
    assert [w.purpose for w in writes if w.feed == "blocks"] == ["late"]


def test_a_failed_write_is_planned_again() -> None:
    feed = started()
    first, _ = feed.plan(NOW + 13, 13)
    again, _ = feed.plan(NOW + 13, 13.5)
    assert first == again


def test_a_resumed_run_writes_from_where_the_previous_one_stopped() -> None:
    writes = LiveFeed(900, STORY).begin(NOW + 5, resume_at=NOW - 3600 + 1)
    assert {w.start for w in writes} == {NOW - 3600}
    assert LiveFeed(900, STORY).begin(NOW + 5, resume_at=NOW)[0].start == NOW + SLOT_S - 900


def test_a_broken_clock_rides_on_one_live_write_per_cycle_and_its_repair_follows() -> None:
    feed = started(900)
    planned: list[tuple[float, Write]] = []
    for t in range(0, 2 * 180, 6):
        writes, _ = feed.plan(NOW + t, t)
        for write in writes:
            feed.record(write, t)
            if write.purpose in ("poison", "repair"):
                planned.append((t, write))
    assert [(t, w.purpose) for t, w in planned] == [(108, "poison"), (150, "repair"), (288, "poison"),
                                                    (330, "repair")], "the first live write of blocks after 100 s"
    (_, poison), (_, repair) = planned[:2]
    assert (poison.feed, poison.start, poison.end) == ("blocks", NOW + 108, NOW + 120), "the newest slot, live"
    assert (repair.start, repair.end) == (poison.end - SLOT_S, poison.end)
    assert "seen_after_slot_start" in poison.note
