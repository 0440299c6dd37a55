"""config.yaml: defaults, aliases, ${VAR} expansion, CBT__ overrides and precise problems."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cbt.config.settings import Config, ConfigProblems, RedisConfig, load_config
from tests.unit.hostile_yaml import LAUGHS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(path: Path, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigProblems) as info:
        load_config(path, environ or {})
    return [str(p).replace(f"{path.parent}/", "") for p in info.value.problems]


def test_empty_file_gives_documented_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ""), {})
    assert config.kafka.bootstrap_servers == "127.0.0.1:9092" and config.kafka.topic_prefix == "cbt."
    assert config.redis.url == "redis://127.0.0.1:6379/0" and config.redis.key_prefix == "cbt:"
    assert config.spark.remote == "sc://127.0.0.1:15002" and config.spark.master is None
    assert config.admin.incremental.id == "admin.cbt_incremental"
    assert config.admin.scheduled.id == "admin.cbt_scheduled"
    assert config.admin.invalidations.id == "admin.cbt_invalidations"
    assert config.scheduler.consolidation == "@every 10m"
    assert config.worker.retry.max_attempts == 3
    assert config.models.external.paths == [str(tmp_path / "models/external")]
    assert config.models.transformations.paths == [str(tmp_path / "models/transformations")]
    assert config.base_dir == tmp_path and config.path == str(tmp_path / "config.yaml")


def test_missing_default_file_means_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(None, {})
    assert config.kafka == Config().kafka and config.path == ""
    assert config.models.external.paths == [str(tmp_path / "models/external")]


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigProblems, match="file not found"):
        load_config(tmp_path / "nope.yaml", {})


def test_camel_case_aliases_and_shorthands(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        logging: warn
        metricsAddr: ":9100"
        healthCheckAddr: ":8082"
        spark: {queryTimeout: 30s}
        worker: {shutdownTimeout: 1m, pools: {batch: [batch, heavy]}}
        models:
          external: {defaultDatabase: ethereum}
        api: {auth: {token: 7c1f3e9a0b2d4c6e8f1a3b5c7d9e0f2a}}
    """,
    )
    config = load_config(path, {})
    assert config.logging.level == "warning"
    assert (config.metrics_addr, config.health_addr) == (":9100", ":8082")
    assert config.spark.query_timeout_s == 30 and config.worker.shutdown_timeout_s == 60
    assert config.worker.pools["batch"].tags == ["batch", "heavy"]
    assert config.models.external.default_database == "ethereum"
    assert config.api.auth.tokens == ["7c1f3e9a0b2d4c6e8f1a3b5c7d9e0f2a"]


