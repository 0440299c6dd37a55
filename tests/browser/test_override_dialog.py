"""The model page's "Live overrides" dialog (issue 26) in Chromium, against the api app on real Redis and Delta: an
invalid override shows the API's reason; a valid one is stored and shown in force; clearing returns to the config."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.delta_admin import tables_from_config
from cbt.adapters.redis_state import RedisState
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.records import ApiRecords
from cbt.api.web import create_app
from cbt.config.settings import admin_database_overrides, load_config
from cbt.models.dag import ModelSet
from cbt.planning.override_sync import LiveOverrides
from tests.browser.conftest import PageErrors, docs_screenshot
from tests.e2e.harness import CONFIG
from tests.integration.test_cbt_api import serving
from tests.unit.scheduling.factories import ext, inc, models_of

pytestmark = pytest.mark.integration
HOURLY = "an.hourly"
MODELS = ModelSet(models_of(ext("src.blocks"), inc(HOURLY, deps=["src.blocks"], forward="@every 1m")))
TOKEN = "override-dialog-token-0123456789abcdef"


@pytest.fixture
def base_url(spark: SparkSession, spark_database: str, redis_client: Redis, redis_prefix: str) -> Iterator[str]:
    environ = {
        **os.environ,
        "CBT__REDIS__KEY_PREFIX": redis_prefix,
        "CBT__API__AUTH__TOKENS": f'["{TOKEN}"]',
        **admin_database_overrides(spark_database),
    }
    config = load_config(CONFIG, environ=environ)
    records = ApiRecords(tables_from_config(spark, config))
    records.ensure_tables()
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())
    ctx = ApiContext(
        config=config,
        models=MODELS,
        hot=state,
        refresh=Offline(),
        admin=records,
        commands=Offline(),
        events=EventHub(),
        overrides=LiveOverrides(state.overrides, lambda: records.overrides),
    )
    with serving(create_app(ctx)) as url:
        yield url


def test_the_dialog_sets_shows_and_clears_an_override(
    base_url: str, page: Page, page_errors: PageErrors, redis_client: Redis, redis_prefix: str
) -> None:
    page_errors.expected_failures.append(("/overrides", 400))  # (the refused override, on purpose)
    page.goto(f"{base_url}/models/{HOURLY}")
    page.click("#overrides-open")
    dialog = page.locator("#overrides-dialog")
    expect(dialog.locator("[data-effective]")).to_contain_text('"forwardfill":"@every 1m"')
    dialog.locator("input[name=token]").fill(TOKEN)

    dialog.locator("textarea[name=fields]").fill('{"limits": {"min": -5}}')
    dialog.locator("#overrides-save").click()
    expect(dialog.locator("#overrides-result .problem")).to_contain_text("limits.min")
    assert RedisState(redis_client, redis_prefix).overrides.overrides() == {}

    dialog.locator("textarea[name=fields]").fill('{"schedules": {"forwardfill": "@every 30s"}, "tags": ["heavy"]}')
    dialog.locator("#overrides-save").click()
    expect(dialog.locator("#overrides-result")).to_contain_text("Override set")
    expect(dialog.locator("[data-effective]")).to_contain_text('"forwardfill":"@every 30s"')
    assert RedisState(redis_client, redis_prefix).overrides.overrides() == {
        HOURLY: {"schedules": {"forwardfill": "@every 30s"}, "tags": ["heavy"]}
    }
    docs_screenshot(page, "live-overrides-dialog")

    dialog.locator("#overrides-clear").click()
    expect(dialog.locator("#overrides-result")).to_contain_text("Override cleared")
    expect(dialog.locator("[data-effective]")).to_contain_text('"forwardfill":"@every 1m"')
    assert RedisState(redis_client, redis_prefix).overrides.overrides() == {}
