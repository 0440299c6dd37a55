"""Each page of the web UI in a real Chromium, against the api of a caught-up deployment of the example pipeline.

What the pages draw is compared with what the API answers: every coverage row's SVG ranges (their data attributes)
with ``/coverage`` for the same window, the DAG's nodes and OR groups with ``/dag``, the explain view with
``/explain``, the rerun preview with the API's preview; a confirmed rerun must then show in the API (recorded
invalidation, the range re-run) and reach an open dashboard through the event stream.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import SOURCE_END, VIEWPORT, PageErrors, docs_screenshot, screenshot
from tests.e2e.api_stack import ApiStack, wait_until

pytestmark = pytest.mark.e2e  # the default 300 s per test: the whole module takes ~90 s on a quiet machine

ROWS = """root => [...root.querySelectorAll('svg.coverage')].map(svg => ({
  model: svg.dataset.model, from: Number(svg.dataset.windowFrom), to: Number(svg.dataset.windowTo),
  ranges: [...svg.querySelectorAll('rect.range')].map(r => ({
    start: Number(r.dataset.start), end: Number(r.dataset.end), status: r.dataset.status})),
}))"""
SLOW_MS = 120_000
"""For answers read from the admin tables (Spark): task history, failures, invalidations, a rerun's preview."""
ALL_LOADED = """sel => { const svgs = [...document.querySelectorAll(sel + ' svg.coverage')];
  return svgs.length > 0 && svgs.every(s => s.dataset.state === 'loaded'); }"""


def rows_of(page: Page, root: str) -> list[dict[str, Any]]:
    page.wait_for_function(ALL_LOADED, arg=root)
    rows: list[dict[str, Any]] = page.eval_on_selector(root, ROWS)
    return rows


def assert_rows_match_the_api(stack: ApiStack, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        answer = stack.get(f"/models/{row['model']}/coverage?from={row['from']}&to={row['to']}")
        assert answer["window"] == [row["from"], row["to"]]
        assert row["ranges"] == answer["ranges"], row["model"]


def click_position(page: Page, svg_selector: str, position: int, window: tuple[int, int]) -> None:
    """Click the pixel of ``position`` on a timeline showing ``window``."""
    box = page.locator(svg_selector).bounding_box()
    assert box is not None
    fraction = (position + 0.5 - window[0]) / (window[1] - window[0])
    page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)


def test_dashboard_draws_every_models_coverage_as_the_api_reports_it(stack: ApiStack, page: Page) -> None:
    incrementals = {m["id"] for m in stack.get("/models?type=incremental")["models"]}
    page.goto(stack.base + "/")
    rows = rows_of(page, "#groups")
    assert {r["model"] for r in rows} == incrementals
    assert_rows_match_the_api(stack, rows)
    assert any(r["status"] == "covered" for row in rows for r in row["ranges"])
    assert page.locator("#live[data-state=live]").count() == 1, "the event stream is connected"
    screenshot(page, "dashboard")

    first_from = rows[0]["from"]
    page.locator(".group .zoom [data-action=zoom-out]").first.click()
    page.wait_for_function("f => [...document.querySelectorAll('#groups svg.coverage')]"
                           ".every(s => Number(s.dataset.windowFrom) < f)", arg=first_from)
    zoomed = rows_of(page, "#groups")
    assert_rows_match_the_api(stack, zoomed)
    assert all(row["ranges"][0]["status"] == "missing" for row in zoomed), "before the sources begin: missing"
    assert page.locator(".group .zoom [data-action=fit]").first.get_attribute("aria-pressed") == "false"


def test_dag_page_shows_ranks_statuses_or_groups_and_lineage(stack: ApiStack, page: Page) -> None:
    dag = stack.get("/dag")
    page.goto(stack.base + "/dag")
    page.wait_for_selector("#dag[data-loaded=true]")
    drawn = page.eval_on_selector_all(".node", "els => els.map(e => [e.dataset.model, e.dataset.status])")
    assert sorted(map(tuple, drawn)) == sorted((n["id"], n["status"]) for n in dag["nodes"])
    transactions = stack.model("transactions")
    junction = page.locator(f'.junction[data-to="{transactions}"]')
    assert junction.count() == 1
    members = sorted((junction.get_attribute("data-members") or "").split())
    assert members == sorted([stack.source("raw_transactions"), stack.source("raw_transactions_alt")])
    assert page.locator(f'.edge.or[data-to="{transactions}"]').count() == 3  # two members in, one out
    screenshot(page, "dag")

    two_minute = stack.model("block_propagation_two_minute")
    page.hover(f'.node[data-model="{two_minute}"]')
    lit = set(page.eval_on_selector_all(".node.lit", "els => els.map(e => e.dataset.model)"))
    assert lit == {two_minute, stack.model("block_propagation_minute"), stack.source("beacon_blocks"),
                   stack.model("block_propagation_five_minute"), stack.model("entity_leaderboard")}
    screenshot(page, "dag-lineage")
    page.click(f'.node[data-model="{two_minute}"]')
    page.wait_for_url(f"**/models/{two_minute}")


