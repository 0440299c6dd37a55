"""Re-runs after an invalidation (``cbt.scheduling.rerun`` through ``plan_model``): each removed task is planned
whole, once, when ready; forward fill and backfill never plan over one (scenario 10 of issue 10)."""

from __future__ import annotations

from dataclasses import replace

from cbt.models.spec import Model
from cbt.scheduling.plan import ModelPlan, plan_model
from cbt.scheduling.snapshot import StateSnapshot
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot

# ext.src (data from 17) -> an.parent (300, tasks from 17) -> an.child (300, tasks from 167)
PARENT = inc("an.parent", ["ext.src"], imax=300, imin=60)
CHILD = inc("an.child", ["an.parent"], imax=300, imin=60)
MODELS: dict[str, Model] = models_of(ext("ext.src"), PARENT, CHILD)


def state(parent: list[tuple[int, int]], child: list[tuple[int, int]], *, reruns: dict[str, list[tuple[int, int]]],
          in_flight: dict[str, list[tuple[int, int]]] | None = None) -> StateSnapshot:
    base = snapshot(bounds={"ext.src": (17, 1217)}, coverage={"an.parent": parent, "an.child": child},
                    in_flight=in_flight)
    return replace(base, reruns={m: tuple(rs) for m, rs in reruns.items()})


def tasks(plan: ModelPlan) -> list[tuple[int, int, str]]:
    return [(t.position, t.end, t.direction) for t in plan.tasks]


def test_each_removed_task_is_planned_whole_as_a_re_run() -> None:
    s = state([(17, 317), (917, 1217)], [], reruns={"an.parent": [(317, 617), (617, 917)]})
    plan = plan_model(PARENT, MODELS, s, concurrency=4)
    assert tasks(plan) == [(617, 917, "rerun"), (317, 617, "rerun")]


def test_backfill_does_not_cut_the_gap_a_re_run_left_on_its_own_grid() -> None:
    """Before re-runs were kept, this gap [317, 617) plus the never-run [1217, 1300) head were cut from their end."""
    s = state([(17, 317), (617, 1217)], [], reruns={"an.parent": [(317, 617)]})
    plan = plan_model(PARENT, MODELS, s, concurrency=4)
    assert tasks(plan) == [(317, 617, "rerun")]


def test_a_dependent_waits_whole_for_its_dependencys_re_run_and_is_not_split_around_it() -> None:
    s = state([(17, 317), (617, 1217)], [(17, 467), (767, 1217)],
              reruns={"an.parent": [(317, 617)], "an.child": [(467, 767)]})
    plan = plan_model(CHILD, MODELS, s, concurrency=4)
    assert plan.tasks == (), "[617, 767) is ready, but the task is [467, 767)"
    assert plan.waiting is not None and "re-run [467, 767) waits: an.parent has no data in [467, 617)" in plan.waiting

    after = state([(17, 1217)], [(17, 467), (767, 1217)], reruns={"an.child": [(467, 767)]})
    assert tasks(plan_model(CHILD, MODELS, after, concurrency=4)) == [(467, 767, "rerun")]


def test_a_re_run_whose_task_is_in_flight_is_not_planned_again() -> None:
    s = state([(17, 317), (617, 1217)], [], reruns={"an.parent": [(317, 617)]}, in_flight={"an.parent": [(317, 617)]})
    assert plan_model(PARENT, MODELS, s, concurrency=4).tasks == ()


def test_forward_fill_continues_after_a_re_run_at_the_head() -> None:
    s = state([(17, 917)], [], reruns={"an.parent": [(917, 1217)]})
    assert tasks(plan_model(PARENT, MODELS, s, concurrency=4)) == [(917, 1217, "rerun")]


def test_re_runs_share_the_models_concurrency_limit() -> None:
    s = state([(17, 317)], [], reruns={"an.parent": [(317, 617), (617, 917), (917, 1217)]})
    plan = plan_model(PARENT, MODELS, s, concurrency=2)
    assert tasks(plan) == [(917, 1217, "rerun"), (617, 917, "rerun")]
    assert plan.waiting is not None and "concurrency limit 2" in plan.waiting


def test_a_forward_only_model_still_re_runs() -> None:
    forward_only = replace(PARENT, schedules=replace(PARENT.schedules, backfill=None))
    s = state([(17, 317), (617, 1217)], [], reruns={"an.parent": [(317, 617)]})
    assert tasks(plan_model(forward_only, MODELS, s, concurrency=4)) == [(317, 617, "rerun")]