def test_variable_expansion(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        kafka: {bootstrap_servers: "${BROKER}", topic_prefix: "${PREFIX:-dev.}"}
        redis: {key_prefix: "$$literal:"}
        worker: {concurrency: "${WORKERS:-2}"}
    """,
    )
    config = load_config(path, {"BROKER": "b:9092"})
    assert config.kafka.bootstrap_servers == "b:9092" and config.kafka.topic_prefix == "dev."
    assert config.redis.key_prefix == "$literal:" and config.worker.concurrency == 2


def test_env_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "worker: {concurrency: 2}\n")
    environ = {
        "CBT__WORKER__CONCURRENCY": "8",
        "CBT__ADMIN__INCREMENTAL__DATABASE": "ops",
        "CBT__API__CORS_ORIGINS": "[http://a, http://b]",
        "CBT__METRICS_ADDR": ":1",
        "OTHER": "ignored",
    }
    config = load_config(path, environ)
    assert config.worker.concurrency == 8 and config.admin.incremental.database == "ops"
    assert config.api.cors_origins == ["http://a", "http://b"] and config.metrics_addr == ":1"


def test_spark_master_replaces_remote(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "spark: {master: 'local[2]'}\n"), {})
    assert (config.spark.master, config.spark.remote) == ("local[2]", None)


def test_pool_selection() -> None:
    config = Config.model_validate(
        {"worker": {"pools": {"py": {"tags": ["python"]}, "big": {"tags": ["a", "b"], "match": "all"}}}}
    )
    assert config.worker.pool_for(["python", "x"]) == "py"
    assert config.worker.pool_for(["a", "b"]) == "big"
    assert config.worker.pool_for(["a"]) == "default"


PROBLEM_CASES = [
    pytest.param(
        "kafka:\n  bootstrap: x\n",
        {},
        "config.yaml:2: kafka.bootstrap: unknown field (did you mean 'bootstrap_servers'?)",
        id="unknown-nested-key",
    ),
    pytest.param(
        "webui: {}\n", {}, "config.yaml:1: webui: unknown field; expected one of:", id="unknown-section"
    ),
    pytest.param(
        "worker:\n  concurrency: 0\n",
        {},
        "config.yaml:2: worker.concurrency: expected greater than or equal to 1, got 0",
        id="bad-value",
    ),
    pytest.param(
        "redis: {url: '${NOPE}'}\n",
        {},
        "config.yaml:1: redis.url: environment variable NOPE is not set",
        id="unset-variable",
    ),
    pytest.param(
        "redis: {url: '${9X}'}\n", {}, "config.yaml:1: redis.url: invalid reference '${9X}'", id="bad-reference"
    ),
    pytest.param(
        "",
        {"CBT__REDIS__URLL": "x"},
        "$CBT__REDIS__URLL:0: redis.urll: unknown field (did you mean 'url'?)",
        id="unknown-env-override",
    ),
    pytest.param(
        "",
        {"CBT__WORKER__CONCURRENCY": "many"},
        "$CBT__WORKER__CONCURRENCY:0: worker.concurrency: expected a valid integer",
        id="bad-env-override",
    ),
    pytest.param("redis: x\n", {"CBT__REDIS__URL": "y"}, "cannot set a key inside redis", id="env-into-scalar"),
    pytest.param("kafka: [\n", {}, "config.yaml:2: yaml: invalid YAML", id="malformed-yaml"),
    pytest.param(LAUGHS, {}, "config.yaml:1: yaml: invalid YAML: its aliases expand", id="billion-laughs",
                 marks=pytest.mark.timeout(10)),
    pytest.param("", {"CBT__MODELS__ENV": "{a: &a [x, x, x, x, x, x, x, x, x, x], " + ", ".join(
        f"b{i}: &b{i} [{', '.join(['*a' if i == 0 else f'*b{i - 1}'] * 10)}]" for i in range(9)) + "}"},
                 "invalid YAML flow value: its aliases expand", id="billion-laughs-in-the-environment",
                 marks=pytest.mark.timeout(10)),
    pytest.param("- a\n", {}, "config.yaml:1: (root): expected a mapping", id="not-a-mapping"),
    pytest.param("redis: {url: a}\nredis: {url: b}\n", {}, "config.yaml:2: redis: duplicate key", id="duplicate"),
    pytest.param(
        "scheduler: {consolidation: sometimes}\n",
        {},
        "config.yaml:1: scheduler.consolidation: cron",
        id="bad-consolidation-cron",
    ),
    pytest.param(
        "scheduler: {leader_lease_ttl_s: 5, leader_lease_renew_s: 5}\n",
        {},
        "leader_lease_renew_s must be shorter than leader_lease_ttl_s",
        id="lease-renew",
    ),
    pytest.param("spark: {remote: 'sc://x', master: local}\n", {}, "set either spark.remote", id="remote-and-master"),
    pytest.param("spark: {remote: 'http://x'}\n", {}, "expected a Spark Connect URL", id="remote-scheme"),
    pytest.param("worker: {pools: {default: [x]}}\n", {}, "'default' is the fallback pool", id="pool-default"),
    pytest.param("worker: {consume: [gpu]}\n", {}, "consume names undefined pools: gpu", id="consume-unknown"),
    pytest.param(
        "worker: {task_timeout_s: soon}\n", {}, "worker.task_timeout_s: expected a duration", id="bad-duration"
    ),
    pytest.param("models: {env: {'1A': x}}\n", {}, "models.env: env name '1A'", id="env-name"),
    pytest.param("models: {env: {BOUNDS_START: x}}\n", {}, "models.env: BOUNDS_START is set by cbt", id="env-reserved"),
    pytest.param(
        "models: {overrides: {x: {enabled: maybe}}}\n",
        {},
        "models.overrides.x.enabled: expected a valid boolean",
        id="override-enabled",
    ),
    pytest.param("logging: {level: loud}\n", {}, "logging.level: expected 'debug'", id="log-level"),
    pytest.param("api: {forwarded_allow_ips: ['10.0.0.0/8', '*']}\n", {}, "api.forwarded_allow_ips: '*' would trust "
                 "X-Forwarded-For from any client", id="forwarded-from-anyone"),
    pytest.param("api: {tables: {page_token_secret: short}}\n", {}, "api.tables.page_token_secret: a key of 5 "
                 "characters is too easy to guess", id="short-page-token-secret"),
    pytest.param(
        "api:\n  auth: {tokens: [s3cret]}\n", {},
        "config.yaml:2: api.auth.tokens: a token of 6 characters is too easy to guess; use at least 32",
        id="weak-token",
    ),
    pytest.param(
        "api:\n  auth:\n    read_tokens: [0123456789abcdef0123456789abcde]\n", {},
        "config.yaml:3: api.auth.read_tokens: a token of 31 characters is too easy to guess; use at least 32",
        id="weak-read-token",
    ),
    pytest.param("api: {rate_limit: {burst: 0}}\n", {}, "api.rate_limit.burst: expected greater than 0, got 0",
                 id="rate-limit-burst"),
]


@pytest.mark.parametrize(("text", "environ", "expected"), PROBLEM_CASES)
def test_problems(tmp_path: Path, text: str, environ: dict[str, str], expected: str) -> None:
    problems = problems_of(write(tmp_path, text), environ)
    assert any(expected in p for p in problems), problems
    assert len(problems) == (2 if "cannot set a key" in expected else 1), problems


def test_every_problem_is_listed(tmp_path: Path) -> None:
    path = write(tmp_path, "kafka: {bootstrap: x}\nredis: {url: 1, prefix: y}\nworker: {concurrency: -1}\n")
    assert len(problems_of(path)) == 4


def test_the_redis_url_is_shown_without_its_password() -> None:
    """``cbt plan`` printed redis.url, password included, when Redis did not answer."""
    assert RedisConfig(url="redis://cbt:s3cr3t-value@redis:6379/0").shown_url == "redis://cbt:***@redis:6379/0"
    assert RedisConfig(url="rediss://:only-a-password@r.example:6380").shown_url == "rediss://:***@r.example:6380"
    assert RedisConfig(url="redis://127.0.0.1:6379/0").shown_url == "redis://127.0.0.1:6379/0"
