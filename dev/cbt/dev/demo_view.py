"""The demo's live view: one text frame per refresh, and the closing summary. Pure: values in, text out.

Per incremental model (status from ``cbt.scheduling.status``, the numbers ``cbt status`` prints): valid range,
covered ranges, gaps (uncovered positions inside the valid range below the frontier: backfill's work), tasks in
flight, lag behind the valid range's end, how far the newest processed position is behind the wall clock, tasks
completed by direction, and a timeline bar over the positions the generator has written. Times are UTC.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cbt.contract.messages import IntervalCompleted, TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Range
from cbt.scheduling.status import ModelStatus
from cbt.state.ports import HeldInterval

LEGEND = ("bar: # covered   > in flight   x failed a check (held)   . valid but not covered yet (gap or not reached)"
          "   blank: no data yet")
HEADER = ("MODEL", "VALID RANGE (UTC)", "RANGES", "GAPS", "IN FLIGHT", "LAG", "BEHIND NOW", "DONE fwd/back")


def clock(unix: int | None) -> str:
    return "-" if unix is None else time.strftime("%H:%M:%S", time.gmtime(unix))


def span_text(r: Range | None) -> str:
    return "-" if r is None else f"[{clock(r[0])}, {clock(r[1])})"


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass
class TaskCounts:
    """Completions and final failures seen on the Kafka topics since the demo started."""

    done: dict[ModelId, Counter[str]] = field(default_factory=dict)
    failed: Counter[ModelId] = field(default_factory=Counter)
    last_run: dict[ModelId, int] = field(default_factory=dict)

    def add(self, message: IntervalCompleted | TaskFailed) -> None:
        if isinstance(message, TaskFailed):
            self.failed[message.model] += 1
            return
        self.done.setdefault(message.model, Counter())[message.direction] += 1
        if message.scheduled_unix is not None:
            self.last_run[message.model] = message.scheduled_unix

    def total(self, direction: str | None = None) -> int:
        return sum(c[direction] if direction else c.total() for c in self.done.values())

    def line(self) -> str:
        return (f"{self.total()} tasks completed ({self.total('forward')} forward, {self.total('backfill')} "
                f"backfill, {self.total('rerun')} rerun), {self.failed.total()} failed")


@dataclass(frozen=True)
class Frame:
    """Everything one refresh shows."""

    now: int
    elapsed_s: float
    window: Range | None
    statuses: Sequence[ModelStatus]
    scheduled: Sequence[ModelId]
    counts: TaskCounts
    services: str
    events: Sequence[str]
    problems: Sequence[str]
    metrics: str = ""
    """One line read from the services' ``/metrics`` (``glance``)."""
    held: Mapping[ModelId, Sequence[HeldInterval]] = field(default_factory=dict)
    """The intervals failed checks hold, by model (docs/checks.md)."""


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
"""One scrape of a ``/metrics`` endpoint: each sample's value by name and labels."""


def glance(coordinator: Samples, worker: Samples) -> str:
    """What the demo shows of the metrics: the cascade's mean latency (completion → dependents enqueued), the task
    queue's consumer lag and whether a coordinator leads."""

    def total(samples: Samples, name: str) -> float:
        return sum(value for (sample, _), value in samples.items() if sample == name)

    cascades = total(coordinator, "cbt_cascade_latency_seconds_count")
    mean_ms = 1000 * total(coordinator, "cbt_cascade_latency_seconds_sum") / cascades if cascades else None
    cascade = f"cascade latency mean {mean_ms:.0f} ms over {cascades:.0f}" if mean_ms is not None else "no cascade yet"
    queue = f"task queue lag {total(worker, 'cbt_consumer_lag_messages'):.0f} messages"
    leading = "leader: yes" if total(coordinator, "cbt_leader") >= 1 else "leader: none"
    return f"{cascade}   {queue}   {leading}"


def short_name(model_id: ModelId) -> str:
    return model_id.partition(".")[2] or model_id


