"""``cbt override set | list | clear`` on real Redis and Delta, with the project's config and models (issue 26): an
invalid override is refused before anything is written; what is set is in Redis and in the admin table."""

from __future__ import annotations

import json

import pytest
from redis import Redis

from cbt.adapters.redis_stores.overrides import RedisOverrides
from cbt.cli import main
from cbt.config.settings import admin_database_overrides
from tests.e2e.harness import CONFIG

pytestmark = pytest.mark.integration
MODEL = "analytics.block_propagation_minute"


@pytest.fixture
def cbt(monkeypatch: pytest.MonkeyPatch, spark_database: str, redis_prefix: str) -> object:
    monkeypatch.setenv("CBT__REDIS__KEY_PREFIX", redis_prefix)
    for name, value in admin_database_overrides(spark_database).items():
        monkeypatch.setenv(name, value)
    return None


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["override", *argv, "--config", str(CONFIG)])
    out, err = capsys.readouterr()
    return code, out, err


def test_set_list_and_clear(
    cbt: object, capsys: pytest.CaptureFixture[str], redis_client: Redis, redis_prefix: str
) -> None:
    store = RedisOverrides(redis_client, redis_prefix)
    code, _, err = run(capsys, "set", MODEL, '{"limits": {"min": -3}}')
    assert code == 1 and f"cbt override: {MODEL}: limits.min: " in err
    code, _, err = run(capsys, "set", "block_propagation_minute", '{"schedule": "@hourly"}')
    assert code == 1 and "schedule: does not apply to incremental models" in err
    code, _, err = run(capsys, "set", MODEL, "{not json")
    assert code == 1 and "JSON: not a JSON object" in err
    assert store.overrides() == {}

    code, out, _ = run(capsys, "set", "block_propagation_minute", '{"fill": {"buffer": 120}, "enabled": false}')
    assert code == 0 and out.startswith(f"{MODEL}: override set")
    assert store.overrides() == {MODEL: {"enabled": False, "fill": {"buffer": 120}}}

    redis_client.delete(*redis_client.scan_iter(match=redis_prefix + "*"))  # Redis emptied: list restores it
    code, out, _ = run(capsys, "list")
    assert code == 0 and out == f"{MODEL}: {json.dumps({'enabled': False, 'fill': {'buffer': 120}})}\n"

    code, out, _ = run(capsys, "clear", MODEL)
    assert code == 0 and "override cleared" in out and store.overrides() == {}
    code, _, err = run(capsys, "clear", MODEL)
    assert code == 1 and "has no live config override" in err
    assert run(capsys, "list")[1] == "no live config overrides\n"


def test_list_flags_an_override_the_config_no_longer_accepts(
    cbt: object, capsys: pytest.CaptureFixture[str], redis_client: Redis, redis_prefix: str
) -> None:
    assert run(capsys, "list")[0] == 0  # (restores the empty set from the admin table: the store is now filled)
    RedisOverrides(redis_client, redis_prefix).put("analytics.gone", {"enabled": False})
    code, out, _ = run(capsys, "list")
    assert code == 1 and "analytics.gone: " in out and "IGNORED: analytics.gone: no such model" in out