def dependency_ids(tree: list[dict[str, Any]]) -> list[str]:
    return [i for d in tree for i in (d["id"], *dependency_ids(d.get("dependencies") or []))]


def test_model_page_aligns_dependencies_and_explains_a_clicked_position(stack: ApiStack, page: Page) -> None:
    two_minute, minute = stack.model("block_propagation_two_minute"), stack.model("block_propagation_minute")
    page.goto(f"{stack.base}/models/{two_minute}")
    rows = rows_of(page, "#timelines")
    assert [r["model"] for r in rows] == [two_minute, minute]
    assert rows[0]["from"] == rows[1]["from"] and rows[0]["to"] == rows[1]["to"], "one x scale"
    boxes = [page.locator(f'#timelines svg.coverage[data-model="{r["model"]}"]').bounding_box() for r in rows]
    assert boxes[0] and boxes[1] and (boxes[0]["x"], boxes[0]["width"]) == (boxes[1]["x"], boxes[1]["width"])
    assert_rows_match_the_api(stack, rows)
    assert page.locator("#rows-card").is_hidden(), "two_minute is not exposed: no Rows card"

    covered = next(r for r in rows[0]["ranges"] if r["status"] == "covered")
    target = covered["start"] + (covered["end"] - covered["start"]) // 3
    window = (rows[0]["from"], rows[0]["to"])
    click_position(page, f'#timelines svg.coverage[data-model="{two_minute}"]', target, window)
    view = page.wait_for_selector("#explain .explain[data-position]")
    assert view is not None
    position = int(view.get_attribute("data-position") or -1)
    assert covered["start"] <= position < covered["end"]
    answer = stack.get(f"/models/{two_minute}/explain?position={position}")
    assert answer["covered"] and view.get_attribute("data-ready") == str(answer["ready"]).lower()
    tree = page.eval_on_selector_all("#explain .tree li[data-model]", "els => els.map(e => e.dataset.model)")
    assert tree == dependency_ids(answer["dependencies"])
    rendered = page.wait_for_selector("pre[data-kind=rendered]")
    assert rendered is not None and f"timestamp_seconds({answer['interval'][0]})" in rendered.inner_text()
    page.wait_for_selector("#tasks:not([aria-busy])", timeout=SLOW_MS)  # the history is read from the admin tables
    assert page.locator("#tasks table[data-table=tasks] tbody tr").count() > 0, page.inner_text("#tasks")
    page.mouse.move(0, 0)  # no tooltip in the picture
    screenshot(page, "model", full_page=True)


def test_the_explain_view_says_why_a_position_cannot_run(stack: ApiStack, page: Page) -> None:
    minute = stack.model("block_propagation_minute")
    beyond = SOURCE_END + 600
    page.goto(f"{stack.base}/models/{minute}#position={beyond}")
    reason = page.wait_for_selector("#explain .reason[data-reason]")
    answer = stack.get(f"/models/{minute}/explain?position={beyond}")
    assert not answer["ready"] and answer["reason"]
    assert reason is not None and reason.get_attribute("data-reason") == answer["reason"]
    assert answer["reason"] in reason.inner_text()
    blocks = page.locator(f'#explain .tree li[data-model="{stack.source("beacon_blocks")}"]')
    assert blocks.get_attribute("data-covers") == "false" and "holes" in blocks.inner_text()
    screenshot(page, "model-explain-not-ready")


