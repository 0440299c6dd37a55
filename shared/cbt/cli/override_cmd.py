"""``cbt override set | clear | list``: live config overrides (docs/operations/overrides.md), written as the API
writes them (the admin table ``cbt_config_overrides`` first, then Redis); the coordinators apply a change at their
next tick. ``set`` checks the override against the model first and writes nothing when it is invalid; ``list`` checks
every stored override against the current config and exits 1 when one would be ignored."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError
from cbt.cli.audit import record_change, who

if TYPE_CHECKING:
    from cbt.config.settings import Config
    from cbt.models.dag import ModelSet
    from cbt.planning.override_sync import LiveOverrides
    from cbt.state.override_ports import OverrideRecord


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("override", help="live config overrides of a model: set, clear, list")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    s = actions.add_parser(
        "set",
        help="set a model's override (replaces its previous one), e.g. "
        """'{"schedules": {"forwardfill": "@every 30s"}, "limits": {"min": 1000}}'""",
    )
    s.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    s.add_argument(
        "fields",
        metavar="JSON",
        help="the override: a JSON object of enabled, schedules, limits, fill, "
        "tags (incremental) or enabled, schedule, tags (scheduled)",
    )
    s.set_defaults(func=cmd_set)
    c = actions.add_parser("clear", help="clear a model's override: its config applies again")
    c.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    c.set_defaults(func=cmd_clear)
    ls = actions.add_parser("list", help="every override, checked against the config (exit 1 if one is ignored)")
    ls.set_defaults(func=cmd_list)
    for action in (s, c, ls):
        action.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")


def _open(args: argparse.Namespace) -> tuple[Config, ModelSet, LiveOverrides]:
    import functools

    from cbt.adapters.delta_admin import tables_from_config
    from cbt.adapters.runtime import redis_state
    from cbt.adapters.spark import connect
    from cbt.models.loader import load_project
    from cbt.planning.override_sync import LiveOverrides

    config, models = load_project(args.config)

    @functools.cache
    def record() -> OverrideRecord:
        return tables_from_config(connect(config.spark.remote or ""), config).ensure_overrides()

    return config, models, LiveOverrides(redis_state(config).overrides, record)


def cmd_set(args: argparse.Namespace) -> int:
    try:
        fields = json.loads(args.fields)
    except ValueError as e:
        raise CbtError(f"JSON: not a JSON object: {e}") from None
    config, models, overrides = _open(args)
    model_id = models.resolve(args.model)
    override = overrides.set(models, model_id, fields, who(), int(time.time() * 1000))
    print(f"{model_id}: override set {json.dumps(dict(override.fields), sort_keys=True)} (applied at the next tick)")
    record_change(config, "override-set", model_id, {"fields": dict(override.fields)})
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    config, models, overrides = _open(args)
    model_id = models.resolve(args.model)
    if not overrides.clear(model_id, who(), int(time.time() * 1000)):
        raise CbtError(f"{model_id} has no live config override")
    print(f"{model_id}: override cleared (its config applies at the next tick)")
    record_change(config, "override-clear", model_id, {})
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from cbt.models import live_overrides
    from cbt.models.live_overrides import OverrideRejected

    _, models, overrides = _open(args)
    _, stored = overrides.current()
    ignored = 0
    for model_id, fields in sorted(stored.items()):
        try:
            live_overrides.check(models, model_id, fields)
            note = ""
        except OverrideRejected as e:
            ignored += 1
            note = f"  IGNORED: {e}"
        print(f"{model_id}: {json.dumps(fields, sort_keys=True)}{note}")
    if not stored:
        print("no live config overrides")
    return 1 if ignored else 0
