"""The demo's view: timeline bars and the closing summary read the same status values ``cbt status`` prints."""

from __future__ import annotations

from cbt.contract.messages import IntervalCompleted, TaskFailed
from cbt.dev.demo_view import Frame, TaskCounts, bar, glance, render, summary
from cbt.scheduling.status import ModelStatus
from cbt.state.ports import HeldInterval

T = 1_700_000_400


def status(coverage: tuple[tuple[int, int], ...], in_flight: tuple[tuple[int, int], ...] = ()) -> ModelStatus:
    return ModelStatus("an.minute", (T, T + 100), coverage, in_flight, ((T, T + 40),), 20, None)


def test_bar_marks_covered_in_flight_valid_and_no_data() -> None:
    s = status(((T + 40, T + 80),), in_flight=((T + 20, T + 40),))
    assert bar(s, (T, T + 120), 12) == "|..>>####..  |"


def test_a_held_interval_shows_in_its_slice_however_short_and_is_listed_with_its_reason() -> None:
    s = status(((T, T + 30), (T + 33, T + 100)))
    held = (HeldInterval(T + 30, T + 33, "v", "check seen_after_slot_start failed: 1 violating row"),)
    assert bar(s, (T, T + 120), 12) == "|##########  |", "three seconds hide in a slice judged at its middle"
    assert bar(s, (T, T + 120), 12, held) == "|###x######  |"
    frame = Frame(now=T + 120, elapsed_s=65, window=(T, T + 120), statuses=[s], scheduled=[], counts=TaskCounts(),
                  services="worker", events=[], problems=[], held={"an.minute": held})
    assert "minute [" in render(frame) and "seen_after_slot_start failed" in render(frame)


def test_counts_by_direction_and_failures() -> None:
    counts = TaskCounts()
    counts.add(IntervalCompleted(task_id="an.minute:1:1", model="an.minute", direction="backfill"))
    counts.add(IntervalCompleted(task_id="an.minute:2:1", model="an.minute"))
    counts.add(TaskFailed(task_id="an.minute:3:1", model="an.minute", attempts=3, error="boom"))
    assert counts.line() == "2 tasks completed (1 forward, 1 backfill, 0 rerun), 1 failed"


def test_frame_and_summary_name_each_model_with_its_coverage() -> None:
    frame = Frame(now=T + 120, elapsed_s=65, window=(T, T + 120), statuses=[status(((T + 40, T + 80),))],
                  scheduled=["an.daily"], counts=TaskCounts(), services="worker", events=["e1"], problems=[])
    text = render(frame)
    assert "minute" in text and "1m05s" in text and "e1" in text
    assert "minute" in summary(frame) and "in 1 range(s), 1 gap(s)" in summary(frame)


def test_the_metrics_glance_reads_cascade_latency_queue_lag_and_leadership() -> None:
    coordinator = {("cbt_cascade_latency_seconds_sum", frozenset({("model", "a")})): 0.3,
                   ("cbt_cascade_latency_seconds_count", frozenset({("model", "a")})): 20.0,
                   ("cbt_cascade_latency_seconds_sum", frozenset({("model", "b")})): 0.1,
                   ("cbt_cascade_latency_seconds_count", frozenset({("model", "b")})): 20.0,
                   ("cbt_leader", frozenset()): 1.0}
    worker = {("cbt_consumer_lag_messages", frozenset({("pool", "default")})): 3.0,
              ("cbt_consumer_lag_messages", frozenset({("pool", "python")})): 1.0}
    assert glance(coordinator, worker) == "cascade latency mean 10 ms over 40   task queue lag 4 messages   leader: yes"
    assert glance({}, {}) == "no cascade yet   task queue lag 0 messages   leader: none"