def test_a_rerun_needs_the_token_previews_then_reruns(stack: ApiStack, page: Page, page_errors: PageErrors) -> None:
    minute = stack.model("block_propagation_minute")
    page_errors.expected_failures.append(("/rerun", 401))  # (without the token, on purpose)
    dashboard = page.context.new_page()
    coverage_requests: list[str] = []
    dashboard.on("request", lambda r: coverage_requests.append(r.url) if f"/{minute}/coverage" in r.url else None)
    dashboard.goto(stack.base + "/")
    rows_of(dashboard, "#groups")
    dashboard.wait_for_selector("#live[data-state=live]")

    page.goto(f"{stack.base}/models/{minute}")
    row = rows_of(page, "#timelines")[0]
    # the model has checks: the page draws what it covers as intervals whose checks passed
    covered = next(r for r in row["ranges"] if r["status"] in ("covered", "passed"))
    window = (row["from"], row["to"])
    click_position(page, f'#timelines svg.coverage[data-model="{minute}"]', covered["start"] + 90, window)
    page.wait_for_selector("#explain .explain[data-position]")
    page.click("#rerun-open")
    form = page.locator("#rerun-form")
    start, end = int(form.locator("[name=start]").input_value()), int(form.locator("[name=end]").input_value())
    assert covered["start"] <= start < end <= covered["end"], "the dialog starts from the explained interval"

    form.locator("[name=token]").fill("not-the-token")
    page.click("#rerun-preview")
    page.wait_for_selector('#rerun-result .problem[data-status="401"]', timeout=SLOW_MS)
    assert page.locator("#rerun-confirm").is_disabled()
    screenshot(page, "rerun-refused")

    form.locator("[name=token]").fill(stack.token)
    page.click("#rerun-preview")
    shown = page.wait_for_selector("#rerun-result .preview", timeout=SLOW_MS)
    status, preview = stack.api(f"/models/{minute}/rerun", {"start": start, "end": end, "cascade": True,
                                                             "reason": "manual", "preview": True}, stack.token)
    assert status == 200 and preview["intervals"] > 0
    assert shown is not None and shown.get_attribute("data-intervals") == str(preview["intervals"])
    listed = page.eval_on_selector_all("#rerun-result table[data-affected] tbody tr td:first-child a",
                                       "els => els.map(e => e.title)")
    assert sorted(listed) == sorted(preview["affected"])
    screenshot(page, "rerun-preview")

    confirmed_ms = time.time() * 1000
    coverage_requests.clear()
    page.click("#rerun-confirm")
    success = page.wait_for_selector("#rerun-result .success-box", timeout=SLOW_MS)
    invalidation = success.get_attribute("data-invalidation") if success else None
    assert invalidation
    assert page.evaluate("sessionStorage.getItem('cbt.api.token')") == stack.token

    recorded = wait_until("the invalidation to be recorded", lambda: [
        i for i in stack.get(f"/invalidations?model={minute}")["invalidations"] if i["id"] == invalidation])
    assert (recorded[0]["start"], recorded[0]["end"]) == (start, end)
    wait_until("the range to run again", lambda: any(
        t["status"] == "success" and t["at_ms"] >= confirmed_ms and t["range"][0] < end and t["range"][1] > start
        for t in stack.get(f"/models/{minute}/tasks?limit=50")["tasks"]), timeout_s=180)
    again = [{"start": start, "end": end, "status": "covered"}]
    wait_until("the range to be covered again", lambda: stack.get(
        f"/models/{minute}/coverage?from={start}&to={end}")["ranges"] == again, timeout_s=180)

    def dashboard_refetched() -> bool:
        dashboard.wait_for_timeout(250)  # Playwright hands over a page's events only while one of its calls runs
        return bool(coverage_requests)

    wait_until("the open dashboard to refetch on pushed events", dashboard_refetched, timeout_s=30)
    dashboard.close()


