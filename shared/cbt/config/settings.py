"""``config.yaml``: one file for every service (docs/design/index.md#configuration).

Every key has a default, so an empty file is a working local setup. Keys are documented in snake_case; the original
CBT's camelCase spellings (``defaultDatabase``, ``metricsAddr``…) are accepted as aliases. Unknown keys are errors
naming the key and its line. ``${VAR}`` / ``${VAR:-default}`` are expanded inside values and ``CBT__SECTION__KEY``
variables set any key. Relative model paths are resolved against the config file's folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from cbt.base.cron import parse_duration_s, parse_schedule
from cbt.base.errors import ConfigError, Problem
from cbt.base.problems import pydantic_problems
from cbt.base.reserved_env import reserved_env_problem
from cbt.base.yamldoc import SourceMap, parse_yaml
from cbt.config import cbt_compat
from cbt.config.env import apply_env_overrides, expand_references
from cbt.config.interval_types import Transformation

DEFAULT_CONFIG_FILE = "config.yaml"
CONFIG_ENV_VAR = "CBT_CONFIG"
_POOL_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LEVEL_ALIASES = {"warn": "warning", "trace": "debug", "fatal": "critical", "panic": "critical"}


class ConfigProblems(ConfigError):
    """Every problem found in the configuration, printed one per line as ``path:line: field: problem``."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.path, p.line, p.field, p.message))
        super().__init__("\n".join(str(p) for p in self.problems))


def _duration(value: Any) -> Any:
    return parse_duration_s(value) if isinstance(value, str | int) and not isinstance(value, bool) else value


def _schedule(value: str) -> str:
    parse_schedule(value)
    return value


def _schedule_or_off(value: str) -> str:
    """A schedule, or ``""`` (CBT's way to turn it off)."""
    return value if value == "" else _schedule(value)


def _env_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else value


DurationS = Annotated[int, BeforeValidator(_duration), Field(ge=0)]
"""Seconds; accepts ``30``, ``"30s"``, ``"5m"``, ``"1h30m"``."""
EnvValue = Annotated[str, BeforeValidator(_env_value)]


class Section(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )


