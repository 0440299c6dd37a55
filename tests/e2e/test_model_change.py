"""A model changed on a running pipeline (issue 36): the middle model of the propagation chain gets a new formula for
one column, the services are restarted with the edited files — all a user does — and exactly what the change
reaches is recomputed: the model and the descendant that reads that column, over everything they covered; their
parent and the models beside them compute nothing again. ``cbt plan`` says so before the restart.

The middle model's table is the product's (a SELECT written ``replace``), so its new version is built beside it
(``…__cbt_v2``) while readers keep the old one: a reader sampling it the whole time, through SQL and as the read API
reads it, never sees the two definitions at once. At the switch the model's name moves to the build's files in one
catalog step, and the descendant — written by its own statements (strategy ``sql``), so recomputed in place — re-runs
from the new rows. Afterwards every table
equals SQL written here for the new definitions. A model added with the same deploy has no DDL: the product creates
its table from its query."""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.events import EventRecorder
from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.switch import location
from cbt.api.tables.delta_rows import FOLDERS_TTL_S, DeltaRows
from cbt.api.tables.routes import read_page
from cbt.api.tables.row_query import TokenSigner
from cbt.config.settings import TablesApiConfig, load_config
from cbt.contract.messages import IntervalCompleted
from cbt.contract.topics import Topics
from cbt.dev.pipeline import ServiceProcesses
from cbt.models.loader import load_models
from cbt.models.spec import Expose
from cbt.service import model_changes
from tests.conftest import Endpoints
from tests.e2e import oracle as o
from tests.e2e.cluster import SparkBackend
from tests.e2e.harness import CONFIG, PROJECT, T0, Deployment, isolated_deployment
from tests.e2e.test_pipeline import LAST_SLOT_END, SOURCE_END

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
MIDDLE = "block_propagation_two_minute"
OLD_CLASS, NEW_CLASS = "WHEN avg_propagation_ms < 2000 THEN 'fast'", "WHEN avg_propagation_ms < 2500 THEN 'fast'"
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator")
SIGNER = TokenSigner(b"t" * 32, 3600)


def two_minute_v2(src: str, out: str, span: o.Range) -> str:
    return o.two_minute(src, out, span).replace("avg_propagation_ms < 2000", "avg_propagation_ms < 2500")


def five_minute_v2(src: str, out: str, span: o.Range) -> str:
    return o.five_minute(src, out, span).replace("avg_propagation_ms < 2000", "avg_propagation_ms < 2500")


ADDED = "block_rows_minute"
ADDED_FILE = """---
# Added with the change; no DDL file: the product creates its table from this query.
type: incremental
table: block_rows_minute
interval: {max: 60, min: 60, type: timestamp}
schedules: {forwardfill: "@every 5s", backfill: "@every 5s"}
dependencies:
  - "{{external}}.beacon_blocks"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT slot, slot_start_date_time, count(*) AS client_rows
FROM {{ dep["{{external}}"].beacon_blocks.from }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY slot, slot_start_date_time
"""


def rows_minute(src: str, _out: str, span: o.Range) -> str:
    return f"""SELECT slot, slot_start_date_time, count(*) AS client_rows FROM {o.q(src, 'beacon_blocks')}
               WHERE {o.between('slot_start_date_time', span)} GROUP BY slot, slot_start_date_time"""


EDITED = o.Pipeline(o.EXAMPLE.externals, {
    **o.EXAMPLE_MODELS,
    MIDDLE: o.Expected(two_minute_v2, o.Interval(120, 120), all_of=("block_propagation_minute",)),
    "block_propagation_five_minute": o.Expected(five_minute_v2, o.Interval(300, 120), all_of=(MIDDLE,)),
    ADDED: o.Expected(rows_minute, o.Interval(60, 60), all_of=("beacon_blocks",)),
}, {})

ROLLED_BACK = o.Pipeline(o.EXAMPLE.externals, {
    **o.EXAMPLE_MODELS, ADDED: o.Expected(rows_minute, o.Interval(60, 60), all_of=("beacon_blocks",))}, {})


