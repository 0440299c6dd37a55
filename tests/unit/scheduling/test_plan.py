"""The whole-model planner: directions, shared concurrency, in-flight tasks, and convergence."""

from __future__ import annotations

import random
from dataclasses import replace

from cbt.models.spec import IncrementalModel, Model
from cbt.scheduling import coverage as cov
from cbt.scheduling.plan import ModelPlan, Task, plan_all, plan_model
from cbt.scheduling.snapshot import StateSnapshot
from tests.unit.scheduling.factories import ext, inc, models_of, sched, snapshot

SPEC_MODELS: list[Model] = [ext("eth.blocks", lag=100), ext("eth.transactions"), inc("an.hourly"), inc("an.daily")]
SPEC_STATE = snapshot(
    bounds={"eth.blocks": (1000, 5000), "eth.transactions": (900, 4900)},
    coverage={"an.hourly": [(1500, 4500)], "an.daily": [(2000, 4000)]},
)
SPEC_DEPS = ["eth.blocks", "eth.transactions", "an.hourly", "an.daily"]


def _plan(model_kwargs: dict[str, object], state: StateSnapshot = SPEC_STATE, concurrency: int = 4) -> ModelPlan:
    model = inc("an.target", SPEC_DEPS, **model_kwargs)  # type: ignore[arg-type]
    return plan_model(model, models_of(*SPEC_MODELS, model), state, concurrency=concurrency)


def _ranges(plan: ModelPlan) -> list[tuple[int, int, str]]:
    return [(t.position, t.end, t.direction) for t in plan.tasks]


def test_spec_example_tail_starts_at_valid_min() -> None:
    plan = _plan({"imax": 500})
    assert plan.valid == (2000, 4000)
    assert _ranges(plan) == [
        (2000, 2500, "forward"),
        (2500, 3000, "forward"),
        (3000, 3500, "forward"),
        (3500, 4000, "forward"),
    ]
    assert plan.waiting is None


def test_head_model_backfills_its_leading_gap_in_the_same_tick() -> None:
    plan = _plan({"imax": 500, "direction": "head"}, concurrency=3)
    assert _ranges(plan) == [(3500, 4000, "forward"), (3000, 3500, "backfill"), (2500, 3000, "backfill")]
    assert plan.waiting is not None and "concurrency limit 3" in plan.waiting


def test_in_flight_tasks_count_against_the_limit() -> None:
    state = snapshot(
        bounds={"eth.blocks": (1000, 5000), "eth.transactions": (900, 4900)},
        coverage={"an.hourly": [(1500, 4500)], "an.daily": [(2000, 4000)], "an.target": [(2000, 2500)]},
        in_flight={"an.target": [(2500, 3000), (3000, 3500)]},
    )
    plan = _plan({"imax": 500}, state, concurrency=3)
    assert _ranges(plan) == [(3500, 4000, "forward")]
    full = _plan({"imax": 500}, state, concurrency=2)
    assert full.tasks == ()
    assert full.waiting is not None and "concurrency limit 2" in full.waiting


def test_a_skipped_range_is_never_planned_and_stays_a_gap_for_dependents() -> None:
    state = replace(SPEC_STATE, skipped={"an.target": ((2500, 3500),)})
    for direction in ("tail", "head"):  # forward goes on past it, backfill does not come back to it
        plan = _plan({"imax": 500, "direction": direction}, state)
        assert _ranges(plan) == [(3500, 4000, "forward"), (2000, 2500, "backfill")], direction
    assert _ranges(_plan({"imax": 500}, replace(state, skipped={}))) == [
        (2000, 2500, "forward"), (2500, 3000, "forward"), (3000, 3500, "forward"), (3500, 4000, "forward")]

    target = inc("an.target", SPEC_DEPS, imax=500)
    child = inc("an.child", ["an.target"], imax=500)
    done = replace(state, coverage={**state.coverage, "an.target": ((2000, 2500), (3500, 4000))})
    plan = plan_model(child, models_of(*SPEC_MODELS, target, child), done, concurrency=4)
    assert (2500, 3000) not in [(t.position, t.end) for t in plan.tasks], "the skipped range is no data to it"

