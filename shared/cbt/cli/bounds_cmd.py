"""``cbt bounds set | delete`` (docs/operations/overrides.md#bounds-edits-and-consolidation), written to the stores as
the API writes them, like ``cbt override``:

* ``bounds set`` checks ``[min, max)`` first (``cbt.scheduling.bounds_edit``) and stores it in Redis's bounds cache;
  the coordinators plan with it at each dependent's next fill (the API also announces it on Kafka, so they plan at
  once). The next scan starts from it, as from any cached bounds.
* ``bounds delete`` removes them and asks the bounds-cache for a full scan now.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError
from cbt.cli.audit import record_change

if TYPE_CHECKING:
    from cbt.config.settings import Config
    from cbt.models.spec import ModelId


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("bounds", help="an external model's cached bounds: set, delete (and rescan)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    s = actions.add_parser("set", help="set an external model's raw bounds [min, max) until its next scan")
    s.add_argument("--min", type=int, required=True, help="first position the table holds (before lag)")
    s.add_argument("--max", type=int, required=True, help="end of its positions, exclusive")
    s.set_defaults(func=cmd_set)
    d = actions.add_parser("delete", help="delete an external model's bounds and ask the bounds-cache to rescan it")
    d.set_defaults(func=cmd_delete)
    for action in (s, d):
        action.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
        action.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")


def _model(args: argparse.Namespace) -> tuple[Config, ModelId]:
    from cbt.models.loader import load_project
    from cbt.models.spec import ExternalModel

    config, models = load_project(args.config)
    model_id = models.resolve(args.model)
    if not isinstance(models.models[model_id], ExternalModel):
        raise CbtError(f"{model_id} is not an external model: only external models have bounds")
    return config, model_id


def cmd_set(args: argparse.Namespace) -> int:
    from cbt.adapters.runtime import redis_state
    from cbt.scheduling.bounds_edit import checked_bounds

    bounds = checked_bounds(args.min, args.max)
    config, model_id = _model(args)
    previous = redis_state(config).bounds.put_bounds(model_id, bounds)
    was = "none" if previous is None else f"[{previous.min}, {previous.max})"
    print(f"{model_id}: bounds set to [{bounds.min}, {bounds.max}) (were {was}); the next scan starts from them")
    record_change(config, "bounds-set", model_id, {"min": bounds.min, "max": bounds.max, "was": was})
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from cbt.adapters.bounds_refresh import RedisRefreshRequests
    from cbt.adapters.redis_client import redis_client
    from cbt.adapters.redis_stores.bounds import RedisBounds

    config, model_id = _model(args)
    client = redis_client(config)
    removed = RedisBounds(client, config.redis.key_prefix).delete_bounds(model_id)
    RedisRefreshRequests(client, config.redis.key_prefix).request(model_id)
    was = "none were stored" if removed is None else f"were [{removed.min}, {removed.max})"
    print(f"{model_id}: bounds deleted ({was}); the bounds-cache scans it at its next round")
    record_change(config, "bounds-delete", model_id, {"was": was})
    return 0
