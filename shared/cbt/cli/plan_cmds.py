"""``cbt plan`` (what would be enqueued now, and why not) and ``cbt status`` (coverage, gaps, lag per model).

Both compute from one ``StateSnapshot``: ``--state FILE`` reads it from JSON (see ``cbt.scheduling.snapshot``);
without it the live state would come from the services (Redis hot index, bounds cache), which these commands do
not reach yet, so they say so and exit 1. Ranges print half-open: ``[start, end)``.

Building the parser imports nothing beyond the standard library: config, models, scheduling and the Redis client
are imported by the command that runs (``cbt --help`` stays fast; see tests/unit/test_cli_imports.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError

if TYPE_CHECKING:
    from cbt.adapters.redis_state import RedisState
    from cbt.config.settings import Config
    from cbt.contract.messages import TaskFailed
    from cbt.models.dag import ModelSet
    from cbt.models.spec import Model, ModelId
    from cbt.scheduling.coverage import Range
    from cbt.scheduling.plan import ModelPlan
    from cbt.scheduling.snapshot import StateSnapshot
    from cbt.scheduling.status import ModelStatus
    from cbt.state.ports import HeldInterval

    ShowPosition = Callable[[ModelId, int], str]  # a model's position as people read it (cbt status --show)

LIVE_STATE_HELP = (
    "start Redis (cbt dev up) or pass --state FILE with a JSON snapshot: "
    '{"bounds": {"db.table": {"min": int, "max": int}}, "coverage": {"db.table": [[start, end], ...]}, "now": int}'
)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    plan = sub.add_parser("plan", help="what would run now for each model, and why not more",
                          description="What the coordinator would enqueue now for each model, and why not more "
                          "(live state from Redis, or --state FILE); then the model files against the deployed "
                          "versions: what changed, in which category and why, and what a deployment recomputes.")
    _common_arguments(plan)
    plan.add_argument(
        "--concurrency",
        type=_positive_int,
        default=None,
        metavar="N",
        help="per-model concurrency limit (default: worker.model_concurrency from the config)",
    )
    plan.set_defaults(func=run_plan)
    status = sub.add_parser("status", help="coverage, gaps and lag behind the valid range of each model",
                            description="Per model: valid range, coverage, gaps, in-flight tasks, lag and its latest "
                            "failures (tasks that failed their last attempt); then each scheduled model's schedule "
                            "in force, last successful run and next run, as the dashboard shows them. Intervals that "
                            "failed checks hold are listed after the table.")
    _common_arguments(status)
    status.add_argument(
        "--show",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="show positions as the config's interval_types do (a slot as its time…): by the transformation NAME "
        "(e.g. Time), or each type's first one when no NAME is given",
    )
    status.add_argument(
        "--versions",
        action="store_true",
        help="also list the tables an in-place change has not finished with: the intervals each version's rows "
        "hold (read from the admin tables' files; needs spark.warehouse)",
    )
    status.set_defaults(func=run_status)


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    parser.add_argument(
        "--state", default=None, metavar="FILE", help="JSON state snapshot to use instead of live state"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help="only these incremental models (id, or a unique table name); default: every one")
    parser.add_argument("--model", action="append", default=None, help=argparse.SUPPRESS)  # before MODEL was positional


def run_plan(args: argparse.Namespace) -> int:
    from cbt.scheduling.plan import plan_all
    from cbt.service import model_changes

    config, model_set, state = _inputs(args)
    concurrency = args.concurrency if args.concurrency is not None else config.worker.model_concurrency
    plans = [p for p in plan_all(model_set.models, state, concurrency=concurrency) if _selected(args, p.model_id)]
    changes = None if args.state else model_changes.compare(config, model_set, state.coverage)
    held = {} if args.state else read_live_holds(config, [p.model_id for p in plans])
    if args.json:
        document = plans_to_json(plans)
        if held:
            document["held_by_checks"] = held_to_json(held)
        print(json.dumps(document if changes is None else {**document, "model_changes": model_changes.to_json(
            changes)}, indent=2))
    else:
        sections = [render_plans(plans), render_held(held), "" if changes is None else model_changes.render(changes)]
        print("\n\n".join(s for s in sections if s))
    return 0


def run_status(args: argparse.Namespace) -> int:
    from cbt.scheduling.plan import incremental_models
    from cbt.scheduling.status import model_status
    from cbt.service import model_changes

    config, model_set, state = _inputs(args)
    models = model_set.models
    if not state.coverage_known:
        print("warning: the hot coverage index is being rebuilt from the admin tables (Redis was emptied); "
              "coverage below may be incomplete", file=sys.stderr)
    statuses = [model_status(m, models, state) for m in incremental_models(models.values()) if _selected(args, m.id)]
    failures = {} if args.state else read_live_failures(config, [s.model_id for s in statuses])
    held = {} if args.state else read_live_holds(config, [s.model_id for s in statuses])
    now_ms = (state.now if state.now is not None else int(time.time())) * 1000
    shown = None if args.show is None else position_display(config, model_set, args.show, now_ms)
    schedules = [] if args.state or args.model else read_live_schedules(config, model_set, now_ms // 1000)
    mixed = model_changes.read_mixed_versions(config, [s.model_id for s in statuses]) if args.versions and \
        not args.state else {}
    if args.json:
        document = statuses_to_json(statuses, state, failures, shown)
        if schedules:
            document = {**document, "scheduled": [asdict(s) for s in schedules]}
        if held:
            document = {**document, "held_by_checks": held_to_json(held)}
        if mixed:
            document = {**document, "versions_held": {m: [{"version": v, "ranges": [list(r) for r in ranges]}
                                                          for v, ranges in held.items()] for m, held in mixed.items()}}
        print(json.dumps(document, indent=2))
    else:
        sections = [render_statuses(statuses, failures, shown), render_held(held, shown),
                    render_schedules(schedules) if schedules else "", render_mixed_versions(mixed, shown)]
        print("\n\n".join(s for s in sections if s))
    return 0


def render_held(held: Mapping[ModelId, Sequence[HeldInterval]], shown: ShowPosition | None = None) -> str:
    """The intervals failed checks hold (not published; their dependents wait: docs/checks.md)."""
    lines = [f"{model}: HELD {_fmt((h.start, h.end), model, shown)} {h.reason}"
             for model, intervals in sorted(held.items()) for h in intervals]
    return "\n".join(["held by failed checks (published once an invalidation over them re-runs them):", *lines]) \
        if lines else ""


def held_to_json(held: Mapping[ModelId, Sequence[HeldInterval]]) -> dict[ModelId, list[dict[str, Any]]]:
    """The intervals checks hold, as the api's `held` items: range, version, reason, who accepted them anyway."""
    return {m: [{"range": [h.start, h.end], "version": h.version, "reason": h.reason, "accepted_by": h.accepted_by}
                for h in intervals] for m, intervals in held.items()}