def test_a_changed_column_recomputes_the_model_and_the_descendant_that_reads_it_only(
        endpoints: Endpoints, spark_backend: SparkBackend, tmp_path: Path) -> None:
    files = tmp_path / "transformations"
    with caught_up(endpoints, spark_backend, files) as (dep, tag):
        middle = files / f"{MIDDLE}.sql"
        middle.write_text(middle.read_text().replace(OLD_CLASS, NEW_CLASS))
        assert_plan_says_what_a_deployment_recomputes(dep)
        (files / f"{ADDED}.sql").write_text(ADDED_FILE)
        assert not dep.spark.catalog.tableExists(f"{dep.output_db}.{ADDED}")

        events = EventRecorder(endpoints.kafka_bootstrap, [Topics(f"{tag}.").interval_completed], f"{tag}.test")
        events.start()
        reader = VersionSampler(dep, f"{dep.output_db}.{MIDDLE}")
        assert reader.sample() == "old", "the band of rows the change reclassifies holds old rows before the deploy"
        reader.start()
        restarted_ms = int(time.time() * 1000)
        try:
            dep.start(*SERVICES)
            wait_for_reruns(dep, events, ("block_propagation_five_minute",), restarted_ms)
            dep.models = load_models(load_config(CONFIG, environ={**dep.overrides}))  # (the added model too)
            dep.wait_quiet(LAST_SLOT_END)
            time.sleep(1.0)  # (the last completions reach the recorder)
        finally:
            events.stop()
            reader.stop()

        assert reader.samples and set(reader.samples) <= {"old", "new"}, f"a reader saw both versions at once: " \
            f"{[s for s in reader.samples if s not in ('old', 'new')][:5]}"
        assert reader.samples[0] == "old" and reader.samples[-1] == "new", reader.samples
        assert set(reader.api_samples) <= {"old", "new"}, f"a read API reader saw both versions at once: " \
            f"{[s for s in reader.api_samples if s not in ('old', 'new')][:5]}"
        assert reader.api_samples[0] == "old" and reader.api_samples[-1] == "new", reader.api_samples
        assert str(location(dep.spark, f"{dep.output_db}.{MIDDLE}")).endswith(f"/{MIDDLE}__cbt_v2"), \
            "the switch moved the name to the build's files: no row copied"
        assert not dep.spark.catalog.tableExists(f"{dep.output_db}.{MIDDLE}__cbt_v2"), "the build is dropped"

        incrementals = [m.id for m in load_models(load_config(CONFIG, environ={**dep.overrides})).incrementals]
        verdict = o.IndependentOracle(dep.spark, dep.source_db, dep.output_db, EDITED).verdict(
            {m.split(".")[1]: dep.coverage(m) for m in incrementals})
        assert verdict["holds"], verdict["problems"]
        after = done_since(events, restarted_ms)
        before = [c for c in done_since(events, 0) if c.completed_at_ms < restarted_ms]
        versions = ({c.version for c in before if c.model.endswith(f".{MIDDLE}")},
                    {c.version for c in after if c.model.endswith(f".{MIDDLE}__cbt_v2")})
        assert len(versions[0]) == len(versions[1]) == 1 and versions[0] != versions[1] and None not in versions[1], \
            f"every completion says which version computed it: {versions}"
        assert recorded_versions(dep, MIDDLE) == versions[1], "the admin rows say the new version computed the table"
        reruns = [c for c in after if c.direction == "rerun"]
        assert {c.model.split(".")[1] for c in reruns} <= {MIDDLE, "block_propagation_five_minute"}
        assert any(c.model.endswith(".block_propagation_five_minute") for c in reruns)
        head = sum(c.interval or 0 for c in reruns if c.model.endswith(f".{MIDDLE}"))
        assert head <= 120, f"the middle model re-ran more than the interval its build left at the head: {head}"
        others = {c.task_id for c in after if c.direction != "rerun" and c.position is not None
                  and not c.model.endswith((f".{ADDED}", f".{MIDDLE}__cbt_v2"))}
        assert not others, f"intervals other than the change's build and re-runs ran after the restart: " \
                           f"{sorted(others)}"

        rolled_back = subprocess.run([sys.executable, "-m", "cbt.cli", "rollback", MIDDLE, "--config", str(CONFIG)],
                                     env={**os.environ, **dep.overrides}, capture_output=True, text=True, timeout=300)
        assert rolled_back.returncode == 0, rolled_back.stdout + rolled_back.stderr
        assert f"{dep.output_db}.{MIDDLE} version 1 live again" in rolled_back.stdout, rolled_back.stdout
        assert reader.sample() == "old", "the name is back on the old files in one step, nothing recomputed"
        time.sleep(12.0)  # (the leader reads the versions record again every 10 s)
        dep.wait_quiet(LAST_SLOT_END)
        verdict = o.IndependentOracle(dep.spark, dep.source_db, dep.output_db, ROLLED_BACK).verdict(
            {m.split(".")[1]: dep.coverage(m) for m in incrementals})
        assert verdict["holds"], verdict["problems"]
        assert recorded_versions(dep, MIDDLE) == versions[0], "and the old one again after the rollback"


