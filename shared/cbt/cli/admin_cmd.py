"""``cbt admin init | consolidate | rebuild-cache``: the Delta admin tables and the Redis hot index."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cbt.adapters.delta_admin import DeltaAdmin
    from cbt.config.settings import Config


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("admin", help="admin tables: init, consolidate, rebuild-cache")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, func, text in (
        ("init", _init, "create the admin tables if missing"),
        ("consolidate", _consolidate, "merge adjacent completed-interval rows (never loses coverage)"),
        ("rebuild-cache", _rebuild, "reload Redis's hot coverage index from the admin tables"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
        action.set_defaults(func=func)


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
    _, admin = _open(args)
    admin.ensure_tables()
    for result in admin.consolidate():
        state = " (deferred: busy, retried next time)" if result.is_deferred else ""
        print(f"{result.model}: {result.rows_before} -> {result.rows_after} rows{state}")
    return 0


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
    return 0
