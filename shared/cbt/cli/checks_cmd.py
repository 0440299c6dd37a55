"""``cbt checks show MODEL [POSITION]``: the interval checks' verdicts (``cbt_check_results``) and the intervals failed
checks hold now (docs/checks.md) — read from the admin tables' files and Redis, without Spark. ``cbt checks accept
MODEL --start S --end E``: publish held intervals anyway, through the api (a write token; the api records who)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError

if TYPE_CHECKING:
    from cbt.state.admin_records import CheckedInterval
    from cbt.state.ports import HeldInterval

RECENT = 20
"""Intervals listed without a position: the newest that failed or warned."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("checks", help="interval checks: what failed, what is held, the violating rows")
    commands = p.add_subparsers(dest="checks_command", required=True, metavar="COMMAND")
    show = commands.add_parser("show", help="a model's held intervals and its latest failed or warned verdicts; "
                                            "with POSITION, every verdict on the interval holding it and samples "
                                            "of its violating rows (from the admin tables' files and Redis)")
    show.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    show.add_argument("position", metavar="POSITION", type=int, nargs="?", help="a position of the interval")
    show.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    show.set_defaults(func=cmd_show)
    accept = commands.add_parser(
        "accept", help="publish the intervals of [START, END) that failed checks hold, whatever their error checks "
                       "say (through the api, with an audit row)",
        epilog="The api: --api URL, else $CBT_API_URL, else the config's api.addr. A token of api.auth.tokens: "
               "$CBT_API_TOKEN (or --token, which other users of the machine can see in its process list).")
    accept.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    accept.add_argument("--start", type=int, required=True, help="first position of the range")
    accept.add_argument("--end", type=int, required=True, help="end of the range, exclusive")
    accept.add_argument("--reason", default="manual", help="recorded in the audit row")
    accept.add_argument("--api", metavar="URL", help="the api's base URL (default: $CBT_API_URL, else from api.addr)")
    accept.add_argument("--token", help="a bearer token of api.auth.tokens (default: $CBT_API_TOKEN)")
    accept.add_argument("--config", metavar="FILE", help="config file, for api.addr (default: $CBT_CONFIG or "
                                                         "./config.yaml)")
    accept.set_defaults(func=cmd_accept)


def cmd_accept(args: argparse.Namespace) -> int:
    import os
    from urllib.parse import quote

    from cbt.cli.rows_cmd import API_TOKEN_ENV_VAR, HttpApi, api_url
    from cbt.config.settings import load_config

    if args.end <= args.start:
        raise CbtError(f"--end ({args.end}) must be after --start ({args.start})")
    base = api_url(args.api, os.environ, lambda: load_config(args.config).api.addr)
    api = HttpApi(base, args.token or os.environ.get(API_TOKEN_ENV_VAR) or None)
    answer = api.post(f"/api/v1/models/{quote(args.model, safe='')}/checks/accept",
                      {"start": args.start, "end": args.end, "reason": args.reason})
    for held in answer["accepted"]:
        start, end = held["range"]
        print(f"{answer['model']}: ACCEPTED [{start}, {end}) ({held['reason']}); it is planned again and published")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from cbt.cli.plan_cmds import read_live_holds
    from cbt.models.loader import load_project
    from cbt.models.spec import IncrementalModel
    from cbt.service.model_changes import files_admin
    from cbt.state.ports import CheckFilter

    config, models = load_project(args.config)
    model_id = models.resolve(args.model)
    model = models.models.get(model_id)
    if not isinstance(model, IncrementalModel) or not model.checks:
        raise CbtError(f"{args.model}: no checks (checks: in an incremental model's frontmatter, docs/checks.md)")
    admin = files_admin(config)
    if admin is None:
        raise CbtError("cbt checks reads the admin tables' files: set spark.warehouse (cbt dev up's is var/spark/"
                       "warehouse)")
    record = admin.check_results_record()
    held = read_live_holds(config, [model_id]).get(model_id, ())
    if args.position is None:
        results = [r for r in record.check_results([model_id], limit=1000) if r.status != "passed"]
        print(render_summary(model_id, [c.name for c in model.checks], held, results))
        return 0
    window = (args.position, args.position + 1)
    results = record.check_results([model_id], limit=1000, where=CheckFilter(window=window))
    if not results:
        print(f"{model_id}: no check ran on an interval holding {args.position}")
        return 1
    print(render_interval(model_id, results))
    return 0


def render_summary(model_id: str, checks: Sequence[str], held: Sequence[HeldInterval],
                   results: Sequence[CheckedInterval]) -> str:
    lines = [f"{model_id}: checks {', '.join(checks)}"]
    lines += [f"  {'ACCEPTED' if h.is_accepted else 'HELD'} [{h.start}, {h.end}) version {h.version}: {h.reason}"
              + (f" (accepted by {h.accepted_by}: being published)" if h.is_accepted else "")
              for h in held] or ["  nothing held"]
    latest: dict[tuple[int, int], list[CheckedInterval]] = {}
    for r in results:  # (newest first: each interval's latest task's verdicts, each check once)
        verdicts = latest.get((r.position, r.end))
        if verdicts is None or (verdicts[0].task_id == r.task_id and r.check not in {v.check for v in verdicts}):
            latest.setdefault((r.position, r.end), []).append(r)
    for (start, end), verdicts in list(latest.items())[:RECENT]:
        lines.append(f"  [{start}, {end}) {_when(verdicts[0].checked_at_ms)}: " + "; ".join(
            f"{v.status} {v.check} ({v.violations})" for v in verdicts))
    if not latest:
        lines.append("  no failed or warned verdicts recorded")
    return "\n".join(lines)


def render_interval(model_id: str, results: Sequence[CheckedInterval]) -> str:
    """Every check's verdict from the latest task that checked the interval, with the violating rows' samples
    (once each: a task delivered twice records its verdicts twice)."""
    newest = results[0]
    verdicts: list[CheckedInterval] = []
    for r in results:
        if r.task_id == newest.task_id and r.position == newest.position and r.check not in {v.check for v in verdicts}:
            verdicts.append(r)
    counted = "rows not counted" if newest.rows is None else f"{newest.rows} rows"
    lines = [f"{model_id} [{newest.position}, {newest.end})  version {newest.version}  {counted}  "
             f"checked {_when(newest.checked_at_ms)}  task {newest.task_id}"]
    for v in verdicts:
        lines.append(f"  {v.status.upper() if v.status != 'passed' else v.status:<7} {v.check} ({v.severity}): "
                     f"{v.violations} violation{'s' if v.violations != 1 else ''}")
        lines.extend(f"      {row}" for row in v.sample)
    return "\n".join(lines)


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
