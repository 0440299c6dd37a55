"""``cbt admin init | consolidate [MODEL ...] | rebuild-cache``: the Delta admin tables and the Redis hot index."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from cbt.cli.audit import record_change

if TYPE_CHECKING:
    from cbt.adapters.delta_admin import DeltaAdmin
    from cbt.config.settings import Config


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("admin", help="admin tables: init, consolidate, rebuild-cache")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, func, text in (
        ("init", _init, "create the admin tables if missing"),
        ("consolidate", _consolidate, "merge each model's adjacent completion rows now (coverage unchanged; only "
                                      "the MODELs named, with MODEL)"),
        ("rebuild-cache", _rebuild, "reload Redis's hot coverage index from the admin tables"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
        action.set_defaults(func=func)
        if name == "consolidate":
            action.add_argument("models", metavar="MODEL", nargs="*",
                                help="only these incremental models (id or unique table name); default: every one")


def _open(args: argparse.Namespace) -> tuple[Config, DeltaAdmin]:
    from cbt.adapters.delta_admin import admin_from_config
    from cbt.adapters.spark import connect
    from cbt.config.settings import load_config

    config = load_config(args.config)
    return config, admin_from_config(connect(config.spark.remote or ""), config)


def _init(args: argparse.Namespace) -> int:
    _, admin = _open(args)
    admin.ensure_tables()
    print("admin tables ready")
    return 0


def _consolidate(args: argparse.Namespace) -> int:
    """Every model's rows (a busy one deferred to the coordinator's next consolidation), or the named models' (a
    busy one is an error: try again)."""
    from cbt.base.errors import CbtError

    wanted: list[str | None] = [*_incrementals(args)] if args.models else [None]
    config, admin = _open(args)
    admin.ensure_tables()
    for model_id in wanted:
        done = admin.consolidate(model_id) if model_id else admin.consolidate()
        if model_id and not done:
            print(f"{model_id}: no completion rows")
        for result in done:
            if model_id and result.is_deferred:
                raise CbtError(f"{model_id}: concurrent completions kept winning over the rewrite; nothing changed, "
                               f"try again")
            state = " (deferred: busy, retried next time)" if result.is_deferred else ""
            print(f"{result.model}: {result.rows_before} -> {result.rows_after} rows (coverage unchanged){state}")
    record_change(config, "consolidate", ", ".join(m for m in wanted if m) or "*", {})
    return 0


def _incrementals(args: argparse.Namespace) -> list[str]:
    from cbt.base.errors import CbtError
    from cbt.models.loader import load_project
    from cbt.models.spec import IncrementalModel

    _, models = load_project(args.config)
    wanted = [models.resolve(name) for name in args.models]
    for model_id in wanted:
        if not isinstance(models.models[model_id], IncrementalModel):
            raise CbtError(f"{model_id} is not an incremental model: only incremental models have completion rows")
    return wanted


def _rebuild(args: argparse.Namespace) -> int:
    from cbt.adapters.runtime import redis_state
    from cbt.models.loader import load_models
    from cbt.planning import hot_index

    config, admin = _open(args)
    models = load_models(config)
    ids, scheduled = [m.id for m in models.incrementals], [m.id for m in models.scheduled]
    admin.ensure_tables()
    ranges = hot_index.rebuild(admin, redis_state(config).coverage, ids, scheduled, int(time.time()))
    for model_id, count in sorted(ranges.items()):
        print(f"{model_id}: {count} covered range(s)")
    record_change(config, "rebuild-cache", "*", {"models": len(ranges)})
    return 0
