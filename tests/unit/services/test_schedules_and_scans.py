"""Pure service rules: wall-clock schedules, missed runs, bounds scan merging, group commit."""

from __future__ import annotations

import asyncio

import pytest

from cbt.bounds_cache.scanner import parse_bounds_output
from cbt.concurrency.groupcommit import GroupCommitter
from cbt.coordinator.ticker import DueTracker, missed_run
from cbt.scheduling.scanning import ScanResult, merge_scan, scan_kind_due
from cbt.scheduling.snapshot import RawBounds
from tests.unit.scheduling.factories import inc, sched


def test_ticks_are_aligned_to_the_wall_clock_and_missed_fires_collapse_into_one() -> None:
    tracker = DueTracker.for_models([inc("a.m", forward="@every 10s", backfill="")], [], now=1003)
    assert tracker.due(1009) == []
    assert tracker.due(1010) == [("a.m", "forward", 1010)]
    assert tracker.due(1055) == [("a.m", "forward", 1050)]  # four fires missed: one run, at the latest
    assert tracker.due(1059) == []


def test_a_scheduled_fire_whose_enqueue_failed_runs_at_the_next_tick() -> None:
    """The publish of a due scheduled run fails once (broker unavailable): the same fire runs one tick later,
    instead of being lost with the tracker already past it."""
    tracker = DueTracker.for_models([], [sched("a.s", schedule="* * * * *")], now=1_000)
    runs: list[tuple[str, int]] = []

    async def publish_fails_once(model_id: str, fire_time: int) -> None:
        if not runs:
            runs.append(("failed", fire_time))
            raise ConnectionError("broker unavailable")
        runs.append(("enqueued", fire_time))

    async def ticks() -> None:
        for now in (1_020, 1_021, 1_022, 1_079, 1_080):
            await tracker.run_due(now, publish_fails_once, no_fills)

    asyncio.run(ticks())
    assert runs == [("failed", 1_020), ("enqueued", 1_020), ("enqueued", 1_080)]


async def no_fills(kind: str, model_ids: list[str]) -> None:
    raise AssertionError(f"no fills are due here, got {kind} {model_ids}")


def test_the_fills_due_at_one_tick_are_planned_in_one_pass_and_all_retried_when_it_fails() -> None:
    models = [inc(f"a.m{i}", forward="@every 10s", backfill="@every 20s") for i in range(3)]
    tracker = DueTracker.for_models(models, [], now=1_001)
    passes: list[tuple[str, list[str]]] = []

    async def plan_fills(kind: str, model_ids: list[str]) -> None:
        passes.append((kind, model_ids))
        if len(passes) == 1:
            raise ConnectionError("redis blinked")

    async def ticks() -> None:
        for now in (1_010, 1_011, 1_012):
            await tracker.run_due(now, no_scheduled, plan_fills)

    asyncio.run(ticks())
    every = ["a.m0", "a.m1", "a.m2"]
    assert passes == [("forward", every), ("forward", every)], "one pass per tick, the failed one retried whole"


async def no_scheduled(model_id: str, fire_time: int) -> None:
    raise AssertionError(f"no scheduled run is due here, got {model_id}")


def test_a_disabled_schedule_never_fires() -> None:
    tracker = DueTracker.for_models([inc("a.m", forward="", backfill="@every 60s")], [], now=0)
    assert [kind for _, kind, _ in tracker.due(10_000)] == ["backfill"]


@pytest.mark.parametrize(
    ("last_run", "now", "owed"),
    [
        pytest.param(None, 7_250, 7_200, id="never-ran-runs-once"),
        pytest.param(3_600, 7_250, 7_200, id="down-over-a-fire-runs-once"),
        pytest.param(7_200, 7_250, None, id="already-ran"),
    ],
)
def test_missed_scheduled_runs_run_once_on_recovery(last_run: int | None, now: int, owed: int | None) -> None:
    assert missed_run("@hourly", last_run, now) == owed
    assert sched("a.s").schedule == "@hourly"


