"""``cbt rerun MODEL --start S --end E`` publishes an invalidation event
(docs/design/invalidations.md#invalidation-events), exactly what another system would publish; ``cbt rollback
MODEL`` switches a model back to the version its last switch replaced (docs/changing-models.md#rollback)."""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from cbt.base.errors import CbtError
from cbt.cli.audit import record_change


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("rerun", help="re-run a range of a model and its descendants (an invalidation)",
                       description="Publishes an invalidation of [--start, --end), exactly what another system would "
                       "publish: the range leaves coverage and re-runs, with the descendants it reaches unless "
                       "--no-cascade. An audit row records who.")
    p.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    p.add_argument("--start", type=int, required=True, help="first position (inclusive)")
    p.add_argument("--end", type=int, required=True, help="end position (exclusive): [start, end)")
    p.add_argument("--no-cascade", dest="cascade", action="store_false", help="only this model, not its descendants")
    p.add_argument("--reason", default="manual", help="why (default: manual)")
    p.add_argument("--id", default=None, help="event id (default: a new one); publishing an id again is a no-op")
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    p.set_defaults(func=cmd_rerun)
    r = sub.add_parser("rollback", help="switch a model back to the version its last switch replaced",
                       description="Switches the model — and every model switched with it — back to the versions its "
                       "last switch replaced, without recomputing them: each name points at its old version's files "
                       "again (kept as <table>__cbt_kept_v<N> for change.retention). Then re-runs what the "
                       "rolled-back versions computed after the switch. An audit row records who.")
    r.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    r.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    r.set_defaults(func=cmd_rollback)


def cmd_rerun(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from cbt.contract.messages import Invalidation
    from cbt.models.loader import load_project
    from cbt.scheduling.invalidation import why_rejected

    config, models = load_project(args.config)
    try:
        event = Invalidation(id=args.id or f"cli-{uuid.uuid4().hex}", model=args.model, start=args.start,
                             end=args.end, reason=args.reason, source="cbt-cli", cascade=args.cascade)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, i['loc'])) or 'event'}: {i['msg']}" for i in e.errors())
        raise CbtError(problems) from None
    why = why_rejected(models, event, config.invalidator.max_range, config.invalidator.max_tasks)
    if why is not None:
        raise CbtError(why)
    event = event.model_copy(update={"model": models.resolve(event.model)})
    from cbt.adapters.invalidation_publisher import publish_event

    publish_event(config.kafka.bootstrap_servers, event, topic_prefix=config.kafka.topic_prefix,
                  kafka_config=config.kafka.client)
    scope = "and its descendants" if event.cascade else "only"
    print(f"published invalidation {event.id}: {event.model} [{event.start}, {event.end}) {scope}")
    record_change(config, "rerun", event.model, {"event": event.id, "start": event.start, "end": event.end,
                                                 "cascade": event.cascade, "reason": event.reason})
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    """Point each model of the switch back at its old version's files (one catalog change each; a switch that copied:
    its table restored in one Delta commit), record the versions (the services take them up
    within seconds: ``cbt.models.builds.VERSIONS_READ_S``), then re-run what the rolled-back versions computed
    after the switch, and the in-place readers that recomputed from them."""
    import time

    from cbt.adapters.delta_admin import admin_from_config
    from cbt.adapters.invalidation_publisher import publish_event
    from cbt.adapters.spark import connect
    from cbt.adapters.switch import point_back, restore
    from cbt.cli.plan_cmds import redis_state
    from cbt.contract.messages import Invalidation
    from cbt.models.builds import kept_rows_id
    from cbt.models.deployment import NothingToRollBack, plan_rollback
    from cbt.models.loader import load_project
    from cbt.models.versions import short_version
    from cbt.scheduling.version_pieces import known

    config, models = load_project(args.config)
    model_id = models.resolve(args.model)
    if not config.spark.remote:
        raise CbtError("cbt rollback restores tables through Spark: set spark.remote (cbt dev up starts one)")
    spark = connect(config.spark.remote)
    admin = admin_from_config(spark, config)
    record = admin.versions_record()
    try:
        plan = plan_rollback(model_id, record.all_versions(), int(time.time() * 1000))
    except NothingToRollBack as e:
        raise CbtError(str(e)) from None
    for old in plan.restores:
        if old.table_location is not None:
            point_back(spark, old.model, old.table_location, kept_rows_id(old.model, old.version))
            print(f"{old.model}: version {old.version}'s table again ({old.table_location})")
        else:
            restore(spark, old.model, old.table_version or 0)
            print(f"restored {old.model} to its table version {old.table_version}")
    rolled = {old.model for old in plan.restores}
    covered = admin.coverage(sorted({*rolled, *(d for m in rolled for d in models.dependents(m))}))  # (before
    # the kept rows come back: what the rolled-back version computed after the switch is re-run below)
    hot = redis_state(config).coverage
    for kept in (v for v in plan.rows if v.state == "live"):  # (the rows the switch kept: none before they were)
        rows_of = kept_rows_id(kept.model, kept.version)
        held = admin.version_coverage([rows_of]).get(rows_of)
        if held:
            admin.adopt(kept.model, rows_of)
            hot.adopt_versions(kept.model, known(held))
    record.record_versions(plan.rows)
    hot.announce_versions({v.model: short_version(v.data_hash) for v in plan.rows if v.state == "live"})
    events = [Invalidation(id=f"rollback-{uuid.uuid4().hex}", model=m, start=start, end=covered[m][-1][1],
                           reason="rollback: computed by the version rolled back", source="cbt-cli", cascade=True)
              for m, start in plan.heads.items() if covered.get(m) and covered[m][-1][1] > start]
    events += [Invalidation(id=f"rollback-{uuid.uuid4().hex}", model=d, start=covered[d][0][0],
                            end=covered[d][-1][1], reason="rollback: its parent switched back", source="cbt-cli",
                            cascade=True)
               for d in sorted({d for m in rolled for d in models.dependents(m)} - rolled) if covered.get(d)]
    for event in events:
        publish_event(config.kafka.bootstrap_servers, event, topic_prefix=config.kafka.topic_prefix,
                      kafka_config=config.kafka.client)
        print(f"re-running {event.model} [{event.start}, {event.end}): {event.reason}")
    versions = ", ".join(f"{v.model} version {v.version}" for v in plan.rows if v.state == "live")
    print(f"rolled back: {versions} live again")
    record_change(config, "rollback", model_id, {"restored": [[v.model, v.version] for v in plan.restores],
                                                 "events": [e.id for e in events]})
    return 0
