"""What the demo does to its surroundings: wipe its namespace, count task outcomes from Kafka, watch service logs."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer
from pydantic import ValidationError
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.kafka_admin import admin_client, delete_topics
from cbt.adapters.spark import quote_identifier as q
from cbt.base.errors import InfraError
from cbt.config.settings import Config
from cbt.contract.messages import IntervalCompleted, TaskFailed, decode
from cbt.contract.topics import DEFAULT_POOL, Topics
from cbt.dev.demo_view import TaskCounts
from cbt.dev.process import wait_until

TOPIC_GONE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Namespace:
    """Everything one demo owns: its databases (sources, targets, admin), Redis key prefix and topic prefix."""

    databases: tuple[str, ...]
    key_prefix: str
    topic_prefix: str

    @classmethod
    def from_config(cls, config: Config) -> Namespace:
        admin = config.admin
        names = (config.models.external.default_database, config.models.transformations.default_database,
                 *(table.database for table in admin.tables()))
        return cls(tuple(dict.fromkeys(n for n in names if n)), config.redis.key_prefix, config.kafka.topic_prefix)

    def topics(self, config: Config) -> tuple[str, ...]:
        return Topics(self.topic_prefix).all((DEFAULT_POOL, *config.worker.pools))


def clear(ns: Namespace, spark: SparkSession, config: Config) -> str:
    """Drop the namespace's databases, Redis keys and topics (the services must be stopped); says what went."""
    for database in ns.databases:
        spark.sql(f"DROP DATABASE IF EXISTS {q(database)} CASCADE")
    for folder in leftover_folders(ns, config.warehouse()):
        shutil.rmtree(folder)
    redis = Redis.from_url(config.redis.url)
    try:
        keys = list(redis.scan_iter(match=_glob_escape(ns.key_prefix) + "*", count=1000))
        for i in range(0, len(keys), 1000):
            redis.delete(*keys[i:i + 1000])
    finally:
        redis.close()
    topics = ns.topics(config)
    bootstrap = config.kafka.bootstrap_servers
    delete_topics(bootstrap, topics)
    admin = admin_client(bootstrap, dict(config.kafka.client))
    if not wait_until(lambda: not set(topics) & set(admin.list_topics(timeout=10).topics), TOPIC_GONE_TIMEOUT_S, 0.5):
        raise InfraError(f"Kafka did not finish deleting the topics {', '.join(topics)} within "
                         f"{TOPIC_GONE_TIMEOUT_S:.0f}s; try again, or run with --no-reset")
    return (f"dropped databases {', '.join(ns.databases)}; deleted {len(keys)} Redis keys under "
            f"{ns.key_prefix!r} and the topics {ns.topic_prefix}*")


def leftover_folders(ns: Namespace, warehouse: str | None) -> list[Path]:
    """The namespace's database folders still in a local warehouse once its databases are dropped: admin tables
    created as files whose registration in the catalog had not happened yet (``cbt.adapters.delta_admin``)."""
    if warehouse is None or "://" in warehouse:
        return []
    return [folder for database in ns.databases if (folder := Path(warehouse) / f"{database}.db").is_dir()]


def drain_counts(consumer: Consumer, counts: TaskCounts, since_ms: int) -> None:
    """Count every completion and final failure waiting on the consumer that happened at or after ``since_ms``."""
    while True:
        batch = consumer.consume(num_messages=500, timeout=0.05)
        for message in batch:
            if message.error() is not None or message.value() is None:
                continue
            try:
                decoded = decode(message.value())
            except ValidationError:
                continue
            if isinstance(decoded, IntervalCompleted | TaskFailed) and _happened_ms(decoded) >= since_ms:
                counts.add(decoded)
        if len(batch) < 500:
            return


def _happened_ms(message: IntervalCompleted | TaskFailed) -> int:
    return message.completed_at_ms if isinstance(message, IntervalCompleted) else message.failed_at_ms


@dataclass
class LogWatch:
    """Reads what the service logs gained since the last look; remembers error counts and the last error line."""

    log_dir: Path
    offsets: dict[Path, int] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    last: dict[str, str] = field(default_factory=dict)

    def poll(self) -> list[str]:
        """One line per log with errors so far: how many, and the newest."""
        for path in sorted(self.log_dir.glob("*.log")):
            with path.open("rb") as f:
                f.seek(self.offsets.get(path, 0))
                chunk = f.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self.offsets[path] = self.offsets.get(path, 0) + len(complete)
            for line in complete.decode(errors="replace").splitlines():
                if _is_error(line):
                    self.errors[path.name] += 1
                    self.last[path.name] = line.strip()[:160]
        return [f"{name}: {n} error line(s), last: {self.last[name]}" for name, n in sorted(self.errors.items())]


def _is_error(line: str) -> bool:
    words = line.split(maxsplit=2)
    return len(words) > 1 and words[1] in ("ERROR", "CRITICAL")


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
