"""An isolated deployment of the example pipeline on the real local stack, and its oracle.

Each deployment has its own databases, topic prefix and Redis key prefix, passed to the services as
``CBT__…`` environment overrides of the project's own ``config.yaml``. The oracle runs every transformation once
over the whole range a model covers, in databases of its own, reading the same sources; the pipeline's tables
must equal the oracle's row for row.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.kafka_admin import delete_topics
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config, admin_database_overrides, load_config
from cbt.contract.topics import Topics
from cbt.dev.ddl import apply_ddl
from cbt.dev.generator import SourceTables, write_range, write_validator_entities
from cbt.dev.pipeline import ServiceProcesses
from cbt.models.dag import ModelSet
from cbt.models.loader import load_models
from cbt.models.spec import IncrementalModel, ModelId
from cbt.planning.live import LiveStateReader
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.plan import plan_model

PROJECT = Path(__file__).resolve().parents[2]
CONFIG = PROJECT / "config.yaml"
T0 = 1_700_000_400
"""Source data starts here (unix seconds; a multiple of 60 and of the 12 s slot)."""


def overrides_for(tag: str, kafka: str, redis_url: str, spark_remote: str) -> dict[str, str]:
    """Every e2e deployment also writes its spans, one file per process, beside its logs (``traces_dir``)."""
    return {
        "CBT__KAFKA__BOOTSTRAP_SERVERS": kafka, "CBT__KAFKA__TOPIC_PREFIX": f"{tag}.",
        "CBT__REDIS__URL": redis_url, "CBT__REDIS__KEY_PREFIX": f"{tag}:", "CBT__SPARK__REMOTE": spark_remote,
        "CBT__MODELS__EXTERNAL__DEFAULT_DATABASE": f"{tag}_src",
        "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": f"{tag}_out",
        **admin_database_overrides(f"{tag}_admin"),
        "CBT__WORKER__RETRY__BACKOFF_INITIAL_S": "1", "CBT__LOGGING__LEVEL": "info",
        "CBT__TELEMETRY__STATUS_INTERVAL_S": "2", "CBT__TELEMETRY__TRACES": "console",
        "CBT__TELEMETRY__TRACES_FILE": str(traces_dir(tag) / "{instance}.jsonl"),
    }


def traces_dir(tag: str) -> Path:
    return PROJECT / "var" / "e2e-logs" / tag / "traces"


@dataclass
class Deployment:
    spark: SparkSession
    redis: Redis
    overrides: dict[str, str]
    log_dir: Path
    faulty: frozenset[str] = frozenset()
    """Tables of models that hang or fail on purpose (chaos): never quiet, never in the oracle."""
    config: Config = field(init=False)
    models: ModelSet = field(init=False)
    procs: ServiceProcesses = field(init=False)
    state: RedisState = field(init=False)

    def __post_init__(self) -> None:
        self.config = load_config(CONFIG, environ={**os.environ, **self.overrides})
        self.models = load_models(self.config)
        self.procs = ServiceProcesses(CONFIG, self.overrides, self.log_dir)
        self.state = RedisState(self.redis, self.config.redis.key_prefix)

    @property
    def source_db(self) -> str:
        return self.overrides["CBT__MODELS__EXTERNAL__DEFAULT_DATABASE"]

    @property
    def output_db(self) -> str:
        return self.overrides["CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE"]

    def databases(self) -> list[str]:
        return [self.source_db, self.output_db, self.overrides["CBT__ADMIN__INCREMENTAL__DATABASE"]]

    def create_tables(self) -> None:
        apply_ddl(self.spark, PROJECT / "models" / "ddl", self.source_db, self.output_db)

    def write_sources(self, start: int, end: int, version: int = 0) -> None:
        write_range(self.spark, SourceTables(self.source_db), start, end, version)

    def write_entities(self) -> None:
        write_validator_entities(self.spark, SourceTables(self.source_db), T0)

    def start(self, *names: str) -> None:
        for name in names or ("coordinator", "worker", "bounds-cache"):
            self.procs.start(name)

    def coverage(self, model_id: ModelId) -> Coverage:
        return self.state.coverage.coverage(model_id)

    def metrics(self, key: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """One scrape of a running service's ``/metrics``: each sample's value by name and labels."""
        return self.procs.metrics(key)

    def series(self, key: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
        """One metric's samples from a running service, by labels."""
        return {labels: value for (sample, labels), value in self.metrics(key).items() if sample == name}

    def is_quiet(self, min_end: int) -> bool:
        """Nothing in flight, nothing plannable, and every source scanned up to ``min_end``."""
        externals = [m.id for m in self.models.externals if m.table in ("beacon_blocks", "raw_transactions")]
        bounds = self.state.bounds.bounds(externals)  # (the alt provider has every other slot only)
        if len(bounds) < len(externals) or any(b.max < min_end for b in bounds.values()):
            return False
        incrementals = [m.id for m in self.healthy_incrementals()]
        reader = LiveStateReader.of(self.models, self.state)
        snapshot = reader.read_snapshot(incrementals)
        if not snapshot.coverage_known or any(snapshot.in_flight.get(m) for m in incrementals):
            return False
        for model in self.healthy_incrementals():
            plan = plan_model(model, self.models.models, snapshot, concurrency=self.config.worker.model_concurrency)
            if plan.tasks:
                return False
        return True

    def healthy_incrementals(self) -> list[IncrementalModel]:
        return [m for m in self.models.incrementals
                if isinstance(m, IncrementalModel) and m.table not in self.faulty]

    def wait_quiet(self, min_end: int, timeout_s: float = 600.0, settle_s: float = 3.0) -> float:
        """Wait until the pipeline stays quiet for ``settle_s``; returns the seconds it took."""
        started = time.monotonic()
        quiet_since: float | None = None
        while time.monotonic() - started < timeout_s:
            crashed = self.procs.exited()
            assert not crashed, f"services exited: {crashed}; logs in {self.log_dir}"
            if self.is_quiet(min_end):
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= settle_s:
                    return time.monotonic() - started
            else:
                quiet_since = None
            time.sleep(0.5)
        raise AssertionError(f"the pipeline did not converge within {timeout_s:.0f}s; logs in {self.log_dir}")

    def wait_applied(self, event_id: str, timeout_s: float = 120.0) -> None:
        """Until the invalidator has applied the event (its id is marked seen)."""
        key = f"{self.config.redis.key_prefix}invalidation:{event_id}"
        deadline = time.monotonic() + timeout_s
        while not self.redis.exists(key):
            assert not self.procs.exited(), f"services exited: {self.procs.exited()}; logs in {self.log_dir}"
            assert time.monotonic() < deadline, f"invalidation {event_id} not applied; logs in {self.log_dir}"
            time.sleep(0.2)

    def stop(self) -> None:
        self.procs.stop_all()


@contextmanager
def isolated_deployment(kafka: str, redis_url: str, spark: SparkSession, spark_remote: str, tag: str,
                        overrides: Mapping[str, str] | None = None,
                        faulty: frozenset[str] = frozenset()) -> Iterator[Deployment]:
    """A deployment whose topics, Redis keys, databases and logs carry ``tag``; on the way out its processes are
    stopped and everything it made is removed (with its current Spark session: a test may have replaced it)."""
    redis = Redis.from_url(redis_url)
    dep = Deployment(spark, redis, {**overrides_for(tag, kafka, redis_url, spark_remote), **(overrides or {})},
                     PROJECT / "var" / "e2e-logs" / tag, faulty)
    try:
        yield dep
    finally:
        dep.stop()
        for database in dep.databases():
            dep.spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        keys = list(redis.scan_iter(match=f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        delete_topics(kafka, Topics(f"{tag}.").all(("default", *dep.config.worker.pools)))
        redis.close()


