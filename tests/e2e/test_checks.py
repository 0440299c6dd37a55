"""Interval checks on real services (docs/checks.md): a poisoned source row makes one interval of the example
pipeline's first model fail its check — not published, not covered, its dependents wait, the verdict and a sample
recorded; an operator accepts it anyway (published with the row, audited, dependents proceed); once the source is
repaired and an invalidation announces it, the interval is computed again, passes, and every table equals the
oracle."""

from __future__ import annotations

import json
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.cli import main
from cbt.dev.generator import SourceTables, write_blocks, write_broken_clock_block
from cbt.dev.pipeline import free_port
from cbt.scheduling import coverage as cov
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, PageErrors, screenshot
from tests.conftest import Endpoints
from tests.e2e.api_stack import PIPELINE, call, start_api
from tests.e2e.cluster import SparkBackend
from tests.e2e.harness import PROJECT, T0, Deployment, isolated_deployment
from tests.e2e.test_pipeline import LAST_SLOT_END, SOURCE_END, assert_equals_oracle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
POISON_SLOT_TIME = T0 + 312
"""The slot whose source gets a row the check ``seen_after_slot_start`` refuses."""
REPAIRED = (T0 + 300, T0 + 360)
"""The source range rewritten upstream to repair it."""
CUT = T0 + 600
"""The new check ``before_the_cut`` refuses rows of slots from here on."""
TOKEN = f"checks-{uuid.uuid4().hex}"
"""The api's write token (``cbt checks accept``)."""