def test_no_valid_range_names_the_dependency() -> None:
    state = snapshot(bounds={"eth.transactions": (900, 4900)}, coverage={"an.hourly": [(1500, 4500)]})
    plan = _plan({}, state)
    assert plan.valid is None and plan.tasks == ()
    assert plan.waiting is not None and "eth.blocks" in plan.waiting and "an.daily" in plan.waiting


def test_nothing_is_planned_while_the_coverage_index_is_rebuilt() -> None:
    unknown = StateSnapshot(bounds=SPEC_STATE.bounds, coverage=SPEC_STATE.coverage, coverage_known=False)
    plan = _plan({"imax": 500}, unknown)
    assert plan.tasks == ()
    assert plan.waiting is not None and "rebuilt" in plan.waiting


def test_disabled_schedules_plan_nothing_in_that_direction() -> None:
    forward_only = _plan({"imax": 500, "direction": "head", "backfill": ""})
    assert [t.direction for t in forward_only.tasks] == ["forward"]
    model = inc("an.target", SPEC_DEPS, imax=500, direction="head")
    only_back = plan_model(model, models_of(*SPEC_MODELS, model), SPEC_STATE, concurrency=4, directions=["backfill"])
    assert only_back.tasks == ()  # forward owns the head and has not set a frontier yet


def test_task_id_and_plan_all_covers_only_incremental_models() -> None:
    models = models_of(*SPEC_MODELS, sched("ref.rates"), inc("an.target", SPEC_DEPS, imax=2000))
    plans = plan_all(models, SPEC_STATE, concurrency=4)
    assert [p.model_id for p in plans] == ["an.daily", "an.hourly", "an.target"]
    assert plans[2].tasks == (Task("an.target", 2000, 2000, "forward"),)
    assert plans[2].tasks[0].id == "an.target:2000:2000"