def recorded_versions(dep: Deployment, table: str) -> set[str | None]:
    """The versions the admin table's live rows of ``table`` say computed them."""
    model_id = f"{dep.output_db}.{table}"
    return set(admin_from_config(dep.spark, load_config(CONFIG, environ={**dep.overrides})).version_coverage(
        [model_id])[model_id])


@contextmanager
def caught_up(endpoints: Endpoints, spark_backend: SparkBackend, files: Path) -> Iterator[tuple[Deployment, str]]:
    """A deployment of the example pipeline over its own copy of the model files (``files``, edited by the test),
    caught up with the source data and stopped; and its tag."""
    shutil.copytree(PROJECT / "models" / "transformations", files)
    tag = f"tm{uuid.uuid4().hex[:8]}"
    paths = {"CBT__MODELS__TRANSFORMATIONS__PATHS": f"[{files}]"}
    with isolated_deployment(endpoints.kafka_bootstrap, endpoints.redis_url, spark_backend.session,
                             spark_backend.remote, tag, paths) as dep:
        dep.create_tables()
        dep.write_entities()
        dep.write_sources(T0, SOURCE_END)
        dep.start(*SERVICES)
        dep.wait_quiet(LAST_SLOT_END)
        dep.stop()
        yield dep, tag


class VersionSampler:
    """Reads the middle model's table over and over, through Spark SQL and as the api's read API reads it (delta-rs
    on the table's files, found through the versions record): the rows whose average lies where the two definitions
    disagree ([2000, 2500) ms) are all ``fast`` under the new one and none under the old one; a sample with some of
    each saw both versions at once."""

    def __init__(self, dep: Deployment, table: str) -> None:
        self.dep, self.table = dep, table
        self.samples: list[str] = []
        self.api_samples: list[str] = []
        config = load_config(CONFIG, environ={**dep.overrides})
        warehouse = str(dep.spark.conf.get("spark.sql.warehouse.dir")).removeprefix("file:")
        self._rows = DeltaRows(TablesApiConfig(warehouse=warehouse), Path("."),
                               functools.partial(model_changes.live_folders, config))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def api_sample(self) -> str:
        page = read_page(self._rows, SIGNER, self.table, Expose(), [
            ("avg_propagation_ms_gte", "2000"), ("avg_propagation_ms_lt", "2500")], 10_000, None, None)
        band, fast = len(page["rows"]), sum(r["propagation_class"] == "fast" for r in page["rows"])
        assert band >= 2, f"too few rows where the definitions disagree through the read API: {band}"
        return {0: "old", band: "new"}.get(fast, f"{fast} of {band} new")

    def sample(self) -> str:
        row = self.dep.spark.sql(f"""SELECT count(*) AS band, count_if(propagation_class = 'fast') AS fast
            FROM {self.table} WHERE avg_propagation_ms >= 2000 AND avg_propagation_ms < 2500""").first()
        assert row is not None and row["band"] >= 2, f"too few rows where the definitions disagree: {row}"
        return {0: "old", row["band"]: "new"}.get(row["fast"], f"{row['fast']} of {row['band']} new")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        time.sleep(FOLDERS_TTL_S)  # (the read API reads where the live version's files are this often)
        self.samples.append(self.sample())
        self.api_samples.append(self.api_sample())

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.samples.append(self.sample())
            self.api_samples.append(self.api_sample())


def assert_plan_says_what_a_deployment_recomputes(dep: Deployment) -> None:
    config = load_config(CONFIG, environ={**dep.overrides})
    models = load_models(config)
    changes = model_changes.to_json(model_changes.compare(
        config, models, {m.id: dep.coverage(m.id) for m in models.incrementals}))
    middle = f"{dep.output_db}.{MIDDLE}"
    assert changes["changed"] == [{"id": middle, "category": "breaking",
                                   "reasons": ["column propagation_class: expression changed"]}]
    assert [r["id"].split(".")[1] for r in changes["recompute"]] == [
        MIDDLE, "block_propagation_five_minute", "entity_leaderboard"], "the scheduled reader: at its next run"


