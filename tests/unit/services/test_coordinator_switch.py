"""When builds switch (``cbt.coordinator.switch``): complete but for less than one interval at the head, and which
in-place models wait for the switch; and the switch itself over the in-memory parts."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from cbt.contract.messages import Invalidation
from cbt.coordinator.switch import Switch, adopt_build, head_left, is_complete, waiting_in_place
from cbt.models.builds import Build, Switched
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion, NothingToRollBack, plan_rollback
from cbt.models.spec import IncrementalModel, Write
from cbt.models.stored import definition_document
from cbt.models.templates import RenderSettings
from cbt.models.versions import fingerprint
from cbt.scheduling.coverage import Coverage
from cbt.state.admin_records import CompletedInterval
from tests.twins.memory_record import MemoryRecord, MemoryVersions
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext, inc, models_of

PARENT = 'SELECT slot, sum(v) AS total, count(*) AS n FROM {{ ref("src.t") }} GROUP BY slot'
EDITED = PARENT.replace("sum(v)", "round(sum(v), 2)")
SETTINGS = RenderSettings(external_database="src", transformation_database="an")


def files(parent_sql: str = EDITED) -> ModelSet:
    return ModelSet(models_of(
        ext("src.t"),
        replace(inc("an.parent", ["src.t"], imax=100), sql=parent_sql, write=Write("append")),
        replace(inc("an.reads_total", ["an.parent"]), sql='SELECT slot, total FROM {{ ref("an.parent") }}'),
        replace(inc("an.reads_n", ["an.parent"]), sql='SELECT slot, n FROM {{ ref("an.parent") }}')))


def parent_build() -> Build:
    new, live = files().get("an.parent"), files(PARENT).get("an.parent")
    assert isinstance(new, IncrementalModel) and isinstance(live, IncrementalModel)
    return Build("an.parent", 2, live, new, "old", "new")


@pytest.mark.parametrize(("live", "built", "complete"), [
    pytest.param(((0, 300),), ((0, 300),), True, id="same"),
    pytest.param(((0, 300),), ((0, 400),), True, id="build-ahead"),
    pytest.param(((0, 317),), ((0, 300),), True, id="a-head-piece-left"),
    pytest.param(((0, 300),), ((100, 300),), False, id="history-missing"),
    pytest.param(((0, 500),), ((0, 300),), False, id="more-than-an-interval-left"),
    pytest.param(((0, 300), (400, 450)), ((0, 300), (420, 450)), False, id="a-piece-left-below-the-head"),
    pytest.param((), (), True, id="nothing-covered"),
])
def test_builds_are_complete_when_only_a_head_piece_shorter_than_an_interval_is_left(
        live: Coverage, built: Coverage, complete: bool) -> None:
    build = parent_build()
    coverage = {build.model: live, build.table: built}
    assert is_complete({build.model: build}, coverage) is complete


def test_the_head_left_is_what_the_live_model_covers_and_its_build_does_not() -> None:
    build = parent_build()
    assert head_left(build, {build.model: ((0, 317),), build.table: ((0, 300),)}) == ((300, 317),)


def version(model_id: str, number: int, sql: str, state: str) -> DeployedVersion:
    model = files(sql).get(model_id)
    assert isinstance(model, IncrementalModel)
    return DeployedVersion(model_id, number, f"data-{number}", "meta", fingerprint(model, SETTINGS).definition,
                           deployed_ms=number, spec=definition_document(model), state=state)  # type: ignore[arg-type]


def test_the_in_place_reader_of_the_changed_column_waits_for_the_switch_and_the_other_one_does_not() -> None:
    versions = [version("an.parent", 1, PARENT, "live"), version("an.parent", 2, EDITED, "building"),
                version("an.reads_total", 1, EDITED, "live"), version("an.reads_n", 1, EDITED, "live")]
    build = parent_build()
    assert waiting_in_place(files(), {build.model: build}, versions) == ["an.reads_total"]


def test_the_switch_replaces_in_dependency_order_records_the_versions_and_recomputes_what_waited() -> None:
    state, record = MemoryState(), MemoryVersions()
    record.record_versions([version("an.parent", 1, PARENT, "live"), version("an.parent", 2, EDITED, "building")])
    build = parent_build()
    for model_id, ranges in {"an.parent": ((0, 317),), build.table: ((0, 400),), "an.reads_total": ((0, 300),)}.items():
        for r in ranges:
            state.coverage.record_completed(model_id, r, 0, version="new" if model_id == build.table else "old")
    durable = MemoryRecord()
    durable.record_completed([CompletedInterval("an.parent", 0, 317, "p", version="old"),
                              CompletedInterval(build.table, 0, 400, "b", version="new")])
    switched: list[tuple[str, str, str]] = []
    published: list[Invalidation] = []
    dropped: list[str] = []

    async def publish(event: Invalidation) -> None:
        published.append(event)

    def switch_table(model_id: str, build_table: str, kept: str) -> Switched:
        switched.append((model_id, build_table, kept))
        return Switched("file:/w/an.db/parent", "file:/w/an.db/parent__cbt_v2")

    switch = Switch(state.coverage, state.ledger, lambda: record, lambda: durable, switch_table, dropped.append,
                    publish)
    assert switch.ready({build.model: build})
    asyncio.run(switch.run(files(), {build.model: build}))

    assert switched == [("an.parent", "an.parent__cbt_v2", "an.parent__cbt_kept_v1")]
    assert dropped == ["an.parent__cbt_v2"]
    assert durable.version_coverage(["an.parent", "an.parent__cbt_kept_v1"]) == {
        "an.parent": {"new": ((0, 400),)}, "an.parent__cbt_kept_v1": {"old": ((0, 317),)}}, \
        "the model's rows are the build's; its old rows are kept for a rollback"
    assert state.coverage.coverage("an.parent") == ((0, 400),), "with what the build covered beyond"
    assert state.coverage.version_coverage(["an.parent"]) == {"an.parent": {"new": ((0, 400),)}}, \
        "the hot index says the build's version computed it, as the durable record does"
    assert state.coverage.deployed_versions(["an.parent"]) == {"an.parent": "new"}, "its old tasks are dropped"
    states = {v.version: (v.state, v.table_location, v.covered_end) for v in record.all_versions()}
    assert states == {1: ("retired", "file:/w/an.db/parent", 317), 2: ("live", "file:/w/an.db/parent__cbt_v2", None)}, \
        "each version says where its rows are: a rollback points the name back at the old ones"
    assert [(e.model, e.start, e.end, e.cascade) for e in published] == [("an.reads_total", 0, 300, False)]


def test_the_head_a_build_left_is_recomputed_at_the_switch_without_its_descendants() -> None:
    """A descendant the change reaches is built or waits for the switch; one it does not reach keeps its rows."""
    state, record = MemoryState(), MemoryVersions()
    record.record_versions([version("an.parent", 1, PARENT, "live"), version("an.parent", 2, EDITED, "building"),
                            version("an.reads_n", 1, EDITED, "live")])
    build = parent_build()
    for model_id, covered in {"an.parent": (0, 317), build.table: (0, 300), "an.reads_n": (0, 317)}.items():
        state.coverage.record_completed(model_id, covered, 0)
    published: list[Invalidation] = []

    async def publish(event: Invalidation) -> None:
        published.append(event)

    switch = Switch(state.coverage, state.ledger, lambda: record, MemoryRecord, lambda m, b, k: Switched(),
                    lambda table: None, publish)
    asyncio.run(switch.run(files(), {build.model: build}))
    assert [(e.model, e.start, e.end, e.cascade) for e in published if e.model == "an.parent"] == [
        ("an.parent", 300, 317, False)]


def test_a_switch_repeated_after_a_crash_keeps_the_old_version_s_rows_not_the_build_s() -> None:
    """And a version kept before (its id already holds rows: a build of the same number, an earlier switch) is kept
    again, as the model holds it now."""
    durable, build = MemoryRecord(), parent_build()
    durable.record_completed([CompletedInterval("an.parent", 0, 300, "p", version="old"),
                              CompletedInterval(build.table, 0, 300, "b", version="new"),
                              CompletedInterval("an.parent__cbt_kept_v1", 0, 100, "stale", version="older")])
    for _ in range(2):
        adopt_build(durable, "an.parent", build, "an.parent__cbt_kept_v1")
    assert durable.version_coverage(["an.parent", "an.parent__cbt_kept_v1"]) == {
        "an.parent": {"new": ((0, 300),)}, "an.parent__cbt_kept_v1": {"old": ((0, 300),)}}


def test_the_versions_go_live_when_the_tables_are_switched_not_when_the_switch_begins() -> None:
    """Readers see the new version once its table is replaced: that is the time the record says it went live (a
    copy of a large table takes a while)."""
    state, record = MemoryState(), MemoryVersions()
    record.record_versions([version("an.parent", 1, PARENT, "live"), version("an.parent", 2, EDITED, "building")])
    build = parent_build()
    state.coverage.record_completed("an.parent", (0, 300), 0)
    state.coverage.record_completed(build.table, (0, 300), 0)
    replaced_ms: list[int] = []

    def switch_table(model_id: str, build_table: str, kept: str) -> Switched:
        time.sleep(0.05)
        replaced_ms.append(int(time.time() * 1000))
        return Switched()

    async def publish(event: Invalidation) -> None:
        pass

    switch = Switch(state.coverage, state.ledger, lambda: record, MemoryRecord, switch_table, lambda table: None,
                    publish)
    asyncio.run(switch.run(files(), {build.model: build}))
    went = {v.state: v.deployed_ms for v in record.all_versions()}
    assert went["live"] >= replaced_ms[-1] and went["retired"] == went["live"]


def test_files_past_their_retention_are_deleted_once_and_no_rollback_goes_back_to_them() -> None:
    record = MemoryVersions()
    retired = replace(version("an.parent", 1, PARENT, "retired"), deployed_ms=0, table_location="file:/w/parent",
                      covered_end=300)
    record.record_versions([retired, replace(version("an.parent", 2, EDITED, "live"), deployed_ms=0,
                                             table_location="file:/w/parent__cbt_v2")])
    deleted: list[tuple[str, str, str]] = []

    def delete_files(model_id: str, files_at: str, kept: str) -> bool:
        deleted.append((model_id, files_at, kept))
        return True

    async def publish(event: Invalidation) -> None:
        pass

    state = MemoryState()
    switch = Switch(state.coverage, state.ledger, lambda: record, MemoryRecord, lambda m, b, k: Switched(),
                    lambda table: None, publish, delete_files)
    week_ms = 7 * 86_400_000
    asyncio.run(switch.prune(files(), record.all_versions(), week_ms - 1))
    assert deleted == [], "kept for change.retention (7 days)"
    asyncio.run(switch.prune(files(), record.all_versions(), week_ms))
    asyncio.run(switch.prune(files(), record.all_versions(), week_ms + 10_000))
    assert deleted == [("an.parent", "file:/w/parent", "an.parent__cbt_kept_v1")], "once"
    with pytest.raises(NothingToRollBack):
        plan_rollback("an.parent", record.all_versions(), week_ms + 20_000)


def test_a_switch_run_again_after_its_record_was_written_switches_nothing_twice() -> None:
    """The switch failed after recording the versions (publishing a re-run, dropping the build): run again, it must
    not take the new live version for the old one and retire it."""
    state, record = MemoryState(), MemoryVersions()
    record.record_versions([version("an.parent", 1, PARENT, "retired"), version("an.parent", 2, EDITED, "live")])
    build = parent_build()
    state.coverage.record_completed("an.parent", (0, 300), 0)
    switched: list[str] = []

    def switch_table(model_id: str, build_table: str, kept: str) -> Switched:
        switched.append(model_id)
        return Switched()

    async def publish(event: Invalidation) -> None:
        pass

    before = record.all_versions()
    switch = Switch(state.coverage, state.ledger, lambda: record, MemoryRecord, switch_table, lambda table: None,
                    publish)
    asyncio.run(switch.run(files(), {build.model: build}))
    assert switched == [] and [(v.version, v.state) for v in record.all_versions()] == [
        (v.version, v.state) for v in before]


def test_a_superseded_build_is_deleted_past_the_retention() -> None:
    record = MemoryVersions()
    record.record_versions([replace(version("an.parent", 1, PARENT, "live"), deployed_ms=0),
                            replace(version("an.parent", 2, EDITED, "superseded"), deployed_ms=0,
                                    build_table="an.parent__cbt_v2")])
    dropped: list[tuple[str, str]] = []

    async def publish(event: Invalidation) -> None:
        pass

    state = MemoryState()
    switch = Switch(state.coverage, state.ledger, lambda: record, MemoryRecord, lambda m, b, k: Switched(),
                    lambda table: None, publish, lambda m, f, k: True,
                    lambda model_id, build_table: dropped.append((model_id, build_table)) is None)
    asyncio.run(switch.prune(files(), record.all_versions(), 7 * 86_400_000))
    asyncio.run(switch.prune(files(), record.all_versions(), 8 * 86_400_000))
    assert dropped == [("an.parent", "an.parent__cbt_v2")], "once"
