"""(j) Live: ``make demo`` as a new user runs it — catch up the demo's backlog, then keep up with its live feed.

The demo's own pieces (``cbt.dev.demo``: the example pipeline, its feed writing the backlog and then new rows every
few seconds — late rows, a stalled provider, history landing late included — and all five services) in a namespace
of the bench's own. Every ``SAMPLE_S`` the bench reads each incremental model's status from the hot index, as the
demo's screen does, and how far its covered frontier is behind now (``behind_s``). Reported:

- caught up: seconds from starting the services until every model is within its bound of now with no gap below
  (target ≤ 120 s);
- then, for ``--live-watch`` seconds, each model's largest ``behind_s`` (target: two intervals + 10 s,
  ``2 * interval.max + 10``), with the number of samples.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from redis import Redis

from bench.report import load_average
from bench.stack import Endpoints
from cbt.adapters.kafka_admin import delete_topics
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import load_config
from cbt.contract.topics import Topics
from cbt.dev.demo import Demo, FeedThread, Options, api_override, namespace_overrides
from cbt.dev.pipeline import ServiceProcesses
from cbt.models.loader import load_models
from cbt.models.spec import IncrementalModel
from cbt.planning.live import LiveStateReader
from cbt.scheduling.status import model_status
from tests.e2e.harness import CONFIG, PROJECT

SAMPLE_S = 5.0
CATCH_UP_LIMIT_S = 600.0
"""How long the bench waits for the first catch-up before it reports it as not reached."""


def bound_s(model: IncrementalModel) -> int:
    """How far behind now a model may be while keeping up: two intervals and 10 s."""
    return 2 * model.interval.max + 10


def behind(models: list[IncrementalModel], reader: LiveStateReader, demo: Demo, now: int) -> dict[str, dict[str, Any]]:
    """Each model's covered frontier's distance to ``now`` and whether it has gaps below it."""
    snapshot = reader.read_snapshot([m.id for m in models])
    out = {}
    for model in models:
        status = model_status(model, demo.models.models, snapshot)
        frontier = max((end for _, end in status.coverage), default=None)
        out[model.table] = {"behind_s": None if frontier is None else now - frontier, "gaps": len(status.gaps)}
    return out


def is_caught_up(models: list[IncrementalModel], sample: dict[str, dict[str, Any]]) -> bool:
    return all(sample[m.table]["behind_s"] is not None and sample[m.table]["behind_s"] <= bound_s(m)
               and sample[m.table]["gaps"] == 0 for m in models)


def benchmark(spark: SparkSession, endpoints: Endpoints, watch_s: float) -> dict[str, Any]:
    tag = f"bnlv{uuid.uuid4().hex[:6]}"
    overrides = {"CBT__KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka, "CBT__REDIS__URL": endpoints.redis_url,
                 "CBT__SPARK__REMOTE": endpoints.spark_remote, **namespace_overrides(tag)}
    overrides.update(api_override(load_config(CONFIG, environ=overrides)))
    config = load_config(CONFIG, environ=overrides)
    options = Options(CONFIG, None, True, tag, 900, SAMPLE_S, False)
    log_dir = PROJECT / "var" / "bench" / tag / "logs"
    demo = Demo(options, config, load_models(config), spark, ServiceProcesses(CONFIG, overrides, Path(log_dir)))
    feed = FeedThread(spark, demo.sources, demo.feed, demo.events)
    redis = Redis.from_url(endpoints.redis_url)
    models = list(demo.models.incrementals)
    samples: list[dict[str, Any]] = []
    try:
        load = load_average()
        started = time.monotonic()  # the user's command: the demo resets, writes its backlog, starts the services
        demo.prepare()
        demo.start_services()
        feed.start()
        reader = LiveStateReader.of(demo.models, RedisState(redis, config.redis.key_prefix))
        caught_up_s: float | None = None
        while True:
            elapsed = time.monotonic() - started
            sample = behind(models, reader, demo, int(time.time()))
            samples.append({"at_s": round(elapsed, 1), **{t: s["behind_s"] for t, s in sample.items()}})
            if caught_up_s is None and is_caught_up(models, sample):
                caught_up_s = round(elapsed, 1)
            if caught_up_s is None and elapsed > CATCH_UP_LIMIT_S:
                break
            if caught_up_s is not None and elapsed >= caught_up_s + watch_s:
                break
            if demo.procs.exited():
                raise RuntimeError(f"services exited: {demo.procs.exited()}; logs in {log_dir}")
            time.sleep(SAMPLE_S)
        timeline = demo.procs.start_timeline()
    finally:
        feed.stopping.set()
        feed.join(timeout=60)
        demo.procs.stop_all()
    watched = [s for s in samples if caught_up_s is not None and s["at_s"] >= caught_up_s]
    report: dict[str, Any] = {
        "load_at_start": load, "load_at_end": load_average(), "backlog_s": options.backlog_s, "watch_s": watch_s,
        "caught_up_s": caught_up_s, "start_timeline": timeline,
        "models": {m.table: {"interval_max": m.interval.max, "bound_s": bound_s(m),
                             "max_behind_s": max((s[m.table] for s in watched if s[m.table] is not None),
                                                 default=None),
                             "samples": len(watched)} for m in models},
        "samples": samples,
    }
    _cleanup(spark, redis, config, tag)
    return report


def _cleanup(spark: SparkSession, redis: Redis, config: Any, tag: str) -> None:
    for database in (f"{tag}_src", f"{tag}_out", f"{tag}_admin"):
        spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
    keys = list(redis.scan_iter(match=f"{tag}:*"))
    if keys:
        redis.delete(*keys)
    delete_topics(config.kafka.bootstrap_servers, Topics(config.kafka.topic_prefix).all(("default",
                                                                                          *config.worker.pools)))
    redis.close()