class LoggingConfig(Section):
    level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    format: Literal["json", "console"] = "console"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """``logging: info`` (the original's form) means ``logging: {level: info}``."""
        return {"level": data} if isinstance(data, str) else data

    @field_validator("level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        return _LEVEL_ALIASES.get(value.lower(), value.lower()) if isinstance(value, str) else value


class KafkaConfig(Section):
    bootstrap_servers: str = "127.0.0.1:9092"
    topic_prefix: str = "cbt."
    client: dict[str, str | int | float | bool] = {}
    """Passed to the Kafka client as-is (``security.protocol``, ``sasl.mechanism``…)."""
    task_topic_partitions: int = Field(default=8, ge=1)
    """Partitions of each task topic the services create when missing: the most worker consumers of one pool that
    get work (more consumers than partitions sit idle). The other topics get one partition each."""
    replication_factor: int = Field(default=1, ge=1)
    """Replication factor of the topics the services create when missing: 1 fits a single broker; use 3 on a
    production cluster. Topics that already exist are left as they are."""
    max_handling_attempts: int = Field(default=5, ge=1)
    """A consumed message whose handling fails this many times, for a reason other than the infrastructure's, is set
    aside to the rejected topic with the reason, so the messages after it are handled (``cbt.service.poison``)."""
    max_ambiguous_s: int = Field(default=600, ge=1)
    """How long errors that may or may not be the infrastructure's (a bare Spark Connect error, a Spark job aborted)
    may hold one consumed message, retried with backoff, before it is set aside with the reason: a deterministic
    error in disguise cannot stall its partition for good. Connection failures are retried as long as they last."""


class RedisConfig(Section):
    url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = "cbt:"

    @property
    def shown_url(self) -> str:
        """``url`` for messages and logs: its password as ``***``."""
        return re.sub(r"(://[^:/?#@\s]*:)[^@/\s]+@", r"\g<1>***@", self.url)


class SparkConfig(Section):
    remote: str | None = "sc://127.0.0.1:15002"
    """Spark Connect URL. Unset when ``master`` is given (embedded session for tests and small installs)."""
    master: str | None = None
    conf: dict[str, EnvValue] = {}
    query_timeout_s: DurationS = Field(default=600, validation_alias=AliasChoices("query_timeout", "queryTimeout"))
    max_concurrent_statements: Annotated[int, Field(ge=1)] | Literal["auto", "off"] = "auto"
    """Admission control: at most this many statements executing on the cluster at once, counted over every
    process that shares this Redis and names the cluster by the same ``remote`` host and port (workers' tasks, the
    admin record's reads and writes); the rest wait, the admin record first, then forward fill and scheduled runs,
    then re-runs, then backfill. ``auto`` (or 0): half the cluster's default parallelism, at least 1
    (``cbt.scheduling.admission.auto_limit``), measured by each process on first use; ``off``: no limit."""

    @field_validator("max_concurrent_statements", mode="before")
    @classmethod
    def _zero_is_auto(cls, value: Any) -> Any:
        if value is False:  # YAML 1.1 reads an unquoted off as false
            return "off"
        if value is True:
            raise ValueError("expected a number of statements, auto or off, got true")
        return "auto" if value in (0, "0") else value

    warehouse: str | None = None
    """Where the catalog keeps managed tables (the server's ``spark.sql.warehouse.dir``): a folder, relative to the
    config file's, or a URI (``s3://…``); a table's files are ``<warehouse>/<database>.db/<table>``. Set, the services
    read and write the admin tables' files themselves with delta-rs — bookkeeping takes no Spark statement and never
    queues behind the jobs (Spark only creates a missing table). Unset: every admin read and write goes through Spark,
    under admission control (also when empty: ``CBT__SPARK__WAREHOUSE=""`` turns it off)."""
    storage_options: dict[str, EnvValue] = {}
    """Passed to delta-rs as-is with ``warehouse``: object-store credentials and endpoints, and the locking or
    conditional-put settings an object store needs for concurrent commits."""

    @model_validator(mode="before")
    @classmethod
    def _remote_or_master(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("master") and "remote" not in data:
            return {**data, "remote": None}
        if isinstance(data, dict) and data.get("master") and data.get("remote"):
            raise ValueError("set either spark.remote (Spark Connect) or spark.master (embedded), not both")
        return data

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("sc://"):
            raise ValueError(f"expected a Spark Connect URL such as sc://host:15002, got {value!r}")
        return value


class TableRef(Section):
    database: str
    table: str

    @property
    def id(self) -> str:
        return f"{self.database}.{self.table}"


_ADMIN_DEFAULTS = {
    "incremental": {"database": "admin", "table": "cbt_incremental"},
    "scheduled": {"database": "admin", "table": "cbt_scheduled"},
    "invalidations": {"database": "admin", "table": "cbt_invalidations"},
    "failures": {"database": "admin", "table": "cbt_failures"},
    "retries": {"database": "admin", "table": "cbt_retries"},
}


class AdminConfig(Section):
    """Admin tables (created by the tool when missing); setting only ``database`` keeps the default table name."""

    incremental: TableRef = TableRef.model_validate(_ADMIN_DEFAULTS["incremental"])
    scheduled: TableRef = TableRef.model_validate(_ADMIN_DEFAULTS["scheduled"])
    invalidations: TableRef = TableRef.model_validate(_ADMIN_DEFAULTS["invalidations"])
    failures: TableRef = TableRef.model_validate(_ADMIN_DEFAULTS["failures"])
    retries: TableRef = TableRef.model_validate(_ADMIN_DEFAULTS["retries"])
    def tables(self) -> tuple[TableRef, ...]:
        return tuple(getattr(self, name) for name in _ADMIN_DEFAULTS)

    @model_validator(mode="before")
    @classmethod
    def _partial(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            k: {**_ADMIN_DEFAULTS[k], **v} if k in _ADMIN_DEFAULTS and isinstance(v, dict) else v
            for k, v in data.items()
        }


def warehouse_location(warehouse: str, base_dir: Path) -> str:
    """A warehouse setting as delta-rs takes it: a URI as written, a folder made absolute against ``base_dir``."""
    if "://" in warehouse:
        return warehouse.rstrip("/")
    path = Path(warehouse)
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def admin_database_overrides(database: str) -> dict[str, str]:
    """Environment overrides (``CBT__ADMIN__<TABLE>__DATABASE``) that put every admin table in ``database``."""
    return {f"CBT__ADMIN__{name.upper()}__DATABASE": database for name in _ADMIN_DEFAULTS}


class BatchConfig(Section):
    """Batched runs of a backlog (docs/design/scheduling.md#batched-runs): a model's batch size is the most intervals
    whose measured run time fits ``job_budget``, at most ``max_intervals`` (a model's ``batch.max_intervals`` caps it
    further)."""

    max_intervals: int = Field(default=1024, gt=0)
    job_budget_s: DurationS = Field(default=60, gt=0)
    first_intervals: int = Field(default=16, gt=0)
    """A ``union`` model's batch size before any of its runs was measured (a ``bounds`` model starts at the cap)."""


class SchedulerConfig(Section):
    tick_s: DurationS = Field(default=1, gt=0)
    consolidation: Annotated[str, BeforeValidator(_schedule_or_off)] = "@every 10m"
    """When the admin rows are consolidated; ``""`` turns consolidation off (as in CBT)."""
    leader_lease_ttl_s: DurationS = Field(default=15, gt=0)
    leader_lease_renew_s: DurationS = Field(default=5, gt=0)
    batch: BatchConfig = BatchConfig()

    @model_validator(mode="after")
    def _renew_before_expiry(self) -> SchedulerConfig:
        if self.leader_lease_renew_s >= self.leader_lease_ttl_s:
            raise ValueError("leader_lease_renew_s must be shorter than leader_lease_ttl_s")
        return self


class PoolConfig(Section):
    """A tag selector: a model goes to the first pool whose selector matches (``any`` or ``all`` of ``tags``)."""

    tags: list[str] = Field(min_length=1)
    match: Literal["any", "all"] = "any"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"tags": data} if isinstance(data, list) else data

    def selects(self, tags: Sequence[str]) -> bool:
        wanted = set(self.tags)
        return wanted <= set(tags) if self.match == "all" else bool(wanted & set(tags))


class RetryConfig(Section):
    max_attempts: int = Field(default=3, ge=1)
    backoff_initial_s: DurationS = 1
    backoff_max_s: DurationS = 60
    backoff_multiplier: float = Field(default=2.0, ge=1.0)


class WorkerConfig(Section):
    pools: dict[str, PoolConfig] = {}
    consume: list[str] = []
    """Pools this worker consumes; empty means every pool (``default`` included)."""
    concurrency: int = Field(default=4, ge=1)
    model_concurrency: int = Field(default=4, ge=1)
    """At most this many tasks of one model in flight at once (also caps how many intervals one tick enqueues)."""
    retry: RetryConfig = RetryConfig()
    task_timeout_s: DurationS = Field(default=3600, gt=0, validation_alias=AliasChoices("task_timeout", "taskTimeout"))
    shutdown_timeout_s: DurationS = Field(
        default=30, validation_alias=AliasChoices("shutdown_timeout", "shutdownTimeout")
    )
    instance_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,200}$",
                                    validation_alias=AliasChoices("instance_id", "instanceId"))
    """A name this worker keeps across restarts (a StatefulSet pod's, a compose service's) and no other running
    worker has: its consumers join their groups as static members (Kafka's ``group.instance.id``), so a restarted
    worker takes its partitions back at once (0.06 s here, where a dynamic member's join took 1.06 s) — a
    deployment's first tasks start that much sooner, if it is back within its session timeout (45 s). The cost: a
    worker stopped for good keeps its partitions that long instead of handing them over as it stops. Two running
    workers with one name fence each other. Not set: dynamic membership."""

    @field_validator("pools")
    @classmethod
    def _pool_names(cls, pools: dict[str, PoolConfig]) -> dict[str, PoolConfig]:
        for name in pools:
            if name == "default":
                raise ValueError("'default' is the fallback pool for models no selector matches; rename it")
            if not _POOL_NAME.fullmatch(name):
                raise ValueError(f"pool name {name!r} must be lower-case letters, digits, '_' or '-'")
        return pools

    @model_validator(mode="after")
    def _known_consumed_pools(self) -> WorkerConfig:
        unknown = sorted(set(self.consume) - set(self.pools) - {"default"})
        if unknown:
            raise ValueError(f"consume names undefined pools: {', '.join(unknown)}")
        return self

    def pool_for(self, tags: Sequence[str]) -> str:
        """The first pool (in config order) whose selector matches ``tags``, else ``default``."""
        return next((name for name, pool in self.pools.items() if pool.selects(tags)), "default")


