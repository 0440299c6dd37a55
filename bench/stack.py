"""An isolated benchmark deployment: the e2e harness's ``Deployment`` with a chosen subset of the example models.

Each benchmark gets its own databases, topic prefix and Redis key prefix (``CBT__`` overrides of ``config.yaml``),
loads only the transformations it measures (copied into a folder of its own), and is started with no bounds so
that the bench decides when work begins: it waits for every consumer group to be assigned, then seeds the
external's bounds in Redis and publishes ``bounds-updated`` — what the bounds-cache would do.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_admin import admin_client, delete_topics
from cbt.contract.messages import BoundsUpdated
from cbt.contract.topics import Topics
from cbt.dev.layout import Layout
from cbt.scheduling.snapshot import RawBounds
from tests.e2e.harness import PROJECT, Deployment, overrides_for

TRANSFORMATIONS = PROJECT / "models" / "transformations"
LAG_S = 12
"""``lag`` of the example's ``beacon_blocks``: bounds are seeded this far past the wanted end."""


@dataclass(frozen=True)
class Endpoints:
    kafka: str
    redis_url: str
    spark_remote: str

    @classmethod
    def local(cls) -> Endpoints:
        layout = Layout.from_env()
        return cls(layout.kafka_bootstrap, layout.redis_url, layout.spark_remote)


@dataclass
class BenchDeployment:
    dep: Deployment
    tag: str
    endpoints: Endpoints
    scratch: list[str] = field(default_factory=list)
    """More databases of this deployment, dropped with it."""

    @property
    def topics(self) -> Topics:
        return Topics(self.dep.config.kafka.topic_prefix)

    @property
    def pools(self) -> tuple[str, ...]:
        return ("default", *self.dep.config.worker.pools)

    def model_id(self, table: str) -> str:
        return f"{self.dep.output_db}.{table}"

    def wait_ready(self, workers: int, timeout_s: float = 120.0) -> float:
        """Until the coordinator built its hot index and the coordinator's and the workers' consumer groups hold
        their partitions; returns the seconds."""
        config = self.dep.config
        prefix = config.kafka.topic_prefix
        expected = {f"{prefix}coordinator": 1}
        expected.update({f"{prefix}worker.{pool}": workers * config.worker.concurrency for pool in self.pools})
        admin = admin_client(self.endpoints.kafka)
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if self.dep.procs.exited():
                raise RuntimeError(f"services exited: {self.dep.procs.exited()}; logs in {self.dep.log_dir}")
            if self.dep.state.coverage.is_built() and all(_is_assigned(admin, g, n) for g, n in expected.items()):
                return time.monotonic() - started
            time.sleep(0.25)
        raise RuntimeError(f"services not ready within {timeout_s:.0f}s; logs in {self.dep.log_dir}")

    def seed_bounds(self, start: int, end: int) -> tuple[str, RawBounds]:
        """Store ``beacon_blocks`` bounds such that ``[start, end)`` is available (after its lag)."""
        model = f"{self.dep.source_db}.beacon_blocks"
        raw = RawBounds(min=start, max=end + LAG_S)
        self.dep.state.bounds.put_bounds(model, raw)
        return model, raw

    def release_bounds(self, start: int, end: int) -> int:
        """Make ``[start, end)`` of ``beacon_blocks`` available and tell the coordinator; returns the time (ms)."""
        model, raw = self.seed_bounds(start, end)
        producer = Producer({"bootstrap.servers": self.endpoints.kafka, "linger.ms": 0})
        message = BoundsUpdated(model=model, min=raw.min, max=raw.max)
        producer.produce(self.topics.bounds_updated, message.encode(), key=model.encode())
        producer.flush(10)
        return message.scanned_at_ms

    def teardown(self) -> None:
        dep = self.dep
        dep.stop()
        for database in [*dep.databases(), *self.scratch]:
            dep.spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        keys = list(dep.redis.scan_iter(match=f"{self.tag}:*"))
        if keys:
            dep.redis.delete(*keys)
        delete_topics(self.endpoints.kafka, self.topics.all(self.pools))


def deploy(spark: SparkSession, endpoints: Endpoints, name: str, tables: Sequence[str],
           extra: Mapping[str, str] | None = None, model_files: Mapping[str, str] | None = None) -> BenchDeployment:
    """A fresh deployment (tables created, services not started) loading only the given transformations of the
    example, and ``model_files`` (file name → text) of the benchmark's own."""
    tag = f"bn{name}{uuid.uuid4().hex[:6]}"
    folder = PROJECT / "var" / "bench" / tag / "transformations"
    folder.mkdir(parents=True)
    for table in tables:
        shutil.copyfile(TRANSFORMATIONS / f"{table}.sql", folder / f"{table}.sql")
    for file_name, text in (model_files or {}).items():
        (folder / file_name).write_text(text)
    overrides = overrides_for(tag, endpoints.kafka, endpoints.redis_url, endpoints.spark_remote)
    overrides["CBT__MODELS__TRANSFORMATIONS__PATHS"] = f"[{folder}]"
    overrides.update(extra or {})
    dep = Deployment(spark, Redis.from_url(endpoints.redis_url), overrides, PROJECT / "var" / "bench" / tag / "logs")
    dep.create_tables()
    # Created up front: services starting together on a fresh admin database race on CREATE TABLE.
    admin_from_config(spark, dep.config).ensure_tables()
    # The admin tables are empty, so the hot index is too: say so, sparing the coordinator's rebuild read.
    dep.state.coverage.mark_built(int(time.time()), dep.state.coverage.generation())
    return BenchDeployment(dep, tag, endpoints)


def _is_assigned(admin: AdminClient, group: str, members: int) -> bool:
    try:
        description = admin.describe_consumer_groups([group])[group].result(timeout=5)
    except Exception:  # the group does not exist yet
        return False
    if str(description.state).rsplit(".", 1)[-1].upper() != "STABLE" or len(description.members) < members:
        return False
    return all(m.assignment is not None for m in description.members)