def bar(status: ModelStatus, window: Range, width: int, held: Sequence[HeldInterval] = ()) -> str:
    """One character per slice of ``window``, judged at the slice's middle position — or at any position of the
    slice for a held interval (a few seconds would hide in a slice of a minute)."""
    low, high = window
    step = max((high - low) / width, 1e-9)
    chars = []
    for i in range(width):
        p = int(low + (i + 0.5) * step)
        lo, hi = int(low + i * step), int(low + (i + 1) * step)
        if any(start <= p < end for start, end in status.in_flight):
            chars.append(">")
        elif any(h.start < max(hi, lo + 1) and lo < h.end for h in held):
            chars.append("x")
        elif cov.covers(status.coverage, (p, p + 1)):
            chars.append("#")
        elif status.valid is not None and status.valid[0] <= p < status.valid[1]:
            chars.append(".")
        else:
            chars.append(" ")
    return "|" + "".join(chars) + "|"


def _row(s: ModelStatus, now: int, counts: TaskCounts) -> tuple[str, ...]:
    missing = sum(end - start for start, end in s.gaps)
    front = cov.frontier(s.coverage)
    done = counts.done.get(s.model_id, Counter())
    return (
        short_name(s.model_id), span_text(s.valid), str(len(s.coverage)),
        f"{len(s.gaps)} ({seconds_text(missing)})" if s.gaps else "0", str(len(s.in_flight)),
        seconds_text(s.lag), seconds_text(now - front if front is not None else None),
        f"{done['forward']}/{done['backfill']}",
    )


def table(frame: Frame) -> list[str]:
    rows = [HEADER] + [_row(s, frame.now, frame.counts) for s in frame.statuses]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def timeline(frame: Frame, bar_width: int) -> list[str]:
    """One bar per model over the written positions, oldest left."""
    if frame.window is None:
        return []
    name_width = max(len(short_name(s.model_id)) for s in frame.statuses) if frame.statuses else 0
    left, right = clock(frame.window[0]), clock(frame.window[1])
    head = " " * (name_width + 3) + left + right.rjust(bar_width - len(left))
    return [head, *(f"{short_name(s.model_id):<{name_width}}  "
                    f"{bar(s, frame.window, bar_width, frame.held.get(s.model_id, ()))}"
                    for s in frame.statuses), LEGEND]


def render(frame: Frame, bar_width: int = 40) -> str:
    lines = [
        f"cbt demo   {clock(frame.now)} UTC   running {seconds_text(frame.elapsed_s)}   (Ctrl-C stops)",
        f"tasks: {frame.counts.line()}",
        f"services: {frame.services}",
        *([f"metrics: {frame.metrics}"] if frame.metrics else []),
        "",
        *table(frame),
        "",
        *timeline(frame, bar_width),
        "",
        "scheduled: " + ("; ".join(_scheduled(m, frame.counts) for m in frame.scheduled) or "-"),
        "",
        "events:",
        *(f"  {e}" for e in frame.events[-8:]),
    ]
    held = [f"  {short_name(m)} {span_text((h.start, h.end))}: {h.reason}" for m, hs in frame.held.items() for h in hs]
    if held:
        lines += ["held by failed checks (not published; dependents wait until an invalidation re-runs them):", *held]
    waiting = [f"  {short_name(s.model_id)}: {s.reason}" for s in frame.statuses if s.reason]
    if waiting:
        lines += ["waiting:", *waiting]
    if frame.problems:
        lines += ["problems:", *(f"  {p}" for p in frame.problems)]
    return "\n".join(lines)


def _scheduled(model_id: ModelId, counts: TaskCounts) -> str:
    runs = counts.done.get(model_id, Counter()).total()
    last = counts.last_run.get(model_id)
    return f"{short_name(model_id)} {runs} run(s)" + (f", last {clock(last)}" if last is not None else "")


def summary(frame: Frame) -> str:
    """The closing lines: how long it ran, what completed, each model's coverage."""
    lines = [f"cbt demo ran {seconds_text(frame.elapsed_s)}: {frame.counts.line()}; "
             f"source rows {span_text(frame.window)}"]
    for s in frame.statuses:
        covered = span_text(cov.span(s.coverage)) if s.coverage else "nothing"
        lines.append(f"  {short_name(s.model_id):<30} covered {covered} in {len(s.coverage)} range(s), "
                     f"{len(s.gaps)} gap(s), {len(s.in_flight)} in flight, lag {seconds_text(s.lag)}")
    lines.extend(f"  {_scheduled(m, frame.counts)}" for m in frame.scheduled)
    lines.extend(f"problem: {p}" for p in frame.problems)
    return "\n".join(lines)
