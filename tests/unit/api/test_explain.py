"""Explain position P: the worker's verdict on [P, P + interval.max) and each dependency's range, holes and reason,
recursively (docs/design/scheduling.md#dependency-bounds, its example: valid range [2000, 4000))."""

from __future__ import annotations

import pytest

from cbt.api.explain import DependencyExplanation, explain
from cbt.scheduling.snapshot import StateSnapshot
from cbt.state.ports import HeldInterval
from tests.unit.scheduling.factories import ext, inc, models_of, sched, snapshot

BLOCKS, TXS, ENT = "src.blocks", "src.transactions", "src.entities"
HOURLY, DAILY, MODEL = "out.hourly", "out.daily", "out.model"
MODELS = models_of(
    ext(BLOCKS, lag=100), ext(TXS), sched(ENT),
    inc(HOURLY, [BLOCKS]), inc(DAILY, [BLOCKS]),
    inc(MODEL, [(BLOCKS, TXS), HOURLY, DAILY, ENT], imax=100),
)
STATE = snapshot(bounds={BLOCKS: (1000, 5000), TXS: (900, 4900)},
                 coverage={HOURLY: [(1500, 2500), (2600, 4500)], DAILY: [(2000, 4000)], MODEL: [(2000, 2100)]},
                 in_flight={MODEL: [(2100, 2200)]})


def by_id(deps: tuple[DependencyExplanation, ...]) -> dict[str, DependencyExplanation]:
    return {d.id: d for d in deps}


def test_a_ready_interval_has_no_reason_and_every_dependency_covers_it() -> None:
    found = explain(MODELS[MODEL], MODELS, STATE, 3000)  # type: ignore[arg-type]
    assert (found.interval, found.valid, found.ready, found.reason) == ((3000, 3100), (2000, 4000), True, None)
    assert not found.covered and not found.in_flight
    assert all(d.covers and d.holes == () and d.reason is None for d in found.dependencies)
    deps = by_id(found.dependencies)
    assert (deps[BLOCKS].kind, deps[BLOCKS].group, deps[TXS].group) == ("or_group_member", 0, 0)
    assert deps[HOURLY].kind == "required" and deps[HOURLY].range == (1500, 4500)
    assert deps[BLOCKS].range == (1000, 4900), "an external offers its bounds minus lag"
    assert deps[ENT].type == "scheduled" and deps[ENT].range is None
    assert [d.id for d in deps[HOURLY].dependencies] == [BLOCKS], "transformation dependencies are explained too"


@pytest.mark.parametrize(("position", "reason", "culprit", "hole", "why"), [
    pytest.param(2500, f"{HOURLY} has no data in [2500, 2600)", HOURLY,
                 (2500, 2600), "no data in [2500, 2600): a gap in its coverage", id="hole-in-a-dependency"),
    pytest.param(3950, "[3950, 4050) is outside the valid range [2000, 4000)", DAILY, (4000, 4050),
                 "no data in [4000, 4050): its data ends at 4000", id="past-the-valid-range"),
])
def test_the_reason_names_the_dependency_and_its_hole(position: int, reason: str, culprit: str,
                                                      hole: tuple[int, int], why: str) -> None:
    found = explain(MODELS[MODEL], MODELS, STATE, position)  # type: ignore[arg-type]
    assert not found.ready and found.reason == reason
    dep = by_id(found.dependencies)[culprit]
    assert not dep.covers and dep.holes[0] == hole and dep.reason == why


def test_an_interval_a_failed_check_holds_is_not_ready_and_says_which_check() -> None:
    held = (HeldInterval(2950, 3050, "v1", "check not_null_a failed: 2 violating rows"),)
    found = explain(MODELS[MODEL], MODELS, STATE, 3000, held)  # type: ignore[arg-type]
    assert not found.ready and found.reason is not None
    assert found.reason.startswith("held: its rows [2950, 3050) failed a check (check not_null_a failed")
    assert explain(MODELS[MODEL], MODELS, STATE, 3050, held).ready, "the next interval is not held"  # type: ignore[arg-type]


def test_covered_and_in_flight_intervals_say_so() -> None:
    assert explain(MODELS[MODEL], MODELS, STATE, 2000).covered  # type: ignore[arg-type]
    assert explain(MODELS[MODEL], MODELS, STATE, 2150).in_flight  # type: ignore[arg-type]


def test_a_dependency_without_data_blocks_with_its_reason() -> None:
    state = StateSnapshot(bounds=STATE.bounds, coverage={DAILY: ((2000, 4000),)}, never_ran=frozenset({ENT}))
    found = explain(MODELS[MODEL], MODELS, state, 3000)  # type: ignore[arg-type]
    deps = by_id(found.dependencies)
    assert not found.ready and found.reason is not None and HOURLY in found.reason
    assert (deps[HOURLY].covers, deps[HOURLY].range, deps[HOURLY].reason) == (False, None, "no completed intervals yet")
    assert deps[HOURLY].holes == ((3000, 3100),)
    assert deps[ENT].reason == "has not completed a scheduled run yet"