def test_a_range_is_skipped_then_resumed_from_the_model_page(stack: ApiStack, page: Page) -> None:
    minute = stack.model("block_propagation_minute")
    url = f"{stack.base}/models/{minute}"
    page.goto(url)
    end = rows_of(page, "#timelines")[0]["to"]
    skipped = (end + 60, end + 120)  # ahead of the data: the timeline's window widens to show it

    def act(button: str, expected: str) -> None:
        page.click("#skip-open")
        form = page.locator("#skip-form")
        form.locator("[name=start]").fill(str(skipped[0]))
        form.locator("[name=end]").fill(str(skipped[1]))
        form.locator("[name=token]").fill(stack.token)
        page.click(button)
        page.wait_for_selector(f"#skip-result .success-box[data-skipped='{expected}']")
        page.goto(url)  # a fresh page: its window is the API's default one
        rows_of(page, "#timelines")

    drawn = f'#timelines svg.coverage[data-model="{minute}"] rect.range.skipped[data-start="{skipped[0]}"]'
    act("#skip-confirm", f"[[{skipped[0]},{skipped[1]}]]")
    rect = page.locator(drawn)
    assert rect.count() == 1 and rect.get_attribute("data-end") == str(skipped[1])
    assert {"start": skipped[0], "end": skipped[1], "status": "skipped"} in stack.get(
        f"/models/{minute}/coverage")["ranges"]
    screenshot(page, "model-skipped")

    act("#unskip-confirm", "[]")
    assert page.locator(drawn).count() == 0
    assert stack.get(f"/models/{minute}/coverage")["counts"]["skipped"] == 0

def test_failures_and_invalidations_pages_list_what_the_api_has(stack: ApiStack, page: Page) -> None:
    failures = stack.get("/failures")["failures"]
    page.goto(stack.base + "/failures")
    page.wait_for_selector("#failures[data-loaded=true]", timeout=SLOW_MS)  # read from the admin tables
    if failures:
        assert page.locator("table[data-table=failures] tbody tr").count() == len(failures)
    else:
        assert "No failures" in page.inner_text("#failures")
    screenshot(page, "failures")

    invalidations = stack.get("/invalidations")["invalidations"]
    page.goto(stack.base + "/invalidations")
    page.wait_for_selector("#invalidations[data-loaded=true]", timeout=SLOW_MS)
    if invalidations:
        assert page.locator("table[data-table=invalidations] tbody tr").count() == len(invalidations)
    else:
        assert "No invalidations" in page.inner_text("#invalidations")
    screenshot(page, "invalidations")


def test_changes_page_lists_every_version_the_api_has(stack: ApiStack, page: Page) -> None:
    incrementals = {m["id"] for m in stack.get("/models?type=incremental")["models"]}

    def every_incremental_holds_rows() -> dict[str, Any] | None:
        """A range an earlier test re-ran may be computing again (block_propagation_five_minute waits for its
        30 s forward fill)."""
        answer: dict[str, Any] = stack.get("/model-versions")
        return answer if all(v["holds"] for v in answer["versions"] if v["model"] in incrementals) else None

    body = wait_until("every incremental's version to hold what it computed", every_incremental_holds_rows,
                      timeout_s=120)
    assert body["recorded"] and {v["state"] for v in body["versions"]} == {"live"}, "a first deployment: all live"
    page.goto(stack.base + "/changes")
    page.wait_for_selector("#versions[data-loaded=true]", timeout=SLOW_MS)
    shown = page.eval_on_selector_all("table[data-table=versions] tbody tr",
                                      "trs => trs.map(tr => [...tr.querySelectorAll('td')].slice(1, 3).map(td => "
                                      "td.textContent))")
    assert sorted(map(tuple, shown)) == sorted((str(v["version"]), v["state"]) for v in body["versions"])
    held = {v["model"]: v["holds"] for v in body["versions"]}
    assert all(not held[m] for m in held if m not in incrementals), "a scheduled model's runs are not intervals"
    assert "No changes" in page.inner_text("#changes"), "the api's files are the deployed ones"
    screenshot(page, "changes")


def test_an_unknown_model_page_says_so(stack: ApiStack, page: Page, page_errors: PageErrors) -> None:
    page_errors.expected_failures.append(("/api/v1/models/nope.nothing", 404))
    page.goto(f"{stack.base}/models/nope.nothing")
    problem = page.wait_for_selector('#model-error .problem[data-status="404"]')
    assert problem is not None and "nope.nothing" in problem.inner_text()


SHOWN_ROWS = """() => [...document.querySelectorAll('#rows table[data-table=rows] tbody tr')].map(tr =>
  Object.fromEntries([...tr.querySelectorAll('td')].map(td => [td.dataset.column, td.textContent])))"""