class ModelPaths(Section):
    paths: list[str] = Field(min_length=1)
    default_database: str | None = None


_P = TypeVar("_P", bound=ModelPaths)


class ExternalPaths(ModelPaths):
    paths: list[str] = Field(default_factory=lambda: ["models/external"], min_length=1)


class TransformationPaths(ModelPaths):
    paths: list[str] = Field(default_factory=lambda: ["models/transformations"], min_length=1)


class OverrideInterval(Section):
    max: int | None = None
    min: int | None = None


class OverrideSchedules(Section):
    forwardfill: str | None = None
    backfill: str | None = None


class OverrideLimits(Section):
    min: int | None = None
    max: int | None = None


class OverrideCache(Section):
    incremental_scan_interval: str | int | None = None
    full_scan_interval: str | int | None = None


class OverrideFields(Section):
    """What an override may change; checked against the model's own rules when applied
    (docs/design/models.md#overrides)."""

    interval: OverrideInterval | None = None
    schedules: OverrideSchedules | None = None
    limits: OverrideLimits | None = None
    schedule: str | None = None
    tags: list[str] | None = None
    lag: int | None = None
    cache: OverrideCache | None = None


class Override(Section):
    enabled: bool = True
    config: OverrideFields | None = None


class ModelsConfig(Section):
    external: ExternalPaths = ExternalPaths()
    transformations: TransformationPaths = TransformationPaths()
    env: dict[str, EnvValue] = {}
    overrides: dict[str, Override] = {}

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"env name {name!r} must match [A-Za-z_][A-Za-z0-9_]*")
            reserved = reserved_env_problem(name)
            if reserved:
                raise ValueError(reserved)
        return env


