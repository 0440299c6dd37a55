"""A config written for the original CBT loads: each CBT-only key warns once, naming what replaces it here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cbt.config.cbt_compat import CBT_KEYS
from cbt.config.settings import ConfigProblems, load_config

CBT_CONFIG = """\
logging: debug
metricsAddr: ":9090"
healthCheckAddr: ":8083"
pprofAddr: ":6060"
frontend:
  enabled: true
  addr: ":8080"
clickhouse:
  url: "http://clickhouse:8123"
  cluster: ""
  queryTimeout: 300s
  admin:
    incremental: {database: admin, table: cbt_incremental}
redis:
  url: "redis://redis:6379"
scheduler:
  concurrency: 10
  consolidation: "@every 1m"
  shutdownTimeout: 10
worker:
  concurrency: 10
  tags: [batch]
  shutdownTimeout: 30
models:
  external:
    paths: [models/external]
    defaultCluster: my_cluster
    defaultDatabase: ethereum
  transformations:
    paths: [models/transformations]
    defaultDatabase: analytics
  env: {ENVIRONMENT: development}
management:
  enabled: false
api:
  enabled: true
interval_types:
  slot:
  - name: Slot
    expression: "math.floor((value - 1606824023) / 12)"
  - name: Datetime
    format: datetime
    expression: "value * 1000"
  - name: Timestamp
  block:
  - name: Block number
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_cbt_config_loads_with_one_warning_per_cbt_key(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CBT_CONFIG), {})
    where = {w.field: w.line for w in config.warnings}
    assert where == {
        "pprofAddr": 4,
        "frontend": 5,
        "clickhouse": 8,
        "scheduler.concurrency": 17,
        "scheduler.shutdownTimeout": 19,
        "worker.tags": 22,
        "models.external.defaultCluster": 27,
        "management": 33,
        "api.enabled": 36,
    }
    assert len(config.warnings) == len(where)
    # what both systems know still takes effect
    assert config.metrics_addr == ":9090" and config.health_addr == ":8083" and config.logging.level == "debug"
    assert config.redis.url == "redis://redis:6379" and config.worker.concurrency == 10
    assert config.worker.shutdown_timeout_s == 30 and config.scheduler.consolidation == "@every 1m"
    assert config.models.external.default_database == "ethereum"
    # CBT's interval_types is read, not set aside
    slot = config.interval_types["slot"]
    assert [t.name for t in slot] == ["Slot", "Datetime", "Timestamp"]
    assert slot[0].show(1606824023 + 12 * 5, 0) == "5" and slot[1].show(1606824023, 0) == "2020-12-01 12:00:23 UTC"
    assert [t.name for t in config.interval_types["block"]] == ["Block number"]


@pytest.mark.parametrize(
    ("field", "replacement"),
    [
        pytest.param("clickhouse", "spark.remote", id="clickhouse"),
        pytest.param("frontend", "api.addr", id="frontend"),
        pytest.param("management", "api.auth.tokens", id="management"),
        pytest.param("pprofAddr", "no effect", id="pprof"),
        pytest.param("scheduler.concurrency", "worker.model_concurrency", id="scheduler-concurrency"),
        pytest.param("scheduler.shutdownTimeout", "worker.shutdown_timeout", id="scheduler-shutdown"),
        pytest.param("worker.tags", "worker.pools", id="worker-tags"),
        pytest.param("models.external.defaultCluster", "no effect", id="default-cluster"),
        pytest.param("api.enabled", "cbt run api", id="api-enabled"),
    ],
)
def test_each_warning_names_what_replaces_the_key(tmp_path: Path, field: str, replacement: str) -> None:
    config = load_config(write(tmp_path, CBT_CONFIG), {})
    (warning,) = [w for w in config.warnings if w.field == field]
    assert replacement in warning.message
    assert str(warning).startswith(f"{tmp_path}/config.yaml:{warning.line}: {field}: ")


def test_every_cbt_key_is_covered() -> None:
    covered = {(*key.section, key.names[0]) for key in CBT_KEYS}
    assert covered == {
        ("clickhouse",),
        ("frontend",),
        ("management",),
        ("pprofAddr",),
        ("scheduler", "concurrency"),
        ("scheduler", "shutdownTimeout"),
        ("worker", "tags"),
        ("models", "external", "defaultCluster"),
        ("api", "enabled"),
    }


def test_our_own_config_has_no_warnings(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "worker: {concurrency: 2}\napi: {addr: '127.0.0.1:8080'}\n"), {})
    assert config.warnings == ()


def test_unknown_keys_stay_errors_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "scheduler:\n  concurency: 10\nclickhouse: {url: x}\n")
    with pytest.raises(ConfigProblems) as info:
        load_config(path, {})
    (problem,) = info.value.problems
    assert (problem.field, problem.line) == ("scheduler.concurency", 2)
    assert problem.message == (
        "unknown field (did you mean 'concurrency', a key of the original CBT's accepted here with a warning?)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("clickhose: {}\n", "config.yaml:1: clickhose: unknown field (did you mean 'clickhouse'", id="cbt"),
        pytest.param(
            "metricAddr: ':1'\n",
            "config.yaml:1: metricAddr: unknown field (did you mean 'metrics_addr'?)",
            id="ours-first",
        ),
        pytest.param("webui: {}\n", "config.yaml:1: webui: unknown field; expected one of:", id="neither"),
    ],
)
def test_a_key_neither_system_knows_is_an_error(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigProblems) as info:
        load_config(path, {})
    assert str(info.value).replace(f"{tmp_path}/", "").startswith(expected)


def test_a_misspelt_key_of_ours_gets_a_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(ConfigProblems, match=r"worker\.concurency: unknown field \(did you mean 'concurrency'\?\)"):
        load_config(write(tmp_path, "worker: {concurency: 2}\n"), {})


def test_an_empty_consolidation_schedule_turns_consolidation_off(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, 'scheduler: {consolidation: ""}\n'), {})
    assert config.scheduler.consolidation == "" and config.warnings == ()


def test_a_bad_consolidation_schedule_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigProblems, match=r"scheduler\.consolidation"):
        load_config(write(tmp_path, 'scheduler: {consolidation: "every tuesday"}\n'), {})


def test_an_environment_override_sets_the_level_of_cbt_s_logging_shorthand(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "logging: debug\n"), {"CBT__LOGGING__LEVEL": "warn"})
    assert config.logging.level == "warning" and config.warnings == ()
    assert load_config(write(tmp_path, "logging: debug\n"), {}).logging.level == "debug"


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_validate_and_plan_print_each_warning_in_file_order(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from cbt.cli import main

    for folder in ("external", "transformations"):
        (tmp_path / "models" / folder).mkdir(parents=True)
    path = write(tmp_path, "worker: {tags: [a]}\npprofAddr: ':6060'\n")
    state = tmp_path / "state.json"
    state.write_text('{"bounds": {}, "coverage": {}, "now": 0}')
    extra = ["--state", str(state)] if command == "plan" else []
    assert main([command, "--config", str(path), *extra]) == 0
    err = capsys.readouterr().err.replace(f"{tmp_path}/", "").splitlines()
    assert [line.split(": warning: ")[0] for line in err if ": warning: " in line] == [
        "config.yaml:1: worker.tags",
        "config.yaml:2: pprofAddr",
    ]