def render_mixed_versions(mixed: Mapping[ModelId, Mapping[int | None, Sequence[Range]]],
                          shown: ShowPosition | None = None) -> str:
    """The tables an in-place change has not finished with: the intervals each version's rows hold."""
    if not mixed:
        return ""
    lines = ["In-place changes under way (the intervals each version's rows hold):"]
    for model_id, held in sorted(mixed.items()):
        parts = [f"{'version ' + str(v) if v is not None else 'before versions'} "
                 f"{', '.join(_fmt(r, model_id, shown) for r in ranges)}"
                 for v, ranges in sorted(held.items(), key=lambda item: item[0] or 0)]
        lines.append(f"  {model_id}: {'; '.join(parts)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class ScheduleStatus:
    """A scheduled model as ``cbt status`` shows it: the schedule in force (a live override's when one is set), the
    latest fire time it ran for successfully and the next fire (``None`` while paused), as the dashboard shows them."""

    id: ModelId
    schedule: str
    enabled: bool
    last_fire_unix: int | None
    next_unix: int | None
    is_due: bool


def read_live_schedules(config: Config, model_set: ModelSet, now_unix: int) -> list[ScheduleStatus]:
    """The scheduled models' last and next runs, from Redis (the latest successful fire, the live overrides)."""
    from cbt.models import live_overrides
    from cbt.scheduling.next_run import next_run

    if not model_set.scheduled:
        return []
    state = redis_state(config)
    try:
        stored, fired = state.overrides.overrides(), state.coverage.latest_fires([m.id for m in model_set.scheduled])
    except Exception as e:  # the Redis client raises its own hierarchy; say what to do instead of a traceback
        raise CbtError(f"cannot read live state from {config.redis.shown_url} ({e}); {LIVE_STATE_HELP}") from e
    valid = {}
    for model_id, fields in stored.items():
        try:
            valid[model_id] = live_overrides.check(model_set, model_id, fields)
        except live_overrides.OverrideRejected:
            continue  # no longer valid for the loaded config: the coordinators ignore it too (cbt override list)
    in_force, paused = live_overrides.apply(model_set, valid)
    out = []
    for model in sorted(in_force.scheduled, key=lambda m: m.id):
        upcoming = next_run(model.schedule, fired.get(model.id), now_unix, model.id not in paused)
        out.append(ScheduleStatus(model.id, model.schedule, model.id not in paused, fired.get(model.id),
                                  upcoming.next_unix, upcoming.is_due))
    return out


def _next_shown(schedule: ScheduleStatus) -> str:
    if not schedule.enabled:
        return "paused (live override)"
    if schedule.next_unix is None:
        return "none: the schedule never fires"
    return f"{_time(schedule.next_unix)}{' (due)' if schedule.is_due else ''}"


def render_schedules(schedules: Sequence[ScheduleStatus]) -> str:
    """The scheduled models' table: schedule in force, last successful run, next run."""
    header = ("SCHEDULED MODEL", "SCHEDULE", "LAST RUN", "NEXT RUN")
    rows = [header] + [
        (s.id, s.schedule, _time(s.last_fire_unix) if s.last_fire_unix is not None else "never",
         _next_shown(s))
        for s in schedules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _time(unix: int | None) -> str:
    return "-" if unix is None else datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def position_display(config: Config, model_set: ModelSet, name: str, now_ms: int) -> ShowPosition:
    """Each model's positions shown by its interval type's transformation ``name`` (its first one when empty), as
    the web UI and the API show them; raw where the type has no such transformation or it cannot compute one."""
    from cbt.config.interval_types import transformations_for
    from cbt.config.position_expr import ExpressionError
    from cbt.models.spec import is_time_type

    kinds = {m.id: m.interval.type for m in model_set.incrementals}
    known = {t.name for kind in set(kinds.values())
             for t in transformations_for(kind, config.interval_types, is_time_type(kind))}
    if name and name not in known:
        raise CbtError(f"--show: no interval type of these models has a transformation {name!r} "
                       f"(they have: {', '.join(sorted(known))})")

    def show(model_id: ModelId, position: int) -> str:
        kind = kinds[model_id]
        chosen = transformations_for(kind, config.interval_types, is_time_type(kind))
        found = next((t for t in chosen if not name or t.name == name), None)
        if found is None:
            return str(position)
        try:
            return found.show(position, now_ms)
        except ExpressionError:
            return str(position)

    return show


def _inputs(args: argparse.Namespace) -> tuple[Config, ModelSet, StateSnapshot]:
    """The config, every enabled model and the state (``--state`` or live) both commands compute from."""
    from cbt.config.settings import load_config

    config = load_config(args.config)
    for w in config.warnings:  # (the original CBT's keys, accepted but meaning nothing here)
        print(f"{w.path}:{w.line}: {w.field}: warning: {w.message}", file=sys.stderr)
    model_set = _load_models(config)
    state = read_state(args.state) if args.state else read_live_state(config, model_set)
    _check_selection(args, model_set.models)
    return config, model_set, state


def redis_state(config: Config) -> RedisState:
    """The Redis ports (``cbt.adapters.redis_client``: not ``runtime``, which imports the Kafka and Spark clients at
    its top, a second of start-up these commands do not need)."""
    from cbt.adapters.redis_client import redis_state as state_of

    return state_of(config)


def read_live_failures(config: Config, model_ids: list[ModelId]) -> dict[ModelId, list[TaskFailed]]:
    """The failure log in Redis (tasks that failed their last attempt), newest first."""
    try:
        return redis_state(config).failures.recent_failures(model_ids)
    except Exception as e:  # the Redis client raises its own hierarchy; say what to do instead of a traceback
        raise CbtError(f"cannot read live state from {config.redis.shown_url} ({e}); {LIVE_STATE_HELP}") from e


def read_live_holds(config: Config, model_ids: list[ModelId]) -> dict[ModelId, tuple[HeldInterval, ...]]:
    """The intervals failed checks hold, in Redis."""
    try:
        return redis_state(config).holds.held(model_ids)
    except Exception as e:  # the Redis client raises its own hierarchy; say what to do instead of a traceback
        raise CbtError(f"cannot read live state from {config.redis.shown_url} ({e}); {LIVE_STATE_HELP}") from e


def read_live_state(config: Config, model_set: ModelSet) -> StateSnapshot:
    """What the services see now: bounds cache, hot coverage index and in-flight tasks in Redis."""
    from cbt.planning.live import LiveStateReader

    state = redis_state(config)
    reader = LiveStateReader.of(model_set, state)
    try:
        return reader.read_snapshot([m.id for m in model_set.incrementals])
    except Exception as e:  # the Redis client raises its own hierarchy; say what to do instead of a traceback
        raise CbtError(f"cannot read live state from {config.redis.shown_url} ({e}); {LIVE_STATE_HELP}") from e


def read_state(path: str) -> StateSnapshot:
    """The snapshot in ``path``; warnings (unknown keys) go to stderr."""
    from cbt.scheduling.snapshot import StateFileError, snapshot_from_json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise StateFileError(f"{path}: cannot read the state file: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise StateFileError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from e
    try:
        snapshot, warnings = snapshot_from_json(data)
    except StateFileError as e:
        raise StateFileError(f"{path}: {e}") from e
    for warning in warnings:
        print(f"cbt: warning: {path}: {warning}", file=sys.stderr)
    return snapshot


def plans_to_json(plans: list[ModelPlan]) -> dict[str, Any]:
    """The ``cbt plan --json`` document; ``valid_range`` is ``[min, max]`` with ``max`` exclusive."""
    return {
        "models": [
            {
                "id": p.model_id,
                "valid_range": list(p.valid) if p.valid is not None else None,
                "tasks": [{"position": t.position, "interval": t.interval, "direction": t.direction} for t in p.tasks],
                "waiting": p.waiting,
            }
            for p in plans
        ]
    }


def statuses_to_json(statuses: list[ModelStatus], state: StateSnapshot,
                     failures: Mapping[ModelId, list[TaskFailed]] | None = None,
                     shown: ShowPosition | None = None) -> dict[str, Any]:
    """The ``cbt status --json`` document; ``failures``: the newest tasks that failed their last attempt; with
    ``shown``, each model's valid range and coverage also as people read them (``valid_range_shown``,
    ``coverage_shown``)."""
    failures = failures or {}
    models: list[dict[str, Any]] = [
        {
            "id": s.model_id,
            "valid_range": list(s.valid) if s.valid is not None else None,
            "coverage": [list(r) for r in s.coverage],
            "gaps": [list(r) for r in s.gaps],
            "in_flight": [list(r) for r in s.in_flight],
            "lag": s.lag,
            "waiting": s.reason,
            "failures": [
                {"task_id": f.task_id, "position": f.position, "interval": f.interval,
                 "scheduled_unix": f.scheduled_unix, "attempts": f.attempts, "error": f.error,
                 "failed_at_ms": f.failed_at_ms}
                for f in failures.get(s.model_id, [])
            ],
        }
        for s in statuses
    ]
    if shown is not None:
        for item, s in zip(models, statuses, strict=True):
            item["valid_range_shown"] = [shown(s.model_id, p) for p in s.valid] if s.valid is not None else None
            item["coverage_shown"] = [[shown(s.model_id, p) for p in r] for r in s.coverage]
    return {"now": state.now, "models": models}


def render_plans(plans: list[ModelPlan]) -> str:
    """A readable plan: one block per model, one line per task."""
    if not plans:
        return "no incremental models"
    lines: list[str] = []
    for p in plans:
        lines.append(f"{p.model_id}  valid {_fmt(p.valid)}  {len(p.tasks)} task(s)")
        lines.extend(f"  {t.direction:<8}  {_fmt((t.position, t.end)):<24}  {t.id}" for t in p.tasks)
        if p.waiting:
            lines.append(f"  waiting: {p.waiting}")
    return "\n".join(lines)


def render_statuses(statuses: list[ModelStatus], failures: Mapping[ModelId, list[TaskFailed]] | None = None,
                    shown: ShowPosition | None = None) -> str:
    """A readable status table, then why a model has no valid range and its latest failure; ``shown``: positions
    as people read them (``cbt status --show``)."""
    if not statuses:
        return "no incremental models"
    header = ("MODEL", "VALID RANGE", "COVERED", "RANGES", "GAPS", "IN FLIGHT", "LAG")
    rows = [header] + [
        (
            s.model_id,
            _fmt(s.valid, s.model_id, shown),
            _fmt((s.coverage[0][0], s.coverage[-1][1]), s.model_id, shown) if s.coverage else "-",
            str(len(s.coverage)),
            str(len(s.gaps)),
            str(len(s.in_flight)),
            "-" if s.lag is None else str(s.lag),
        )
        for s in statuses
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.extend(f"{s.model_id}: {s.reason}" for s in statuses if s.reason)
    for s in statuses:
        recent = (failures or {}).get(s.model_id)
        if recent:
            last = recent[0]
            when = datetime.fromtimestamp(last.failed_at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            error = (last.error.strip().splitlines() or [""])[0][:160]
            lines.append(f"{s.model_id}: FAILED {len(recent)} task(s) recently; last {last.task_id} at {when} after "
                         f"{last.attempts} attempt(s): {error}")
    return "\n".join(lines)


def _fmt(r: Range | None, model_id: ModelId = "", shown: ShowPosition | None = None) -> str:
    if r is None:
        return "-"
    return f"[{r[0]}, {r[1]})" if shown is None else f"[{shown(model_id, r[0])}, {shown(model_id, r[1])})"


def _selected(args: argparse.Namespace, model_id: ModelId) -> bool:
    return not args.model or model_id in args.model


def _check_selection(args: argparse.Namespace, models: Mapping[ModelId, Model]) -> None:
    from cbt.scheduling.plan import incremental_models

    incrementals = sorted(m.id for m in incremental_models(models.values()))
    chosen: list[ModelId] = []
    for name in [*args.models, *(args.model or ())]:
        found = [m for m in incrementals if name in (m, m.split(".", 1)[-1])]
        if len(found) != 1:
            why = f"names {len(found)} models ({', '.join(found)})" if found else "is not an incremental model"
            raise CbtError(f"MODEL {name!r} {why}")
        chosen.append(found[0])
    args.model = chosen


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _load_models(config: Config) -> ModelSet:
    """Every enabled model; load warnings (e.g. overrides naming no model) go to stderr."""
    from cbt.models.loader import load_models

    model_set = load_models(config)
    for w in model_set.warnings:
        print(f"{w.path}:{w.line}: {w.field}: warning: {w.message}", file=sys.stderr)
    return model_set