MIN_TOKEN_LENGTH = 32
"""A bearer token shorter than this is refused at start: it could be guessed (``openssl rand -hex 32`` makes one)."""


class ApiAuth(Section):
    tokens: list[str] = []
    """Bearer tokens accepted on mutating endpoints (and for reading), each at least 32 characters; empty means
    mutating endpoints are refused."""
    read_tokens: list[str] = []
    """Bearer tokens that may read but not change, each at least 32 characters. When any is set, every read (the
    REST API, its event stream, the UI's pages, ``/docs``) needs a read or write token; empty means reads are open."""
    session_max_age_s: DurationS = Field(default=12 * 3600, gt=0)
    """How long a browser's sign-in (the login form's session cookie) lasts; signing out ends it on every replica."""

    @field_validator("tokens", "read_tokens")
    @classmethod
    def _hard_to_guess(cls, tokens: list[str]) -> list[str]:
        for token in tokens:
            if len(token) < MIN_TOKEN_LENGTH:
                raise ValueError(f"a token of {len(token)} characters is too easy to guess; use at least "
                                 f"{MIN_TOKEN_LENGTH} (e.g. openssl rand -hex 32)")
        return tokens

    @model_validator(mode="before")
    @classmethod
    def _single_token(cls, data: Any) -> Any:
        if isinstance(data, dict) and "token" in data:
            rest = {k: v for k, v in data.items() if k != "token"}
            return {**rest, "tokens": [data["token"], *rest.get("tokens", [])]}
        return data