def rows_page(page: Page, filters: str, order_by: str, number: int = 1) -> list[dict[str, str]]:
    """Apply ``filters`` and ``order_by`` in the Rows card (or, for ``number`` > 1, click Next page) and read the
    rows it shows once page ``number`` is in."""
    if number == 1:
        page.fill("#rows-form [name=filter]", filters)
        page.fill("#rows-form [name=order_by]", order_by)
        page.click("#rows-form button[type=submit]")
    else:
        page.click("#rows-next")
    page.wait_for_selector(f'#rows[data-page="{number}"]:not([aria-busy]) table[data-table=rows]')
    shown: list[dict[str, str]] = page.evaluate(SHOWN_ROWS)
    return shown


def test_an_exposed_models_rows_are_filtered_ordered_and_paged(stack: ApiStack, page: Page,
                                                               page_errors: PageErrors) -> None:
    minute = stack.model("block_propagation_minute")
    page_errors.expected_failures.append(("/api/v1/tables/", 400))  # (the bad filter, on purpose)
    page.goto(f"{stack.base}/models/{minute}")
    page.wait_for_selector('#rows[data-page="1"]:not([aria-busy]) table[data-table=rows]')
    first = stack.get(f"/tables/{minute}?page_size=25")["rows"]
    shown = page.evaluate(SHOWN_ROWS)
    assert [(r["slot"], r["block_root"]) for r in shown] == [(str(r["slot"]), r["block_root"]) for r in first]
    assert set(shown[0]) == set(first[0]), "a column per field of the rows"

    slots = sorted({r["slot"] for r in first})
    low, high = slots[2], slots[6]
    narrowed = rows_page(page, f"slot_gte={low}&slot_lt={high}", "slot desc")
    got = [int(r["slot"]) for r in narrowed]
    assert got and all(low <= s < high for s in got) and got == sorted(got, reverse=True), got
    assert set(got) == {s for s in slots if low <= s < high}
    page.mouse.move(0, 0)
    docs_screenshot(page, "model-rows", element="#rows-card")

    page.fill("#rows-form [name=filter]", "slot_gtx=1")
    page.click("#rows-form button[type=submit]")
    refused = page.wait_for_selector('#rows .problem[data-status="400"]')
    status, problem = stack.api(f"/tables/{minute}?slot_gtx=1")
    assert status == 400 and refused is not None and problem["detail"] in refused.inner_text()
    assert page.locator("#rows-next").is_disabled()

    one = rows_page(page, "page_size=4", "slot")
    page.fill("#rows-form [name=filter]", "slot_gtx=1")  # typed, not applied: Next goes on with the applied query
    two = rows_page(page, "", "", number=2)
    assert len(one) == 4 and two, "four rows, then more"
    keys = [{(r["slot"], r["block_root"]) for r in rows} for rows in (one, two)]
    assert int(two[0]["slot"]) >= int(one[-1]["slot"]) and not keys[0] & keys[1], "the rows after the first page"
    assert page.locator("#rows-first").is_enabled()


def box_centre(page: Page, selector: str) -> tuple[float, float, float]:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, box["width"]


def test_dag_search_zooms_to_a_model_with_a_minimap_and_a_remembered_direction(stack: ApiStack, page: Page) -> None:
    nodes = stack.get("/dag")["nodes"]
    page.goto(stack.base + "/dag")
    page.wait_for_selector("#dag[data-loaded=true]")
    assert page.locator("#dag-minimap .mm-node").count() == len(nodes) and page.locator("#dag-minimap .mm-view").count()
    assert page.get_attribute("#dag svg", "data-direction") == "TB"
    two_minute = stack.model("block_propagation_two_minute")
    found = f'.node[data-model="{two_minute}"]'
    width_fitted = box_centre(page, found)[2]

    page.fill("#dag-search-input", "two_min")
    page.press("#dag-search-input", "Enter")
    page.wait_for_selector(f".node.found[data-model=\"{two_minute}\"]")
    x, y, width = box_centre(page, found)
    frame_x, frame_y, _ = box_centre(page, "#dag")
    assert abs(x - frame_x) < 4 and abs(y - frame_y) < 4, "the found model is centred"
    assert width > width_fitted * 1.2, "and zoomed in"
    assert two_minute in page.inner_text("#dag-search-result")
    assert page.locator(f'#dag-minimap .mm-node.found[data-model="{two_minute}"]').count() == 1
    docs_screenshot(page, "dag-search")

    before = page.get_attribute("#dag svg", "viewBox")
    page.locator("#dag-minimap svg").click(position={"x": 4, "y": 4})
    assert page.get_attribute("#dag svg", "viewBox") != before, "a click on the minimap moves the view"

    source = f'.node[data-model="{stack.source("beacon_blocks")}"]'
    minute = f'.node[data-model="{stack.model("block_propagation_minute")}"]'
    page.click("[data-direction=LR]")
    page.click("[data-action=fit]")
    assert page.get_attribute("#dag svg", "data-direction") == "LR"
    assert box_centre(page, source)[0] < box_centre(page, minute)[0], "sources on the left"
    page.reload()
    page.wait_for_selector("#dag[data-loaded=true]")
    assert page.get_attribute("#dag svg", "data-direction") == "LR", "the direction is remembered"
    assert page.get_attribute("[data-direction=LR]", "aria-checked") == "true"
    docs_screenshot(page, "dag-left-right")
    page.click("[data-direction=TB]")
    assert box_centre(page, source)[1] < box_centre(page, minute)[1], "sources on top again"


