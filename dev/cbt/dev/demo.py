"""``make demo``: the example pipeline live on the local stack, until Ctrl-C (or ``--duration S``).

Starts Kafka, Redis and Spark Connect (``cbt dev up``), by default wipes the previous demo's tables, Redis keys and
topics so every run looks the same (``--no-reset`` keeps them), creates the tables, writes a backlog of source rows
and starts every service as its own process (logs in ``var/demo-logs/``). A generator then keeps writing new slots
in real time, with late older history and a stalled feed whose rows arrive late (``cbt.dev.feed``), while a view
refreshed every few seconds shows each model's valid range, coverage, gaps, tasks in flight and lag catching up.
On exit the services stop; the stack stays up (``cbt dev down`` stops it).

``--tag NAME`` runs the demo in a namespace of its own (topic prefix, Redis key prefix, databases) through
``CBT__…`` overrides, so a test can run it next to a real demo.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.adapters.kafka_admin import ensure_topics
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import connect
from cbt.base.errors import CbtError
from cbt.config.settings import Config, admin_database_overrides, load_config
from cbt.contract.topics import Topics
from cbt.dev import stack
from cbt.dev.ddl import apply_ddl
from cbt.dev.demo_ops import LogWatch, Namespace, clear, drain_counts
from cbt.dev.demo_view import Frame, TaskCounts, glance, render, span_text, summary
from cbt.dev.feed import LiveFeed, Write
from cbt.dev.generator import (
    SLOT_S,
    SourceTables,
    write_blocks,
    write_transactions,
    write_validator_entities,
)
from cbt.dev.layout import Layout, project_dir
from cbt.dev.pipeline import ServiceProcesses, free_port, is_free
from cbt.models.dag import ModelSet
from cbt.models.loader import load_models
from cbt.planning.live import LiveStateReader
from cbt.scheduling.status import model_status

SERVICES = ("bounds-cache", "coordinator", "worker", "invalidator", "api")
FEED_STEP_S = 4.0
TAG = re.compile(r"[a-z][a-z0-9_]{0,30}")


@dataclass(frozen=True)
class Options:
    config_path: Path
    duration_s: float | None
    is_reset: bool
    tag: str | None
    backlog_s: int
    refresh_s: float
    use_stack: bool


def parse_options(argv: Sequence[str] | None) -> Options:
    p = argparse.ArgumentParser(prog="python -m cbt.dev.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=None, metavar="S", help="stop after S seconds (default: Ctrl-C)")
    p.add_argument("--no-reset", dest="is_reset", action="store_false",
                   help="keep the previous demo's tables, coverage and topics (default: start from a clean slate)")
    p.add_argument("--tag", default=None, help="own namespace: topic prefix TAG., key prefix TAG:, databases TAG_*")
    p.add_argument("--backlog", type=int, default=900, metavar="S", help="seconds of source rows before start")
    p.add_argument("--refresh", type=float, default=2.0, metavar="S", help="seconds between view refreshes")
    p.add_argument("--no-stack", dest="use_stack", action="store_false",
                   help="do not run `cbt dev up`: use the endpoints in the config (and CBT__… overrides)")
    p.add_argument("--config", type=Path, default=project_dir() / "config.yaml", metavar="FILE")
    a = p.parse_args(argv)
    if a.tag is not None and not TAG.fullmatch(a.tag):
        p.error(f"--tag: expected lower-case letters, digits and _ (a database name prefix), got {a.tag!r}")
    return Options(a.config.resolve(), a.duration, a.is_reset, a.tag, a.backlog, a.refresh, a.use_stack)


def namespace_overrides(tag: str) -> dict[str, str]:
    """``CBT__…`` overrides that move the whole demo into its own topics, Redis keys and databases."""
    return {
        "CBT__KAFKA__TOPIC_PREFIX": f"{tag}.", "CBT__REDIS__KEY_PREFIX": f"{tag}:",
        "CBT__MODELS__EXTERNAL__DEFAULT_DATABASE": f"{tag}_src",
        "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": f"{tag}_out",
        **admin_database_overrides(f"{tag}_admin"),
    }


def api_override(config: Config) -> dict[str, str]:
    """The api on its configured address (127.0.0.1:8080) when that port is free, else on a free one (another demo
    or program has it)."""
    host, _, port = config.api.addr.rpartition(":")
    if is_free(int(port)):
        return {}
    return {"CBT__API__ADDR": f"{host or '127.0.0.1'}:{free_port()}"}


def stack_overrides(layout: Layout) -> dict[str, str]:
    """The local stack's endpoints (its ports can be moved), unless the environment already names others."""
    endpoints = {"CBT__KAFKA__BOOTSTRAP_SERVERS": layout.kafka_bootstrap, "CBT__REDIS__URL": layout.redis_url,
                 "CBT__SPARK__REMOTE": layout.spark_remote}
    return {k: v for k, v in endpoints.items() if k not in os.environ}