class InvalidatorConfig(Section):
    max_range: int = Field(default=10**12, gt=0)
    """Invalidations wider than this many positions are rejected (a typo, not a reorg)."""
    max_tasks: int = Field(default=100_000, gt=0)
    """Invalidations that could re-run more tasks than this, over the model and its descendants, are rejected before
    anything is read (``cbt.scheduling.invalidation.most_tasks``). Records and Redis keep runs of tasks, but the
    planner derives pending re-runs one task at a time (docs/design/invalidations.md#limits)."""
    history_retention_s: DurationS | None = Field(
        default=90 * 24 * 3600, validation_alias=AliasChoices("history_retention", "historyRetention"))
    """Accepted invalidations older than this (``90d``, ``2160h``…) are deleted from ``cbt_invalidations`` and their
    marks from Redis — only those whose deletion changes nothing (``cbt.scheduling.protocol.is_prunable``): not a
    model's newest, masking no row computed before them, every task they re-run covered again. ``null`` keeps the
    history for good. An id older than this, published again, is applied again (keep it above the
    longest time a publisher may retry one)."""
    history_prune_every_s: DurationS = Field(
        default=3600, gt=0, validation_alias=AliasChoices("history_prune_every", "historyPruneEvery"))
    """How often the invalidator looks for invalidations to prune."""


class TablesApiConfig(Section):
    """The read API over the exposed models' Delta tables (``/api/v1/tables``), read straight from storage."""

    warehouse: str | None = None
    """Where the Spark catalog keeps managed tables (its ``spark.sql.warehouse.dir``): a folder, relative to the config
    file's, or a URI (``s3://…``); a table is ``<warehouse>/<database>.db/<table>``. Unset: the read API is off."""
    storage_options: dict[str, EnvValue] = {}
    """Passed to the Delta reader as-is (object-store credentials and endpoints)."""
    default_page_size: int = Field(default=100, gt=0)
    max_page_size: int = Field(default=1000, gt=0)
    query_timeout_s: DurationS = Field(default=10, gt=0)
    """A read that takes longer is answered 504; its scan stops at its next batch."""
    max_concurrent_reads: int = Field(default=4, gt=0)
    """Reads running at once in one api process; more wait their turn (bounded by ``query_timeout_s``)."""
    read_memory_mb: int = Field(default=128, gt=0)
    """The memory one read's query engine may hold (DataFusion's pool: a sort's rows, a scan's batches); a read that
    needs more is refused with the reason. With ``max_concurrent_reads`` it bounds what reads take in all."""
    page_token_secret: EnvValue | None = None
    """The key page tokens are signed with (HMAC-SHA256), at least 32 characters: a client cannot forge the version,
    the position or the query a token names. Every api replica behind one address needs the same one. Unset: a random
    key per process (a token then works only on the process that made it, until it restarts)."""
    page_token_max_age_s: DurationS = Field(default=3600, gt=0)
    """A token whose first page was read longer ago is refused (410, start again): it would read a version of the
    table from before the re-runs made since."""

    @field_validator("page_token_secret")
    @classmethod
    def _hard_to_guess(cls, secret: str | None) -> str | None:
        if secret is not None and len(secret) < MIN_TOKEN_LENGTH:
            raise ValueError(f"a key of {len(secret)} characters is too easy to guess; use at least "
                             f"{MIN_TOKEN_LENGTH} (e.g. openssl rand -hex 32)")
        return secret
    schema_refresh_s: DurationS = Field(default=10, ge=0)
    """How long the tables' schemas in the OpenAPI document are reused before each exposed table is opened again
    (a new column shows after at most this long); 0 opens them for every request of the document."""


class ApiRateLimit(Section):
    """A token bucket per client (its token when it sends a valid one, else its address), in each api process."""

    per_client_per_s: float = Field(default=20, gt=0)
    """Requests a client may make per second, sustained; more are answered 429 with ``Retry-After``."""
    burst: int = Field(default=200, gt=0)
    """Requests a client may make at once after a quiet spell (a page load is about 25)."""
    max_clients: int = Field(default=10_000, gt=0)
    """Clients remembered at once; the one seen least recently is forgotten first (it starts again full)."""


