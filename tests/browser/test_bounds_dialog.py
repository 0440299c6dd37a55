"""The model page's bounds dialog and "Consolidate now" (issue 26) in Chromium, against the api app on real Redis and
Delta: invalid bounds show the API's reason and write nothing; saved bounds are in Redis and announced; delete removes
them and requests a rescan; an incremental model's rows are consolidated from its page."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Page, expect
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.delta_admin import AdminTables, tables_from_config
from cbt.adapters.redis_state import RedisState
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.records import ApiRecords
from cbt.api.web import create_app
from cbt.config.settings import admin_database_overrides, load_config
from cbt.contract.messages import BoundsUpdated, Invalidation
from cbt.models.dag import ModelSet
from cbt.models.spec import ScheduledModel
from cbt.scheduling.snapshot import RawBounds
from cbt.state.admin_records import CompletedInterval
from tests.browser.conftest import PageErrors, docs_screenshot
from tests.e2e.harness import CONFIG
from tests.integration.test_cbt_api import serving
from tests.unit.scheduling.factories import ext, inc, models_of

pytestmark = pytest.mark.integration
SRC, HOURLY = "src.blocks", "an.hourly"
MODELS = ModelSet(models_of(ext(SRC), inc(HOURLY, deps=[SRC], imax=100)))
TOKEN = "bounds-dialog-token-0123456789abcdef"


@dataclass
class Announced:
    """``Commands``: the ``bounds-updated`` events the api announced (Kafka is not what this test is about)."""

    events: list[BoundsUpdated] = field(default_factory=list)

    async def announce_bounds(self, event: BoundsUpdated) -> None:
        self.events.append(event)

    async def publish_invalidation(self, event: Invalidation) -> None:
        raise AssertionError("not used here")

    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        raise AssertionError("not used here")


@dataclass
class Served:
    url: str
    state: RedisState
    refresh: RedisRefreshRequests
    tables: AdminTables
    announced: Announced


@pytest.fixture
def served(spark: SparkSession, spark_database: str, redis_client: Redis, redis_prefix: str) -> Iterator[Served]:
    environ = {
        **os.environ,
        "CBT__REDIS__KEY_PREFIX": redis_prefix,
        "CBT__API__AUTH__TOKENS": f'["{TOKEN}"]',
        **admin_database_overrides(spark_database),
    }
    config = load_config(CONFIG, environ=environ)
    tables = tables_from_config(spark, config)
    records = ApiRecords(tables)
    records.ensure_tables()
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())
    state.bounds.put_bounds(SRC, RawBounds(1000, 1800))
    refresh, announced = RedisRefreshRequests(redis_client, redis_prefix), Announced()
    ctx = ApiContext(
        config=config, models=MODELS, hot=state, refresh=refresh, admin=records, commands=announced, events=EventHub()
    )
    with serving(create_app(ctx)) as url:
        yield Served(url, state, refresh, tables, announced)


def test_bounds_are_edited_and_deleted_and_rows_consolidated_from_the_model_page(
    served: Served, page: Page, page_errors: PageErrors
) -> None:
    page_errors.expected_failures.append(("/bounds", 400))  # (the refused bounds, on purpose)
    page.goto(f"{served.url}/models/{SRC}")
    page.click("#bounds-open")
    dialog = page.locator("#bounds-dialog")
    expect(dialog.locator("#bounds-state")).to_contain_text("[1000, 1800)")
    expect(dialog.locator("input[name=max]")).to_have_value("1800")
    dialog.locator("input[name=token]").fill(TOKEN)

    dialog.locator("input[name=min]").fill("2000")
    dialog.locator("#bounds-save").click()
    expect(dialog.locator("#bounds-result .problem")).to_contain_text("min must not exceed max")
    assert served.state.bounds.bounds([SRC]) == {SRC: RawBounds(1000, 1800)}

    dialog.locator("input[name=min]").fill("1200")
    dialog.locator("#bounds-save").click()
    saved = 60_000  # each change's audit row is a Delta commit on a shared Spark: the first one of a run is slow
    expect(dialog.locator("#bounds-result")).to_contain_text("Bounds set to [1200, 1800)", timeout=saved)
    assert served.state.bounds.bounds([SRC]) == {SRC: RawBounds(1200, 1800)}
    assert [(e.min, e.max, e.previous_min) for e in served.announced.events] == [(1200, 1800, 1000)]
    docs_screenshot(page, "bounds-dialog")

    dialog.locator("#bounds-delete").click()
    expect(dialog.locator("#bounds-result")).to_contain_text("Bounds deleted", timeout=saved)
    expect(dialog.locator("#bounds-state")).to_contain_text("No bounds cached")
    assert served.state.bounds.bounds([SRC]) == {} and served.refresh.requested() == {SRC}

    served.tables.completions.record_completed([
        CompletedInterval(HOURLY, s, 100, f"{HOURLY}:{s}", invalidation_seq=0, task_interval=100)
        for s in (0, 100, 200)])  # fmt: skip
    page.goto(f"{served.url}/models/{HOURLY}")
    page.click("#consolidate-open")
    action = page.locator("#action-dialog")
    expect(action.locator("#action-title")).to_contain_text(f"Consolidate {HOURLY} now")
    action.locator("#action-confirm").click()
    expect(action.locator("#action-result")).to_contain_text(
        "Consolidated: 3 → 1 rows, coverage unchanged.", timeout=90_000
    )  # (a Delta rewrite on a shared Spark)
    assert served.tables.completions.coverage([HOURLY]) == {HOURLY: ((0, 300),)}
