"""Our models and state in CBT's shapes (cbt.api.cbt_compat.shapes, cbt.api.cbt_compat.debug): pure, over state
snapshots."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.api.cbt_compat import debug as cbt_debug
from cbt.api.cbt_compat import shapes as cbt_shapes
from cbt.api.cbt_compat.debug import coverage_debug, debug_interval
from cbt.api.cbt_compat.schemas import DependencyDebugInfo
from cbt.config.interval_types import Transformation
from cbt.models.spec import IncrementalModel
from tests.unit.scheduling.factories import ext, inc, models_of, sched, snapshot

SRC, MINUTE, HOUR, REPORT = "src.blocks", "an.minute", "an.hour", "an.report"
MINUTE_MODEL, HOUR_MODEL = inc(MINUTE, [SRC], imax=10), inc(HOUR, [MINUTE, REPORT], imax=20)
MODELS = models_of(ext(SRC), MINUTE_MODEL, HOUR_MODEL, sched(REPORT))


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(0, "0s", id="zero"), pytest.param(45, "45s", id="seconds"), pytest.param(90, "1m30s", id="mixed"),
    pytest.param(3600, "1h", id="hour"), pytest.param(3661, "1h1m1s", id="all"),
])
def test_durations_are_written_as_go_writes_them(seconds: int, text: str) -> None:
    assert cbt_shapes.duration(seconds) == text


def test_time_interval_types_are_shown_as_dates_others_as_positions() -> None:
    types = cbt_shapes.interval_types({"timestamp", "block"}, {})
    assert [t.name for t in types["block"]] == ["Position"]
    assert types["timestamp"][0].format == "datetime" and types["timestamp"][0].expression == "value * 1000"


def test_configured_interval_types_are_served_in_cbts_form() -> None:
    configured = {"slot": (Transformation(name="Time", expression="(value * 12 + 1606824023) * 1000",
                                          format="datetime"),
                           Transformation(name="Slot", format="number", label="slot {value}")),
                  "epoch": (Transformation(name="Epoch"),)}
    types = cbt_shapes.interval_types({"slot", "block"}, configured)
    assert sorted(types) == ["block", "epoch", "slot"]
    assert [t.model_dump(exclude_none=True) for t in types["slot"]] == [
        {"name": "Time", "expression": "(value * 12 + 1606824023) * 1000", "format": "datetime"},
        {"name": "Slot"},
    ]


@pytest.mark.parametrize(("failed", "in_flight", "coverage", "status"), [
    pytest.param(1, [(0, 10)], [(0, 10)], "failed", id="failures-first"),
    pytest.param(0, [(10, 20)], [(0, 10)], "running", id="in-flight"),
    pytest.param(0, [], [(0, 10)], "success", id="covered"),
    pytest.param(0, [], [], "pending", id="nothing-yet"),
])
def test_run_status(failed: int, in_flight: list[tuple[int, int]], coverage: list[tuple[int, int]],
                    status: str) -> None:
    state = snapshot(coverage={MINUTE: coverage}, in_flight={MINUTE: in_flight})
    assert cbt_shapes.run_status(MINUTE_MODEL, state, failed) == status


def test_a_position_in_the_models_own_gap_is_checked_over_the_gap() -> None:
    state = snapshot(coverage={MINUTE: [(0, 10), (40, 50)]})
    assert debug_interval(MINUTE_MODEL, state, 15) == 30
    assert debug_interval(MINUTE_MODEL, state, 50) == 10, "past the coverage: interval.max"


def test_a_scheduled_dependency_that_never_ran_blocks_and_says_so() -> None:
    state = snapshot(bounds={SRC: (0, 100)}, coverage={MINUTE: [(0, 100)]})
    debug = coverage_debug(HOUR_MODEL, MODELS, replace(state, never_ran=frozenset({REPORT})), 0)
    report = next(d for d in debug.dependencies if d.id == REPORT)
    assert report.blocking and report.coverage_status == "not_initialized" and not debug.can_process
    ran = coverage_debug(HOUR_MODEL, MODELS, state, 0)
    assert ran.can_process == ran.validation.in_bounds is True and ran.validation.reasons == []


def test_a_deep_dag_with_shared_ancestors_is_explained_within_a_node_budget() -> None:
    """Three models per level, each depending on all three below: listed as a tree (as CBT does), 3^12 nodes deep
    down, unless the walk stops at the budget."""
    levels = [[f"l0.m{i}" for i in range(3)]]
    chain = [ext(m) for m in levels[0]]
    for level in range(1, 13):
        names = [f"l{level}.m{i}" for i in range(3)]
        chain += [inc(name, levels[-1], imax=10) for name in names]
        levels.append(names)
    models = models_of(*chain)
    top = models[levels[-1][0]]
    assert isinstance(top, IncrementalModel)
    debug = coverage_debug(top, models, snapshot(bounds={m: (0, 100) for m in levels[0]}), 0)

    def nodes(deps: list[DependencyDebugInfo] | None) -> int:
        return sum(1 + nodes(d.child_dependencies) + nodes(d.or_group_members) for d in deps or ())

    # past the budget, the siblings still open on the path (at most 3 per level) are listed, without children
    assert cbt_debug.MAX_NODES <= nodes(debug.dependencies) <= cbt_debug.MAX_NODES + 3 * cbt_debug.MAX_DEPTH