def look_at_the_model_page(dep: Deployment, model: str, held_start: int) -> None:
    """The web UI's model page (Debian's Chromium, as tests/browser drives it): the timeline draws the held interval
    in its own colour and the intervals that passed their checks in theirs, and clicking the held one shows the
    failed verdict with the violating row."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT).new_page()  # type: ignore[arg-type]
        errors = PageErrors()
        page.on("pageerror", lambda error: errors.errors.append(f"uncaught: {error}"))
        page.on("console", errors.console)
        page.goto(f"http://{dep.config.api.addr}/models/{model}#position={held_start}")
        page.wait_for_selector(f'svg.coverage[data-model="{model}"] rect.range[data-status="held"]', timeout=60_000)
        page.wait_for_selector("#checks .checks-table", timeout=60_000)
        page.wait_for_selector(f'svg.coverage[data-model="{model}"] rect.range[data-status="passed"]', timeout=10_000)
        card = page.locator("#checks-card").inner_text()
        screenshot(page, "checks-held-interval", full_page=True)
        browser.close()
    assert "broken-clock" in card and "seen_after_slot_start" in card and "held" in card, card
    assert not errors.errors, errors.errors


def cbt_out(dep: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *argv: str) -> str:
    """What a ``cbt`` command prints, run as an operator runs it against the deployment."""
    for name, value in dep.overrides.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def cbt_status(dep: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """``cbt status --json``."""
    return json.loads(cbt_out(dep, monkeypatch, capsys, "status", "--json"))


def test_a_poisoned_interval_is_held_with_its_dependents_until_the_source_is_repaired(
        dep_quiet: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    dep = dep_quiet
    out = dep.output_db
    minute, two, five = (f"{out}.block_propagation_{name}" for name in ("minute", "two_minute", "five_minute"))

    (held,) = dep.state.holds.held([minute])[minute]
    assert held.start <= POISON_SLOT_TIME < held.end and "seen_after_slot_start" in held.reason
    assert cov.clip(dep.coverage(minute), (held.start, held.end)) == (), dep.coverage(minute)
    assert len(dep.coverage(minute)) == 2, "covered on both sides of the held interval"
    assert dep.spark.sql(f"SELECT count(*) AS n FROM {minute} WHERE slot_start_date_time >= "
                         f"timestamp_seconds({held.start}) AND slot_start_date_time < "
                         f"timestamp_seconds({held.end})").first()["n"] == 0, "its rows were not published"
    for dependent in (two, five):
        assert not cov.covers(dep.coverage(dependent), (POISON_SLOT_TIME, POISON_SLOT_TIME + 1)), \
            f"{dependent} waits on the held interval"

    results = admin_from_config(dep.spark, dep.config).check_results_record().check_results([minute], limit=10_000)
    failed = [r for r in results if r.status == "failed"]
    assert {(r.position, r.end, r.check, r.violations) for r in failed} == {
        (held.start, held.end, "seen_after_slot_start", 1)}, failed
    assert json.loads(failed[0].sample[0])["block_root"] == "broken-clock"
    kept = dep.spark.sql(f"SELECT block_root, cbt_start, cbt_end FROM {minute}__cbt_failed").collect()
    assert {(r["cbt_start"], r["cbt_end"]) for r in kept} == {(held.start, held.end)} and "broken-clock" in {
        r["block_root"] for r in kept}, "the failed interval's rows are kept for inspection"
    assert {r.status for r in results if r.position != held.start} == {"passed"}
    answer = api_checks(dep, minute, "?status=failed")
    assert answer["checks"] == ["not_null_block_root_proposer_index", "seen_after_slot_start"]
    assert answer["held"] == [{"range": [held.start, held.end], "version": held.version, "reason": held.reason,
                               "accepted_by": None}]
    assert [(r["range"], r["check"], r["violations"]) for r in answer["results"]] == [
        ([held.start, held.end], "seen_after_slot_start", 1)]
    assert len(api_checks(dep, minute, f"?from={held.start}&to={held.end}")["results"]) == 2, "both checks' verdicts"
    _, _, timeline = call(f"http://{dep.config.api.addr}/api/v1/models/{minute}/coverage")
    assert {"start": held.start, "end": held.end, "status": "held"} in timeline["ranges"], timeline

    shown = cbt_out(dep, monkeypatch, capsys, "checks", "show", minute, str(POISON_SLOT_TIME))
    assert f"[{held.start}, {held.end})" in shown and "FAILED  seen_after_slot_start (error): 1 violation" in shown
    assert "broken-clock" in shown and "passed  not_null_block_root_proposer_index" in shown
    assert f"HELD [{held.start}, {held.end})" in cbt_out(dep, monkeypatch, capsys, "checks", "show", minute)

    look_at_the_model_page(dep, minute, held.start)

    plan = json.loads(cbt_out(dep, monkeypatch, capsys, "plan", "--json"))
    assert [h["range"] for h in plan["held_by_checks"][minute]] == [[held.start, held.end]], "plan says why not"
    _, _, why = call(f"http://{dep.config.api.addr}/api/v1/models/{minute}/explain?position={held.start}")
    assert not why["ready"] and "seen_after_slot_start" in why["reason"], why

    status = cbt_status(dep, monkeypatch, capsys)
    assert status["held_by_checks"] == {minute: [{"range": [held.start, held.end], "version": held.version,
                                                  "reason": held.reason, "accepted_by": None}]}
    counted = dep.series("worker", "cbt_check_results_total")
    assert counted[frozenset({("model", minute), ("check", "seen_after_slot_start"), ("status", "failed")})] >= 1

    accept_it_anyway(dep, monkeypatch, capsys, minute, held.start, held.end, (two, five))

    write_blocks(dep.spark, SourceTables(dep.source_db), *REPAIRED)  # the upstream repair
    event_id = publish_invalidation(dep.config.kafka.bootstrap_servers, "beacon_blocks", *REPAIRED,
                                    reason="repaired a broken clock's rows", source="e2e",
                                    topic_prefix=dep.config.kafka.topic_prefix)
    dep.wait_applied(event_id)
    dep.wait_quiet(LAST_SLOT_END, timeout_s=600)

    assert_equals_oracle(dep)
    assert dep.state.holds.held([minute]) == {}
    assert "held_by_checks" not in cbt_status(dep, monkeypatch, capsys)
    assert api_checks(dep, minute)["held"] == []

    a_new_check_runs_over_the_published_intervals_only(dep, minute)


def a_new_check_runs_over_the_published_intervals_only(dep: Deployment, minute: str) -> None:
    """A check added to the model's file is metadata: once the coordinator and the worker restart with the file,
    only that check runs over the intervals the model published (re-check tasks); nothing is recomputed, written or
    held, and its verdicts are recorded — failed for the intervals the new rule refuses."""
    covered_before = dep.coverage(minute)
    commits = dep.spark.sql(f"DESCRIBE HISTORY {minute}").count()
    path = Path(json.loads(dep.overrides["CBT__MODELS__TRANSFORMATIONS__PATHS"])[0]) / "block_propagation_minute.sql"
    text = path.read_text()
    path.write_text(text.replace("    name: seen_after_slot_start\n", "    name: seen_after_slot_start\n"
                                 f"  - expression: slot_start_date_time < timestamp_seconds({CUT})\n"
                                 "    name: before_the_cut\n", 1))
    for service in ("coordinator", "worker"):
        dep.procs.kill(service, signal.SIGTERM)
        dep.procs.start(service)
    record = admin_from_config(dep.spark, dep.config).check_results_record()
    deadline = time.monotonic() + 240
    while True:
        rechecked = [r for r in record.check_results([minute], limit=10_000) if r.task_id.startswith("recheck:")]
        if rechecked and cov.covers(cov.merge([(r.position, r.end) for r in rechecked]), covered_before[0]):
            break
        assert time.monotonic() < deadline, f"no re-check covered {covered_before}; logs in {dep.log_dir}"
        time.sleep(1.0)
    assert {r.check for r in rechecked} == {"before_the_cut"}, "only the new check runs"
    assert all(r.status == "failed" for r in rechecked if r.position >= CUT)
    assert all(r.status == "passed" for r in rechecked if r.end <= CUT)
    assert dep.coverage(minute) == covered_before and dep.state.holds.held([minute]) == {}, "nothing held"
    assert dep.spark.sql(f"DESCRIBE HISTORY {minute}").count() == commits, "nothing recomputed or written"


def accept_it_anyway(dep: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                     minute: str, start: int, end: int, dependents: tuple[str, ...]) -> None:
    """``cbt checks accept``: through the api, with a write token and an audit row; the interval is planned again and
    published with the violating row, its verdict recorded ``accepted``, and its dependents proceed."""
    monkeypatch.setenv("CBT_API_TOKEN", TOKEN)
    said = cbt_out(dep, monkeypatch, capsys, "checks", "accept", minute, "--start", str(start), "--end", str(end),
                   "--reason", "the vendor confirmed the clock")
    assert f"ACCEPTED [{start}, {end})" in said, said
    dep.wait_quiet(LAST_SLOT_END, timeout_s=300)
    assert cov.covers(dep.coverage(minute), (start, end)) and dep.state.holds.held([minute]) == {}
    assert dep.spark.sql(f"SELECT count(*) AS n FROM {minute} WHERE block_root = 'broken-clock'").first()["n"] == 1
    for dependent in dependents:
        assert cov.covers(dep.coverage(dependent), (POISON_SLOT_TIME, POISON_SLOT_TIME + 1)), dependent
    accepted = api_checks(dep, minute, "?status=accepted")["results"]
    assert [(r["range"], r["check"]) for r in accepted] == [([start, end], "seen_after_slot_start")], accepted
    _, _, audit = call(f"http://{dep.config.api.addr}/api/v1/audit")
    (action,) = [a for a in audit["actions"] if a["action"] == "checks-accept"]
    assert action["target"] == minute and action["detail"]["intervals"] == [[start, end]], action
    assert action["detail"]["reason"] == "the vendor confirmed the clock"


@pytest.fixture
def dep_quiet(endpoints: Endpoints, spark_backend: SparkBackend, tmp_path: Path) -> Iterator[Deployment]:
    """The example pipeline, over its own copy of the model files and a poisoned source, with an api, run until
    nothing more can be planned."""
    port, files = free_port(), tmp_path / "transformations"
    shutil.copytree(PROJECT / "models" / "transformations", files)
    with isolated_deployment(endpoints.kafka_bootstrap, endpoints.redis_url, spark_backend.session,
                             spark_backend.remote, f"tck{uuid.uuid4().hex[:8]}",
                             {"CBT__API__ADDR": f"127.0.0.1:{port}", "CBT__API__AUTH__TOKENS": json.dumps([TOKEN]),
                              "CBT__MODELS__TRANSFORMATIONS__PATHS": json.dumps([str(files)])}) as dep:
        dep.create_tables()
        dep.write_entities()
        dep.write_sources(T0, SOURCE_END)
        write_broken_clock_block(dep.spark, SourceTables(dep.source_db), POISON_SLOT_TIME)
        dep.start(*PIPELINE)
        start_api(dep.procs, "")
        dep.wait_quiet(LAST_SLOT_END, timeout_s=720)
        yield dep


def api_checks(dep: Deployment, model: str, query: str = "") -> Any:
    status, _, body = call(f"http://{dep.config.api.addr}/api/v1/models/{model}/checks{query}")
    assert status == 200, body
    return body
