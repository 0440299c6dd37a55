"""Positions people can read (config ``interval_types``), in a real Chromium against a lone api process (real Kafka,
Redis, Spark Connect) whose models count slots: the model page names how its positions are shown, the explain view
shows a slot as its time and its epoch, the timelines' axes (model page and dashboard) label their ticks with the
slots' times, the dashboard's card says so, and the CBT-compatible route serves the same transformations. The model
page is screenshotted for docs/img/interval-types.png (copied there with CBT_UPDATE_DOCS_SCREENSHOTS=1)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from cbt.adapters.spark import SessionPool
from cbt.scheduling.snapshot import RawBounds
from tests.browser.conftest import docs_screenshot
from tests.conftest import Endpoints
from tests.e2e.api_stack import lone_api

pytestmark = pytest.mark.e2e

GENESIS = 1606824023
SLOT_TYPES = {
    "slot": [
        {"name": "Time", "expression": f"(value * 12 + {GENESIS}) * 1000", "format": "datetime"},
        {"name": "Epoch", "expression": "value // 32", "label": "epoch {value}"},
    ]
}
EXTERNAL = """\
table: beacon_slots
interval:
  type: slot
cache:
  incremental_scan_interval: 10s
  full_scan_interval: 2m
exec: "echo '{}'"
"""
ROLLUP = """\
---
type: incremental
table: slot_rollup
interval:
  max: 32
  min: 32
  type: slot
schedules:
  forwardfill: "@every 1m"
dependencies:
  - "{{external}}.beacon_slots"
---
SELECT * FROM {{ ref("{{external}}.beacon_slots") }} WHERE slot >= {{ bounds.start }} AND slot < {{ bounds.end }}
"""


@pytest.fixture(scope="module")
def base(endpoints: Endpoints, spark_sessions: SessionPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    models = tmp_path_factory.mktemp("slot_models")
    (models / "external").mkdir()
    (models / "transformations").mkdir()
    (models / "external" / "beacon_slots.yml").write_text(EXTERNAL)
    (models / "transformations" / "slot_rollup.sql").write_text(ROLLUP)
    overrides = {
        "CBT__MODELS__EXTERNAL__PATHS": json.dumps([str(models / "external")]),
        "CBT__MODELS__TRANSFORMATIONS__PATHS": json.dumps([str(models / "transformations")]),
        "CBT__INTERVAL_TYPES": json.dumps(SLOT_TYPES),
    }
    with lone_api(endpoints, spark_sessions, overrides) as (url, dep):
        # Bounds of the source, as a scan would store them (no bounds-cache or coordinator runs here): the slot
        # model then has a valid range, and the pages draw its timeline on an axis of slots.
        dep.state.coverage.mark_built(int(time.time()), dep.state.coverage.generation())
        dep.state.bounds.put_bounds(f"{dep.source_db}.beacon_slots", RawBounds(0, 320))
        yield url


def slot_time(slot: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(GENESIS + 12 * slot))


def assert_ticks_show_slot_times(page: Page, card: str) -> None:
    """The axis of ``card``'s timelines labels each tick with its slot's time (not the raw slot number)."""
    page.wait_for_selector(f"{card} svg.axis text[data-value]")
    ticks = page.eval_on_selector_all(f"{card} svg.axis text", "els => els.map(e => [e.dataset.value, e.textContent])")
    assert len(ticks) >= 2, ticks
    assert all(label == slot_time(int(value)) for value, label in ticks), ticks


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


# (the tests without a browser first: Playwright leaves its loop running in this thread until the module ends)
def test_the_cbt_route_serves_the_configured_transformations(base: str) -> None:
    assert get(f"{base}/api/v1/interval/types") == {
        "interval_types": {
            "slot": [
                {"name": "Time", "expression": f"(value * 12 + {GENESIS}) * 1000", "format": "datetime"},
                {"name": "Epoch", "expression": "value // 32"},
            ]
        }
    }


def test_a_position_is_shown_by_the_api(base: str) -> None:
    answer = get(f"{base}/api/v1/interval-types/slot/show?position=100")
    assert [(s["name"], s["text"]) for s in answer["shown"]] == [
        ("Time", "2020-12-01 12:20:23 UTC"),
        ("Epoch", "epoch 3"),
    ]
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"{base}/api/v1/interval-types/parsec/show?position=1")
    refused.value.close()  # (its socket, else an unraisable ResourceWarning fails the next test)
    assert refused.value.code == 404


def test_a_slot_is_shown_as_its_time_and_epoch(base: str, page: Page) -> None:
    types = get(f"{base}/api/v1/interval-types")["interval_types"]
    assert types["slot"]["configured"] and [t["name"] for t in types["slot"]["transformations"]] == ["Time", "Epoch"]
    rollup = next(m["id"] for m in get(f"{base}/api/v1/models")["models"] if m["id"].endswith(".slot_rollup"))

    page.goto(f"{base}/models/{rollup}#position=100")
    expect(page.locator("#shown-as")).to_have_text(" (shown as Time, Epoch)")
    shown = page.locator("#explain [data-testid=explain-shown]")
    expect(shown).to_have_text("Time 2020-12-01 12:20:23 UTC · epoch 3")  # slot 100 = genesis + 1200 s
    assert_ticks_show_slot_times(page, "#coverage-card")
    docs_screenshot(page, "interval-types")

    page.goto(f"{base}/")
    expect(page.locator("[data-interval-type=slot] h2")).to_contain_text("shown as Time, Epoch")
    assert_ticks_show_slot_times(page, "[data-interval-type=slot]")