def _simulate(rng: random.Random) -> None:
    """Plan, complete every task, repeat: coverage must converge to the whole valid range."""
    imax = rng.randint(1, 60)
    rounds = (700 // imax + 10) * 2
    imin = rng.choice([0, imax, rng.randint(0, imax)])
    low, high = rng.randint(0, 100), rng.randint(150, 700)
    forward = rng.choice(["@every 1m", ""])
    model = inc(
        "an.target",
        ["src.data"],
        imax=imax,
        imin=imin,
        forward=forward,
        backfill="@every 1m",
        direction=rng.choice(["head", "tail"]),
    )
    own = [(s, s + rng.randint(1, 40)) for s in (rng.randint(low, high) for _ in range(rng.randint(0, 4)))]
    state = snapshot(bounds={"src.data": (low, high)}, coverage={"an.target": own})
    models = models_of(ext("src.data"), model)
    covered = state.coverage["an.target"]
    for _ in range(rounds):
        plan = plan_model(model, models, state, concurrency=rng.randint(1, 5))
        assert plan.valid == (low, high)
        if not plan.tasks:
            break
        assert len({t.id for t in plan.tasks}) == len(plan.tasks)
        for task in plan.tasks:
            assert low <= task.position < task.end <= high
            assert task.interval <= imax
            covered = cov.add(covered, (task.position, task.end))
        state = StateSnapshot(bounds=state.bounds, coverage={"an.target": covered})
    else:
        raise AssertionError("planning did not converge")
    left = cov.gaps(covered, (low, high))
    # Only the open end may stay uncovered, and only while it is shorter than interval.min (waiting for data).
    assert left == [] or (len(left) == 1 and left[0][1] == high and high - left[0][0] < imin), (model, own, left)


def test_random_states_converge_to_full_coverage() -> None:
    rng = random.Random(7)
    for _ in range(300):
        _simulate(rng)


def test_gaps_left_by_a_forward_only_model_are_reported() -> None:
    state = snapshot(
        bounds={"eth.blocks": (1000, 5000), "eth.transactions": (900, 4900)},
        coverage={"an.hourly": [(1500, 4500)], "an.daily": [(2000, 4000)], "an.target": [(2500, 4000)]},
    )
    plan = _plan({"backfill": ""}, state)
    assert plan.tasks == ()
    assert plan.waiting is not None and "backfill: disabled" in plan.waiting and "[2000, 2500)" in plan.waiting


def test_a_model_over_a_dependency_catching_up_backward_waits_instead_of_rerunning() -> None:
    """The 900-position level of a chain whose 300-position level still fills backward toward the source's start
    (1000): its 300-position leading gap waits; the old rule widened it over 600 covered positions each time."""
    upper = inc("an.up", ["src.data"], imax=300, direction="head")
    top = inc("an.top", ["an.up"], imax=900, direction="head")
    models = models_of(ext("src.data"), upper, top)
    state = snapshot(bounds={"src.data": (1000, 4000)}, coverage={"an.up": [(2800, 4000)], "an.top": [(3100, 4000)]})
    plan = plan_model(top, models, state, concurrency=4)
    assert plan.tasks == ()
    assert plan.waiting is not None and "start to move down to 1000" in plan.waiting
    settled = replace(state, coverage={"an.up": ((1000, 4000),), "an.top": ((1300, 4000),)})
    assert _ranges(plan_model(top, models, settled, concurrency=4)) == [(1000, 1900, "backfill")], "widened once"


def _catch_up(rng: random.Random) -> tuple[dict[str, Model], dict[str, int], dict[str, cov.Coverage],
                                           StateSnapshot]:
    """A three-level chain over one source catching up, tasks completing in any order, older history arriving
    while it runs; returns the models, positions computed, coverage and the final state."""
    chain: list[IncrementalModel] = []
    for level in range(3):
        imax = rng.choice([6, 10, 30, 60, 90])
        chain.append(inc(f"an.l{level}", [chain[-1].id if chain else "src.data"], imax=imax,
                         imin=rng.choice([imax, rng.randint(1, imax)]), direction=rng.choice(["head", "tail"])))
    models = models_of(ext("src.data"), *chain)
    ids = [m.id for m in chain]
    low, high, history = 1000, 1000 + rng.randint(100, 600), rng.randint(0, 200)
    covered: dict[str, cov.Coverage] = {}
    running: dict[str, list[tuple[int, int]]] = {m: [] for m in ids}
    computed = dict.fromkeys(ids, 0)
    for tick in range(2000):
        state = snapshot(bounds={"src.data": (low - history if tick >= 40 else low, high)}, coverage=covered,
                         in_flight=running)
        for model in chain:
            plan = plan_model(model, models, state, concurrency=rng.randint(1, 4))
            running[model.id] += [(t.position, t.end) for t in plan.tasks]
        if tick > 40 and not any(running.values()):
            return models, computed, covered, state
        for model_id in ids:
            done = [r for r in running[model_id] if rng.random() < 0.5]
            running[model_id] = [r for r in running[model_id] if r not in done]
            for r in done:
                covered[model_id] = cov.add(covered.get(model_id, cov.EMPTY), r)
                computed[model_id] += r[1] - r[0]
    raise AssertionError("the chain did not converge")


def test_a_chain_catching_up_computes_each_position_about_once() -> None:
    """Each level converges to its valid range and recomputes fewer positions than two ``interval.min``: one widened
    remainder each time the start of the range settles (the backlog's, then the older history's). The old rules
    re-ran whole intervals as dependencies advanced: up to 31 ``interval.min`` here."""
    rng = random.Random(11)
    for _ in range(60):
        models, computed, covered, state = _catch_up(rng)
        for model_id, positions in computed.items():
            model = models[model_id]
            assert isinstance(model, IncrementalModel)
            plan = plan_model(model, models, state, concurrency=4)
            assert plan.tasks == () and plan.valid is not None
            own = covered.get(model_id, cov.EMPTY)
            left = cov.gaps(own, plan.valid)
            is_open_end = len(left) == 1 and left[0][1] == plan.valid[1]
            assert left == [] or (is_open_end and left[0][1] - left[0][0] < model.interval.max), (model, own, left)
            assert positions - cov.size(own) < 2 * max(model.interval.min, 1), (model, positions, own)