class ApiConfig(Section):
    addr: str = "127.0.0.1:8080"
    auth: ApiAuth = ApiAuth()
    cors_origins: list[str] = []
    max_body_bytes: int = Field(default=65536, gt=0)
    """A larger request body is refused with 413 before it is read."""
    max_concurrent_requests: int = Field(default=32, gt=0)
    """Requests handled at once (live event streams aside); more are answered 503 with ``Retry-After``."""
    max_event_streams: int = Field(default=64, gt=0)
    """Live event streams (``/api/v1/events``) open at once; more are answered 503 with ``Retry-After``."""
    max_requests_per_client: int = Field(default=24, gt=0)
    """Requests one client (its token, else its address) may have handled at once; more are answered 429: one
    client cannot hold every request slot, whatever its rate. (A browser loads a page's ~25 modules over six
    connections, and the requests of the page it just left may still be running.)"""
    max_event_streams_per_client: int = Field(default=8, gt=0)
    """Live event streams one client may hold open at once (a browser tab holds one); more are answered 429."""
    max_event_stream_s: DurationS = Field(default=1800, gt=0)
    """A live event stream ends after this long (the browser's EventSource reconnects by itself, at once), so a
    stream slot is never held for good."""
    body_timeout_s: DurationS = Field(default=10, gt=0)
    """How long a request's body may take to arrive once its headers have: a client that announces a body and never
    sends it is answered 408 and its request slot freed."""
    rate_limit: ApiRateLimit = ApiRateLimit()
    forwarded_allow_ips: list[str] = ["127.0.0.1"]
    """Proxies (addresses or networks) whose ``X-Forwarded-For`` names the client, e.g. the Ingress controller's
    pods: behind a proxy every client has the proxy's address otherwise. ``*`` is refused: any client could then name
    itself, and get a fresh rate-limit bucket with each request."""

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _named_proxies_only(cls, proxies: list[str]) -> list[str]:
        if any(p.strip() == "*" for p in proxies):
            raise ValueError("'*' would trust X-Forwarded-For from any client, so each request could name a new "
                             "client (and a full rate-limit bucket); list the proxies' addresses or networks")
        return proxies
    tables: TablesApiConfig = TablesApiConfig()


class TelemetryConfig(Section):
    """OpenTelemetry export (metrics are also served for Prometheus at ``metrics_addr``)."""

    otlp_endpoint: str | None = None
    """OTLP/HTTP base URL (``http://collector:4318``): metrics are pushed there, and traces when ``traces: otlp``."""
    metrics_interval_s: DurationS = Field(default=15, gt=0)
    """How often metrics are pushed over OTLP."""
    status_interval_s: DurationS = Field(default=15, gt=0)
    """How often the leading coordinator computes every model's lag, gaps, backlog and bounds, and each worker its
    consumer lag, for the gauges (at 10,000 models a computation takes about a second of one core)."""
    traces: Literal["none", "console", "otlp"] = "none"
    traces_file: str | None = None
    """With ``traces: console``: append one JSON span per line to this file (relative to the config file's folder)
    instead of stderr; ``{service}`` and ``{instance}`` in it give each process a file of its own."""

    @model_validator(mode="after")
    def _otlp_needs_endpoint(self) -> TelemetryConfig:
        if self.traces == "otlp" and not self.otlp_endpoint:
            raise ValueError("traces: otlp needs telemetry.otlp_endpoint")
        return self

    @field_validator("traces_file")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        try:
            value is None or value.format(service="s", instance="i")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"only {{service}} and {{instance}} may appear in braces ({e})") from None
        return value


class ChecksConfig(Section):
    """Interval checks (docs/checks.md)."""

    retention_s: DurationS | None = Field(default=7 * 24 * 3600, validation_alias=AliasChoices("retention"))
    """How long the rows of an interval that failed a check stay in the model's ``<table>__cbt_failed`` table, for
    inspection (``7d``, ``48h``…); ``null``: keep none."""


