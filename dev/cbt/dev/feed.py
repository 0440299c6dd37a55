"""What the demo's data generator writes and when: a backlog, then live slots, with late and delayed rows.

Pure (no Spark): ``LiveFeed.plan`` says which slot ranges to write now, the demo writes them with
``cbt.dev.generator`` and calls ``LiveFeed.record`` for each write that succeeded, so a failed write is planned
again instead of leaving a hole in the source. Ranges are half-open ``[start, end)`` of unix seconds; a slot
starts every 12 s.

The story repeats every ``Story.cycle_s`` seconds (counted from the first live step):

- ``history_at_s``: older history arrives late (rows before the oldest written so far). The sources' ``min``
  moves back, every model gets a leading gap and backfill fills it, newest first.
- ``outage_at_s``: the beacon feed stalls for ``outage_s`` while transactions keep coming; afterwards the
  delayed slots arrive in one batch. The propagation models fall behind and catch up; ``transactions`` does not.
- ``broken_clock_at_s``: the next live write of blocks (a ``poison`` write) also reports its newest slot's block
  seen 5 s before its slot started. That slot's interval of ``block_propagation_minute`` fails the check
  ``seen_after_slot_start``: it is not published and its dependents wait on it (docs/checks.md).
  ``repair_after_s`` later the slot is written again without it (a ``repair`` write, which the demo announces with
  an invalidation): it is published.

A slot is never skipped inside the written range: external bounds are only ``[min, max)``, so a hole inside them
would be read as "no rows" and processed, not waited for (re-running it needs an invalidation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SLOT_S = 12
"""Seconds per slot, as in ``cbt.dev.generator``."""

Feed = Literal["blocks", "transactions"]
FEEDS: tuple[Feed, ...] = ("blocks", "transactions")
Purpose = Literal["backlog", "live", "late", "history", "poison", "repair"]


def slot_floor(position: int) -> int:
    return position // SLOT_S * SLOT_S


def duration_text(seconds: int) -> str:
    """``15 min``, ``96 s``: whole minutes when exact."""
    return f"{seconds // 60} min" if seconds % 60 == 0 and seconds >= 60 else f"{seconds} s"


@dataclass(frozen=True)
class Write:
    """One batch of source rows: slot times in ``[start, end)`` of one feed; ``note`` is worth telling the user."""

    feed: Feed
    start: int
    end: int
    purpose: Purpose
    note: str = ""


@dataclass(frozen=True)
class Story:
    """When the deliberate disturbances happen, in seconds into each cycle."""

    cycle_s: int = 180
    history_at_s: int = 30
    history_times: int = 2
    outage_at_s: int = 60
    outage_s: int = 30
    broken_clock_at_s: int = 100
    repair_after_s: int = 40


@dataclass
class Cursor:
    """What one feed has written: ``[oldest, next)``, and how many late history chunks it received."""

    oldest: int
    next: int
    histories: int = 0


@dataclass
class LiveFeed:
    """The generator's plan. ``begin`` gives the backlog; ``plan`` is called every few seconds after that."""

    backlog_s: int
    story: Story = Story()
    cursors: dict[Feed, Cursor] = field(default_factory=dict)
    stalled_since_s: float | None = None
    outages: int = 0
    has_delayed_blocks: bool = False
    broken_clocks: int = 0
    poisoned: tuple[int, float] | None = None
    """The slot time a broken clock's block was written at, and when (seconds into the run): repaired later."""

    @property
    def history_s(self) -> int:
        """Size of one late history chunk: a third of the backlog, whole slots."""
        return max(slot_floor(self.backlog_s // 3), SLOT_S)

    @property
    def oldest(self) -> int | None:
        return min((c.oldest for c in self.cursors.values()), default=None)

    def begin(self, now: int, resume_at: int | None = None) -> list[Write]:
        """The backlog: every slot of the last ``backlog_s`` seconds up to and including the current one — from
        ``resume_at`` (the first slot a previous run did not write) when that is older, so no hole is left."""
        top = slot_floor(now) + SLOT_S
        start = top - max(slot_floor(self.backlog_s), SLOT_S)
        if resume_at is not None:
            start = min(start, slot_floor(resume_at))
        self.cursors = {feed: Cursor(oldest=top, next=top) for feed in FEEDS}
        note = f"backlog: {duration_text(top - start)} of source rows, so backfill has work"
        return [Write(feed, start, top, "backlog", note if feed == "blocks" else "") for feed in FEEDS]

    def plan(self, now: int, elapsed_s: float) -> tuple[list[Write], list[str]]:
        """Writes due now (from the cursors, so unrecorded writes come again) and events without a write."""
        cycle, phase = divmod(int(elapsed_s), self.story.cycle_s)
        events = self._outage(elapsed_s, cycle, phase)
        stalled = self.stalled_since_s is not None
        top = slot_floor(now) + SLOT_S
        writes: list[Write] = []
        for feed, cursor in self.cursors.items():
            if phase >= self.story.history_at_s and cursor.histories <= cycle < self.story.history_times:
                writes.append(self._history(feed, cursor))
            if top > cursor.next and not (feed == "blocks" and stalled):
                write = self._live(feed, cursor, top)
                if feed == "blocks" and write.purpose == "live" and self._is_broken_clock_due(cycle, phase):
                    write = Write(feed, write.start, write.end, "poison", "a broken clock: the newest slot's block "
                                  "is also reported 5 s before its slot started; its minute fails the check "
                                  "seen_after_slot_start and waits, with its dependents")
                writes.append(write)
        writes += self._broken_clock(elapsed_s, cycle, phase)
        return writes, events

    def _broken_clock(self, elapsed_s: float, cycle: int, phase: int) -> list[Write]:
        """The repair of this cycle's broken clock when it is due (planned until recorded); the broken clock
        itself rides on a live write of blocks (``_live``)."""
        if self.poisoned is not None and elapsed_s - self.poisoned[1] >= self.story.repair_after_s:
            slot = self.poisoned[0]
            return [Write("blocks", slot, slot + SLOT_S, "repair", "repaired: the broken clock's slot is written "
                          "again and an invalidation announces it; its minute is published, its dependents go on")]
        return []

    def _is_broken_clock_due(self, cycle: int, phase: int) -> bool:
        return self.poisoned is None and phase >= self.story.broken_clock_at_s and self.broken_clocks <= cycle

    def _outage(self, elapsed_s: float, cycle: int, phase: int) -> list[str]:
        """Start or end this cycle's outage; it lasts ``outage_s`` however late the steps come."""
        if self.stalled_since_s is None and phase >= self.story.outage_at_s and self.outages <= cycle:
            self.stalled_since_s, self.has_delayed_blocks = elapsed_s, True
            self.outages += 1
            return [f"outage: the beacon block feed stalls for {self.story.outage_s} s; transactions keep coming"]
        if self.stalled_since_s is not None and elapsed_s - self.stalled_since_s >= self.story.outage_s:
            self.stalled_since_s = None
        return []

    def record(self, write: Write, elapsed_s: float = 0.0) -> None:
        """``write`` is durable: move its feed's cursor (``elapsed_s``: when, seconds into the run)."""
        if write.purpose == "poison":
            self.poisoned, self.broken_clocks = (write.end - SLOT_S, elapsed_s), self.broken_clocks + 1
        elif write.purpose == "repair":
            self.poisoned = None
            return
        cursor = self.cursors[write.feed]
        if write.purpose == "history":
            cursor.oldest = min(cursor.oldest, write.start)
            cursor.histories += 1
            return
        if write.purpose == "backlog":
            cursor.oldest = min(cursor.oldest, write.start)
        cursor.next = max(cursor.next, write.end)
        if write.purpose == "late":
            self.has_delayed_blocks = False

    def _history(self, feed: Feed, cursor: Cursor) -> Write:
        start = cursor.oldest - self.history_s
        note = f"late rows: {duration_text(self.history_s)} of older history arrive; backfill fills the new leading gap"
        return Write(feed, start, cursor.oldest, "history", note if feed == "blocks" else "")

    def _live(self, feed: Feed, cursor: Cursor, top: int) -> Write:
        if feed == "blocks" and self.has_delayed_blocks:
            slots = (top - cursor.next) // SLOT_S
            note = f"late rows: the beacon feed is back, {slots} delayed slots arrive in one batch"
            return Write(feed, cursor.next, top, "late", note)
        return Write(feed, cursor.next, top, "live")
