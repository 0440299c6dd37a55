"""``cbt rerun MODEL --start S --end E`` publishes an invalidation event
(docs/design/invalidations.md#invalidation-events), exactly what another system would publish; ``cbt schema`` writes
the JSON Schemas of every topic's message bodies (``docs/asyncapi.yaml`` refers to them)."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

from cbt.base.errors import CbtError

SCHEMA_DIR = Path("docs") / "schemas"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("rerun", help="re-run a model's range (and its descendants') by publishing an invalidation")
    p.add_argument("model", metavar="MODEL", help="model id (database.table) or a unique table name")
    p.add_argument("--start", type=int, required=True, help="first position (inclusive)")
    p.add_argument("--end", type=int, required=True, help="end position (exclusive): [start, end)")
    p.add_argument("--no-cascade", dest="cascade", action="store_false", help="only this model, not its descendants")
    p.add_argument("--reason", default="manual", help="why (default: manual)")
    p.add_argument("--id", default=None, help="event id (default: a new one); publishing an id again is a no-op")
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    p.set_defaults(func=cmd_rerun)
    s = sub.add_parser("schema", help="write the JSON Schemas of every message body on the topics")
    s.add_argument("--out", metavar="DIR", default=str(SCHEMA_DIR), help=f"folder (default: {SCHEMA_DIR})")
    s.set_defaults(func=cmd_schema)


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
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from cbt.contract.schemas import message_schemas, schema_text

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in message_schemas().items():
        (out / name).write_text(schema_text(schema), encoding="utf-8")
        print(out / name)
    return 0