def wait_for_reruns(dep: Deployment, events: EventRecorder, models: tuple[str, ...], since_ms: int,
                    timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(any(c.model.endswith(f".{m}") and c.direction == "rerun" for c in done_since(events, since_ms))
                  for m in models):
        assert not dep.procs.exited(), f"services exited: {dep.procs.exited()}; logs in {dep.log_dir}"
        assert time.monotonic() < deadline, f"no re-run of {models} after the restart; logs in {dep.log_dir}"
        time.sleep(0.5)


def done_since(events: EventRecorder, since_ms: int) -> list[IntervalCompleted]:
    return [s.message for s in list(events.completed)
            if isinstance(s.message, IntervalCompleted) and s.message.completed_at_ms >= since_ms]


FIRST, FORWARD_FROM = "block_propagation_minute", T0 + 300
ADDED_COLUMN = ("max(propagation_slot_start_diff) AS max_propagation_ms\n",
                "max(propagation_slot_start_diff) AS max_propagation_ms,\n  count(*) AS observations\n")
OLD_LATE, NEW_LATE = "p.propagation_class = 'slow' AS is_late", "p.propagation_class <> 'fast' AS is_late"


def minute_with_observations(src: str, out: str, span: o.Range) -> str:
    return o.minute(src, out, span).replace("max(propagation_slot_start_diff) AS max_propagation_ms",
                                            "max(propagation_slot_start_diff) AS max_propagation_ms, "
                                            "count(*) AS observations")


def five_minute_from(start: int) -> o.Expected:
    """The old definition below ``start``, the new one from there on."""

    def sql(src: str, out: str, span: o.Range) -> str:
        old = o.five_minute(src, out, (span[0], min(span[1], start)))
        new = o.five_minute(src, out, (max(span[0], start), span[1])).replace(OLD_LATE, NEW_LATE)
        return f"SELECT * FROM ({old} UNION ALL {new}) AS both_definitions"

    return o.Expected(sql, o.Interval(300, 120), all_of=(MIDDLE,))


def test_an_added_column_a_formatting_and_tag_edit_and_a_forward_only_change_recompute_only_what_they_say(
        endpoints: Endpoints, spark_backend: SparkBackend, tmp_path: Path) -> None:
    """Three edits deployed at once: the chain's first model gains a column (non-breaking: built, switched, its
    readers not recomputed), the middle one is re-indented and tagged (metadata: nothing recomputed), the last one
    changes a formula ``forward_only`` from a position (history kept below it). A rolling update: the services
    restart with the new files but the only worker still has the old ones — it computes the new versions from the
    record, never with its files' definitions; it is SIGKILLed and the coordinator restarted while the build runs,
    then a worker with the new files takes over: nothing is lost and the build switches once."""
    files, old_files = tmp_path / "transformations", tmp_path / "old-transformations"
    with caught_up(endpoints, spark_backend, files) as (dep, tag):
        shutil.copytree(files, old_files)
        old_paths = {"CBT__MODELS__TRANSFORMATIONS__PATHS": f"[{old_files}]"}
        old_worker = ServiceProcesses(CONFIG, {**dep.overrides, **old_paths}, dep.log_dir)

        edit(files / f"{FIRST}.sql", *ADDED_COLUMN)
        edit(files / f"{MIDDLE}.sql", "tags: [propagation]", "tags: [propagation, classified]")
        edit(files / f"{MIDDLE}.sql", "\nSELECT\n  slot,\n", "\n-- re-indented\nSELECT\n    slot,\n")
        edit(files / "block_propagation_five_minute.sql", "tags: [propagation, entity]\n",
             f"tags: [propagation, entity]\nchange:\n  mode: forward_only\n  effective_from: {FORWARD_FROM}\n")
        edit(files / "block_propagation_five_minute.sql", OLD_LATE, NEW_LATE)
        config = load_config(CONFIG, environ={**dep.overrides})
        dep.models = load_models(config)
        changes = model_changes.to_json(model_changes.compare(
            config, dep.models, {m.id: dep.coverage(m.id) for m in dep.models.incrementals}))
        assert {c["id"].split(".")[1]: c["category"] for c in changes["changed"]} == {
            FIRST: "non-breaking", MIDDLE: "metadata", "block_propagation_five_minute": "breaking"}, changes

        events = EventRecorder(endpoints.kafka_bootstrap, [Topics(f"{tag}.").interval_completed], f"{tag}.test")
        events.start()
        restarted_ms = int(time.time() * 1000)
        build = f"{dep.output_db}.{FIRST}__cbt_v2"
        try:
            old_worker.start("worker", "-old-files")
            dep.start("coordinator", "bounds-cache", "invalidator")
            wait_handled(dep, "worker-old-files", build)
            old_worker.kill("worker-old-files", signal.SIGKILL)
            dep.procs.kill("coordinator", signal.SIGKILL)
            dep.start("coordinator", "worker")
            switches = wait_live(dep, f"{dep.output_db}.{FIRST}", 2)
            dep.wait_quiet(LAST_SLOT_END)
            time.sleep(1.0)  # (the last completions reach the recorder)
        finally:
            events.stop()
            old_worker.stop_all()

        assert switches == 1, f"the build switched {switches} times"
        assert "observations" in dep.spark.table(f"{dep.output_db}.{FIRST}").columns, "the table gained the column"
        after = done_since(events, restarted_ms)
        by_model: dict[str, list[IntervalCompleted]] = {}
        for c in after:
            if c.position is not None:  # (a scheduled model runs at its next fire time, as always)
                by_model.setdefault(c.model.split(".")[1], []).append(c)
        assert set(by_model) <= {FIRST, f"{FIRST}__cbt_v2", "block_propagation_five_minute"}, \
            f"models other than the build, its head and the forward-only model ran: {sorted(by_model)}"
        assert sum(c.interval or 0 for c in by_model.get(FIRST, [])) <= 60, "more than the build's head re-ran"
        forward = by_model.get("block_propagation_five_minute", [])
        new_five = fingerprints(dep)["block_propagation_five_minute"]
        assert {c.version for c in forward} == {new_five}, "every re-run says the new definition computed it"
        olds = set(fingerprints(dep, old_files).values())
        by_old = [c for c in after if c.worker == old_worker_id(dep) and c.position is not None]
        assert by_old and all(c.version not in olds for c in by_old), \
            f"the old worker computed the new versions only: {[(c.model, c.version) for c in by_old]}"
        start = min((c.position or 0 for c in forward), default=None)
        assert start is not None and FORWARD_FROM - 300 < start <= FORWARD_FROM, \
            f"the new definition starts at the task that holds {FORWARD_FROM}: " \
            f"{[(c.position, c.interval) for c in forward]}"

        incrementals = [m.id for m in dep.models.incrementals]
        first = o.Expected(minute_with_observations, o.Interval(60, 12), all_of=("beacon_blocks",))
        expected = o.Pipeline(o.EXAMPLE.externals, {
            **o.EXAMPLE_MODELS, FIRST: first, "block_propagation_five_minute": five_minute_from(start)}, {})
        verdict = o.IndependentOracle(dep.spark, dep.source_db, dep.output_db, expected).verdict(
            {m.split(".")[1]: dep.coverage(m) for m in incrementals})
        assert verdict["holds"], verdict["problems"]


def old_worker_id(dep: Deployment) -> str:
    started = re.search(r"worker started\s+owner=(\S+)", (dep.log_dir / "worker-old-files.log").read_text())
    assert started, "the old worker did not start"
    return started[1]


def fingerprints(dep: Deployment, files: Path | None = None) -> dict[str, str]:
    """Each transformation's short version as the deployment's current files (or ``files``) define it."""
    paths = {} if files is None else {"CBT__MODELS__TRANSFORMATIONS__PATHS": f"[{files}]"}
    config = load_config(CONFIG, environ={**dep.overrides, **paths})
    prints, _ = model_changes.files_versions(config, load_models(config))
    return {m.split(".")[1]: p.short for m, p in prints.items()}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))