class Config(Section):
    """The whole configuration. ``base_dir`` is the config file's folder; model paths are already absolute."""

    logging: LoggingConfig = LoggingConfig()
    kafka: KafkaConfig = KafkaConfig()
    redis: RedisConfig = RedisConfig()
    spark: SparkConfig = SparkConfig()
    admin: AdminConfig = AdminConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    worker: WorkerConfig = WorkerConfig()
    models: ModelsConfig = ModelsConfig()
    invalidator: InvalidatorConfig = InvalidatorConfig()
    api: ApiConfig = ApiConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    checks: ChecksConfig = ChecksConfig()
    interval_types: dict[str, tuple[Transformation, ...]] = {}
    """How positions of each ``interval.type`` are shown (``cbt.config.interval_types``; CBT's form loads as is)."""
    metrics_addr: str = "127.0.0.1:9464"
    """Prometheus ``/metrics``; each service adds its port offset (coordinator +0, worker +1, bounds-cache +2,
    invalidator +3, api +4); ``off`` serves none. ``:PORT`` listens on every interface (as in CBT); the default
    listens on loopback only."""
    health_addr: str = Field(
        default="127.0.0.1:8081", validation_alias=AliasChoices("health_addr", "healthAddr", "healthCheckAddr")
    )
    """``/healthz`` and ``/readyz`` (and CBT's ``/health`` and ``/ready``), with the same port offsets; ``:PORT``
    listens on every interface (as in CBT); the default listens on loopback only."""

    @field_validator("metrics_addr", "health_addr")
    @classmethod
    def _host_and_port(cls, value: str) -> str:
        host, _, port = value.rpartition(":")
        if value != "off" and not (port.isdigit() and int(port) < 65536 and (host or value.startswith(":"))):
            raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:9464) or off, got {value!r}")
        return value

    _path: str = PrivateAttr(default="")
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _source: SourceMap = PrivateAttr(default_factory=lambda: SourceMap(path=DEFAULT_CONFIG_FILE))
    _warnings: tuple[Problem, ...] = PrivateAttr(default=())

    @property
    def path(self) -> str:
        """The file this came from ("" for pure defaults)."""
        return self._path

    @property
    def base_dir(self) -> Path:
        """The config file's folder: relative paths (model paths, exec commands) are resolved against it."""
        return self._base_dir

    @property
    def source(self) -> SourceMap:
        """Where each key was written, for errors about the config found later (e.g. overrides)."""
        return self._source

    def warehouse(self) -> str | None:
        """``spark.warehouse`` as a URI or an absolute folder (relative to the config file's); None when unset."""
        return warehouse_location(self.spark.warehouse, self._base_dir) if self.spark.warehouse else None

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """What was accepted but means nothing here (the original CBT's keys, ``cbt.config.cbt_compat``), each
        saying what replaces it: ``cbt validate`` prints them, services log them at start."""
        return self._warnings


def load_config(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read, expand and validate the config; raise ConfigProblems listing every problem.

    With no ``path``: ``$CBT_CONFIG`` else ``./config.yaml``; a missing default file means all defaults.
    """
    env = os.environ if environ is None else environ
    explicit = path is not None or CONFIG_ENV_VAR in env
    file = Path(path if path is not None else env.get(CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE))
    if not file.is_file():
        if explicit:
            raise ConfigProblems([Problem(str(file), 0, "config", "file not found")])
        return _finish(Config(), SourceMap(path=str(file)), Path.cwd(), "")
    text = _read(file)
    data, smap, problems = parse_yaml(text, str(file))
    if data is None and not problems:
        data = {}
    if not problems and not isinstance(data, dict):
        problems = [Problem(str(file), 1, "(root)", "expected a mapping of sections at the top level")]
    if problems:
        raise ConfigProblems(problems)
    data = cbt_compat.expand_shorthands(data)
    problems = apply_env_overrides(data, env, smap)
    problems += expand_references(data, env, smap)
    data, warnings = cbt_compat.set_aside(data, smap)
    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        problems += cbt_compat.suggest_cbt_keys(pydantic_problems(e, smap, Config))
    if problems:
        raise ConfigProblems(problems)
    return _finish(config, smap, file.resolve().parent, str(file), warnings)


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigProblems([Problem(str(file), 0, "config", f"cannot read: {e}")]) from e


def _finish(config: Config, smap: SourceMap, base_dir: Path, path: str,
            warnings: Sequence[Problem] = ()) -> Config:
    models = config.models
    resolved = models.model_copy(
        update={
            "external": _resolve(models.external, base_dir),
            "transformations": _resolve(models.transformations, base_dir),
        }
    )
    out = config.model_copy(update={"models": resolved})
    out._path = path
    out._base_dir = base_dir
    out._source = smap
    out._warnings = tuple(warnings)
    return out


def _resolve(paths: _P, base_dir: Path) -> _P:
    absolute = [str(p if Path(p).is_absolute() else base_dir / p) for p in paths.paths]
    return paths.model_copy(update={"paths": absolute})