class EventLog:
    """Timestamped lines from the generator thread, read by the view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[str] = []

    def add(self, text: str) -> None:
        with self._lock:
            self._lines.append(f"{time.strftime('%H:%M:%S', time.gmtime())} {text}")

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)


def write_source(spark: SparkSession, src: SourceTables, write: Write, config: Config | None = None) -> None:
    """Write the feed's rows; a broken clock's row (``poison``) or its repair, which ``config``'s Kafka hears of as
    an invalidation of the slot (what a chain follower that rewrote a range publishes)."""
    if write.purpose == "poison":
        write_blocks(spark, src, write.start, write.end, broken_clock_at=write.end - SLOT_S)
        return
    writer = write_blocks if write.feed == "blocks" else write_transactions
    writer(spark, src, write.start, write.end)
    if write.purpose == "repair" and config is not None:
        publish_invalidation(config.kafka.bootstrap_servers, "beacon_blocks", write.start, write.end,
                             reason="repaired a broken clock's block", source="demo-generator",
                             id=f"demo-repair:{write.start}", topic_prefix=config.kafka.topic_prefix)


def written_until(spark: SparkSession, src: SourceTables) -> int | None:
    """The first slot time a previous run left unwritten in every time-positioned source (None when empty)."""
    ends = [spark.sql(f"SELECT unix_seconds(max({column})) + 1 AS e FROM {src.table(table)}").collect()[0]["e"]
            for table, column in (("beacon_blocks", "slot_start_date_time"), ("raw_transactions", "block_timestamp"))]
    return None if None in ends else min(int(e) for e in ends)


class FeedThread(threading.Thread):
    """Writes what the feed plans every ``FEED_STEP_S`` seconds; a failed write is planned again next step."""

    def __init__(self, spark: SparkSession, src: SourceTables, feed: LiveFeed, events: EventLog,
                 config: Config | None = None) -> None:
        super().__init__(name="demo-feed", daemon=True)
        self.spark, self.src, self.feed, self.events, self.config = spark, src, feed, events, config
        self.stopping = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopping.wait(FEED_STEP_S):
            elapsed_s = time.monotonic() - started
            writes, events = self.feed.plan(int(time.time()), elapsed_s)
            for event in events:
                self.events.add(event)
            for write in writes:
                if not self.apply(write, elapsed_s):
                    break

    def apply(self, write: Write, elapsed_s: float = 0.0) -> bool:
        try:
            write_source(self.spark, self.src, write, self.config)
        except Exception as e:  # Spark Connect raises many types; say it and try again next step
            self.events.add(f"generator: writing {write.feed} {span_text((write.start, write.end))} failed "
                            f"({str(e).splitlines()[0][:120]}); retrying")
            return False
        self.feed.record(write, elapsed_s)
        if write.note:
            self.events.add(f"{write.note} {span_text((write.start, write.end))}")
        return True


@dataclass
class Demo:
    """One demo run: the services, the generator thread and what the view reads."""

    options: Options
    config: Config
    models: ModelSet
    spark: SparkSession
    procs: ServiceProcesses
    events: EventLog = field(default_factory=EventLog)
    feed: LiveFeed = field(init=False)
    services: str = ""
    started_at: float = 0.0
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def __post_init__(self) -> None:
        self.feed = LiveFeed(self.options.backlog_s)

    @property
    def sources(self) -> SourceTables:
        return SourceTables(self.config.models.external.default_database or "")

    def prepare(self) -> None:
        """Reset (unless --no-reset), create the tables and topics, write entities and the backlog."""
        ns = Namespace.from_config(self.config)
        where = f" (tag {self.options.tag})" if self.options.tag else ""
        if self.options.is_reset:
            print(f"resetting the demo{where} so every run starts the same (--no-reset keeps the previous state):")
            print("  " + clear(ns, self.spark, self.config))
        else:
            print(f"--no-reset: continuing with the previous demo's tables, coverage and topics{where}")
        apply_ddl(self.spark, self.config.base_dir / "models" / "ddl", self.sources.database,
                  self.config.models.transformations.default_database or "")
        ensure_topics(self.config.kafka.bootstrap_servers, ns.topics(self.config), extra=dict(self.config.kafka.client))
        write_validator_entities(self.spark, self.sources, int(time.time()))
        resume_at = None if self.options.is_reset else written_until(self.spark, self.sources)
        for write in self.feed.begin(int(time.time()), resume_at):
            write_source(self.spark, self.sources, write)
            self.feed.record(write)
            if write.note:
                self.events.add(f"{write.note} {span_text((write.start, write.end))}")

    def start_services(self) -> None:
        for name in SERVICES:
            self.procs.start(name)
        self.started_at = time.monotonic()
        self.services = ", ".join(SERVICES) + f"   logs: {self.procs.log_dir}/"
        print(f"Prometheus metrics: {self.metrics_urls()}")
        print(f"Web UI: {self.api_url()}/   API docs: {self.api_url()}/docs   (changes need a token: api.auth.tokens)")

    def api_url(self) -> str:
        host, _, port = self.config.api.addr.rpartition(":")
        return f"http://{host or '127.0.0.1'}:{port}"

    def metrics_urls(self) -> str:
        ports = ", ".join(f"{name} {self.procs.metrics_ports[name]}" for name in SERVICES)
        return f"http://127.0.0.1:<port>/metrics on ports {ports}"

    def metrics_glance(self) -> str:
        try:
            return glance(self.procs.metrics("coordinator"), self.procs.metrics("worker"))
        except OSError:  # a service starting or stopped
            return "(metrics not answering yet)"

    def frame(self, reader: LiveStateReader, counts: TaskCounts, logs: LogWatch) -> Frame:
        """What the view shows now: every incremental model's status (dependencies first) and the counters."""
        snapshot = reader.read_snapshot([m.id for m in self.models.incrementals])
        order = {m: i for i, m in enumerate(self.models.topological_order())}
        incrementals = sorted(self.models.incrementals, key=lambda m: order[m.id])
        exited = [f"{k} EXITED with code {c}" for k, c in self.procs.exited().items()]
        now = int(time.time())
        lows = [b.min for b in snapshot.bounds.values()] + ([self.feed.oldest] if self.feed.oldest is not None else [])
        return Frame(
            now=now, elapsed_s=time.monotonic() - self.started_at, window=(min(lows), now) if lows else None,
            statuses=[model_status(m, self.models.models, snapshot) for m in incrementals],
            scheduled=[m.id for m in self.models.scheduled], counts=counts, services=self.services,
            events=self.events.lines(), problems=[*exited, *logs.poll()],
            metrics=f"{self.metrics_glance()}\n         {self.metrics_urls()}",
            held=reader.holds.held([m.id for m in incrementals]) if reader.holds is not None else {},
        )