def schedule_line(page: Page, model: str) -> tuple[str, str]:
    row = page.locator("#schedules tbody tr", has=page.locator(f'.next-run[data-model="{model}"]'))
    return row.locator(".last-run").inner_text(), row.locator(".next-run").inner_text()


def test_header_search_schedules_and_dark_theme(stack: ApiStack, browser: Browser, page_errors: PageErrors) -> None:
    context = browser.new_context(viewport=VIEWPORT, color_scheme="dark")  # type: ignore[arg-type]
    page = context.new_page()
    page.on("pageerror", lambda error: page_errors.errors.append(f"uncaught: {error}"))
    page.on("console", page_errors.console)
    try:
        page.goto(stack.base + "/")
        assert page.get_attribute("html", "data-theme") == "dark", "the system's dark setting is followed"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(11, 17, 32)", background

        validator = stack.model("validator_entities")
        page.wait_for_selector(f'#schedules .next-run[data-model="{validator}"]', timeout=SLOW_MS)
        for _ in range(3):  # a run may land between the two reads: read both again
            answer = next(m for m in stack.get("/schedules")["models"] if m["model"] == validator)
            last, upcoming = schedule_line(page, validator)
            ran = answer["last_run"] and time.strftime("%H:%M:%S", time.gmtime(answer["last_run"]["scheduled_unix"]))
            if ran and ran in last and time.strftime("%H:%M:%S", time.gmtime(answer["next_unix"])) in upcoming:
                break
            time.sleep(2)
        else:
            raise AssertionError(f"dashboard says {last!r} / {upcoming!r}, the api {answer}")
        assert answer["schedule"] == "@every 1m" and answer["next_unix"] % 60 == 0
        assert upcoming.startswith(("in ", "due now")), upcoming
        leaderboard = schedule_line(page, stack.model("entity_leaderboard"))[1]
        assert leaderboard.startswith(("in ", "due now")) and int(leaderboard.split(":")[-2]) % 5 == 0, leaderboard
        page.mouse.move(0, 0)
        docs_screenshot(page, "dark-dashboard", full_page=True)

        page.select_option("#theme-choice", "light")
        assert page.get_attribute("html", "data-theme") == "light", "the toggle overrides the system"
        page.reload()
        assert page.get_attribute("html", "data-theme") == "light", "and is remembered"
        assert page.evaluate("localStorage.getItem('cbt.theme')") == "light"
        page.select_option("#theme-choice", "system")
        assert page.get_attribute("html", "data-theme") == "dark"

        two_minute = stack.model("block_propagation_two_minute")
        page.click("h1")  # out of the theme control: "/" there is not a shortcut
        page.keyboard.press("/")
        page.keyboard.type("two_min")
        page.wait_for_selector(f'#model-search-list [role=option][data-model="{two_minute}"]')
        assert page.get_attribute("#model-search", "aria-expanded") == "true"
        docs_screenshot(page, "header-search")
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/models/{two_minute}")
        page.wait_for_selector("#timelines svg.coverage")
        page.goto(f"{stack.base}/models/{stack.model('block_propagation_minute')}#position={SOURCE_END - 200}")
        page.wait_for_selector("#explain .explain[data-position]")
        page.mouse.move(0, 0)
        docs_screenshot(page, "dark-model", full_page=True)
        page.goto(stack.base + "/dag")
        page.wait_for_selector("#dag[data-loaded=true]")
        screenshot(page, "dark-dag")
    finally:
        context.close()