@pytest.mark.parametrize(
    ("previous", "result", "kind", "stored"),
    [
        pytest.param(None, ScanResult(10, 20), "full", RawBounds(10, 20), id="first-scan"),
        pytest.param(RawBounds(10, 20), ScanResult(20, 30), "incremental", RawBounds(10, 30), id="grows"),
        pytest.param(RawBounds(10, 20), ScanResult(12, 15), "incremental", RawBounds(10, 20), id="never-shrinks"),
        pytest.param(RawBounds(10, 20), ScanResult(12, 15), "full", RawBounds(12, 15), id="full-may-shrink"),
        pytest.param(RawBounds(10, 20), ScanResult(None, None), "full", None, id="empty-keeps-good-bounds"),
        pytest.param(RawBounds(10, 20), ScanResult(0, 0), "full", None, id="zero-keeps-good-bounds"),
    ],
)
def test_scan_results_merge_into_cached_bounds(
    previous: RawBounds | None, result: ScanResult, kind: str, stored: RawBounds | None
) -> None:
    assert merge_scan(previous, result, kind) == stored  # type: ignore[arg-type]


def test_full_scan_first_then_incremental_until_the_full_interval_passes() -> None:
    assert scan_kind_due(100, None, None, 60, 5) == "full"
    assert scan_kind_due(103, 100, 100, 60, 5) is None
    assert scan_kind_due(105, 100, 100, 60, 5) == "incremental"
    assert scan_kind_due(160, 100, 155, 60, 5) == "full"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"min": 5, "max": 9}', ScanResult(5, 9), id="bounds"),
        pytest.param('noise\n{"min": null, "max": null}', ScanResult(None, None), id="last-line-no-data"),
    ],
)
def test_exec_bounds_output(text: str, expected: ScanResult) -> None:
    assert parse_bounds_output(text) == expected


@pytest.mark.parametrize("text", ['{"min": -1, "max": 3}', '{"min": "a"}', "[1, 2]", '{"min": true, "max": 2}'])
def test_bad_exec_bounds_output_is_an_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_bounds_output(text)


def test_group_commit_batches_items_arriving_during_a_flush_and_returns_only_when_durable() -> None:
    flushed: list[list[int]] = []

    async def flush(items: list[int]) -> None:
        await asyncio.sleep(0.05)
        flushed.append(items)

    async def scenario() -> None:
        committer = GroupCommitter(flush)
        await asyncio.gather(*(committer.submit(i) for i in range(10)))
        assert sum(len(batch) for batch in flushed) == 10
        await committer.close()

    asyncio.run(scenario())
    assert len(flushed) < 10, "concurrent submissions should share commits"


def test_group_commit_failure_reaches_every_waiter() -> None:
    async def flush(items: list[int]) -> None:
        raise OSError("disk full")

    async def scenario() -> list[BaseException | None]:
        committer = GroupCommitter(flush)
        results = await asyncio.gather(*(committer.submit(i) for i in range(3)), return_exceptions=True)
        await committer.close()
        return list(results)

    assert all(isinstance(r, OSError) for r in asyncio.run(scenario()))


def test_a_schedule_with_no_fire_time_stops_only_its_own_model() -> None:
    """An override stored before schedules were checked for a fire time (``0 0 30 2 *``, 30 February): the tracker
    sets that schedule aside and reports it; every other model's schedule keeps firing, tick after tick."""
    never = inc("a.never", forward="0 0 30 2 *", backfill="@every 10s")
    tracker = DueTracker.for_models([never, inc("a.ok", forward="@every 10s", backfill="")], [], now=1_001)
    assert tracker.broken_series() == {(("model", "a.never"), ("operation", "forward")): 1}
    assert (("model", "a.never"), ("operation", "forward")) not in tracker.registered()
    assert tracker.due(1_010) == [("a.never", "backfill", 1_010), ("a.ok", "forward", 1_010)]
    assert tracker.due(1_020) == [("a.never", "backfill", 1_020), ("a.ok", "forward", 1_020)]


def test_a_schedule_that_fails_when_due_is_set_aside_and_the_rest_fire() -> None:
    tracker = DueTracker.for_models([inc("a.m", forward="@every 10s", backfill=""),
                                     inc("a.ok", forward="@every 10s", backfill="")], [], now=1_001)
    tracker.schedules[("a.m", "forward")] = "0 0 30 2 *"  # (as if its fire times failed only now)
    assert tracker.due(1_010) == [("a.ok", "forward", 1_010)]
    assert ("a.m", "forward") in tracker.broken and "never fires" in tracker.broken[("a.m", "forward")]
    assert tracker.due(1_020) == [("a.ok", "forward", 1_020)]