def wait_handled(dep: Deployment, process: str, model_id: str, timeout_s: float = 300.0) -> None:
    """Until the worker process ``process`` has completed a task of ``model_id``."""
    log, done = dep.log_dir / f"{process}.log", re.compile(rf"outcome=completed .*model={re.escape(model_id)} ")
    deadline = time.monotonic() + timeout_s
    while not (log.exists() and done.search(log.read_text())):
        assert not dep.procs.exited(), f"services exited: {dep.procs.exited()}; logs in {dep.log_dir}"
        assert time.monotonic() < deadline, f"{process} completed no task of {model_id}; logs in {dep.log_dir}"
        time.sleep(0.1)


def wait_live(dep: Deployment, model_id: str, version: int, timeout_s: float = 300.0) -> int:
    """Until the versions record says ``version`` of ``model_id`` is live; how many times it was switched live."""
    table = f"`{dep.overrides['CBT__ADMIN__INCREMENTAL__DATABASE']}`.cbt_model_versions"
    deadline = time.monotonic() + timeout_s
    while True:
        rows = dep.spark.sql(f"SELECT state FROM {table} WHERE concat(`database`, '.', `table`) = '{model_id}' "
                             f"AND version = {version} ORDER BY deployed_date_time").collect()
        if rows and rows[-1]["state"] == "live":
            return sum(1 for r in rows if r["state"] == "live")
        assert not dep.procs.exited(), f"services exited: {dep.procs.exited()}; logs in {dep.log_dir}"
        assert time.monotonic() < deadline, f"{model_id} version {version} never switched; logs in {dep.log_dir}"
        time.sleep(1.0)