def run_view(demo: Demo) -> Frame:
    """Refresh until the duration ends or Ctrl-C; returns the last frame."""
    config = demo.config
    redis = Redis.from_url(config.redis.url)
    state = RedisState(redis, config.redis.key_prefix)
    reader = LiveStateReader.of(demo.models, state)
    consumer = completions_consumer(config)
    counts, logs = TaskCounts(), LogWatch(demo.procs.log_dir or Path("."))
    is_tty = sys.stdout.isatty()
    try:
        while True:
            drain_counts(consumer, counts, demo.started_ms)
            frame = demo.frame(reader, counts, logs)
            _show(frame, is_tty)
            if demo.options.duration_s is not None and frame.elapsed_s >= demo.options.duration_s:
                return frame
            time.sleep(demo.options.refresh_s)
    except KeyboardInterrupt:
        print("\nCtrl-C: stopping")
        return demo.frame(reader, counts, logs)
    finally:
        consumer.close()
        redis.close()


def completions_consumer(config: Config) -> Consumer:
    """Reads completions and final failures; a group of its own, never committed (it only counts)."""
    consumer = Consumer({"bootstrap.servers": config.kafka.bootstrap_servers, **dict(config.kafka.client),
                         "group.id": f"{config.kafka.topic_prefix}demo-view-{os.getpid()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})
    topics = Topics(config.kafka.topic_prefix)
    consumer.subscribe([topics.interval_completed, topics.task_failed])
    return consumer


def _show(frame: Frame, is_tty: bool) -> None:
    if is_tty:
        width = shutil.get_terminal_size((120, 40)).columns
        print("\x1b[H\x1b[2J" + render(frame, bar_width=max(20, width - 36)), flush=True)
    else:
        print(render(frame, bar_width=60) + "\n" + "-" * 100, flush=True)


def stop_like_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (``kill``, a supervisor, a background job whose SIGINT the shell ignores) stops the demo the way Ctrl-C
    does: the feed, then the services it started — not the demo alone, leaving them running."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    opts = parse_options(argv)
    overrides: dict[str, str] = {}
    if opts.use_stack:
        for line in stack.up():
            print(line.line())
        overrides.update(stack_overrides(Layout.from_env()))
    if opts.tag:
        overrides.update(namespace_overrides(opts.tag))
    # (its one worker is named, as one compose service per worker would be: a restart with changed files — the
    # way a model change is deployed — takes its partitions back at once, without waiting for a rebalance)
    if "CBT__WORKER__INSTANCE_ID" not in os.environ:
        overrides["CBT__WORKER__INSTANCE_ID"] = "demo-worker"
    config = load_config(opts.config_path, environ={**os.environ, **overrides})
    overrides.update(api_override(config))
    config = load_config(opts.config_path, environ={**os.environ, **overrides})
    if not config.spark.remote:
        raise CbtError("the demo needs spark.remote (a Spark Connect URL) in the config")
    log_dir = project_dir() / "var" / "demo-logs" / (opts.tag or "")
    for old in log_dir.glob("*.log"):
        old.unlink()
    spark = connect(config.spark.remote)
    demo = Demo(opts, config, load_models(config), spark, ServiceProcesses(
        opts.config_path, overrides, log_dir, metrics_base_port=int(config.metrics_addr.rpartition(":")[2])))
    feed = FeedThread(spark, demo.sources, demo.feed, demo.events, demo.config)
    try:
        demo.prepare()
        demo.start_services()
        feed.start()
        frame = run_view(demo)
    finally:
        feed.stopping.set()
        if feed.is_alive():
            feed.join(timeout=60)
        crashed = demo.procs.exited()
        demo.procs.stop_all()
        spark.stop()
    print("\n" + summary(frame))
    print(f"services stopped (logs in {log_dir}/). The local stack is still up: `cbt dev down` (or `make down`) "
          "stops it.\nThe tables stay in the demo's databases; `--no-reset` continues where this run left off.")
    return 1 if crashed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CbtError as e:
        print(f"cbt demo: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
