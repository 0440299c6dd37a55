"""The switch: when every build in progress covers what its live model covers, the models' names take their builds'
rows, together (``cbt.models.builds``).

The leader checks at each tick and at each completion of a build. When the builds are complete it stops planning the
models and their builds, waits for their tasks in flight to end (a task of the old version must not land in a
switched table), then, parents before children, points each model's name at its build's files, the old ones kept
under ``<table>__cbt_kept_v<N>`` (``cbt.adapters.switch``: one catalog change, no rows moved): a reader of one table
sees the old version or the new one, never both, and the tables of one deployment switch one after another within
a second. The model's completion rows become its build's, in one
commit (the tasks that computed what the table now holds, in their version: ``adopt_build``); the versions
are recorded (the new ones ``live`` with their files, the old ones ``retired`` with theirs, which ``cbt rollback``
points the name back at); the in-place models that waited below a build are invalidated now, so they recompute from
the new parents; the builds' catalog entries are dropped (their files are the models' now). A leader that dies
midway switches again on the next start (pointing a name at the files it already names changes nothing).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from cbt.contract.messages import Invalidation
from cbt.models.builds import Build, Switched, files_past_retention, kept_rows_id
from cbt.models.changes import classify, impact
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion, VersionRecord, VersionState, latest_versions, live_versions
from cbt.models.spec import IncrementalModel, ModelId
from cbt.scheduling.coverage import Coverage, remove
from cbt.scheduling.version_pieces import known
from cbt.state.ports import DurableRecord, HotIndex, TaskLedger

log = logging.getLogger("cbt.coordinator.switch")
SOURCE = "cbt switch"


def head_left(build: Build, coverage: Mapping[ModelId, Coverage]) -> Coverage:
    """What the live model covers that its build does not."""
    return beyond(coverage.get(build.table, ()), coverage.get(build.model, ()))


def is_complete(builds: Mapping[ModelId, Build], coverage: Mapping[ModelId, Coverage]) -> bool:
    """Every build covers what its live model covers, but for less than one interval at the live model's head: a
    build's intervals may lie on other boundaries than the live model's history (its forward fill aligned to the
    data's end), and the piece at the head is recomputed at the switch instead (``Switch.run``)."""
    for build in builds.values():
        live = coverage.get(build.model, ())
        left = head_left(build, coverage)
        if left and (live[-1][1] - left[0][0] >= build.new.interval.max or left[-1][1] != live[-1][1]):
            return False
    return True


def beyond(live: Coverage, build: Coverage) -> Coverage:
    """What the build covers that the live model does not (recorded for the model at the switch)."""
    for r in live:
        build = remove(build, r)
    return build


def waiting_in_place(files: ModelSet, builds: Mapping[ModelId, Build],
                     versions: list[DeployedVersion]) -> list[ModelId]:
    """The incremental models the builds' changes reach that are not built (``cbt.coordinator.deploy``: they wait
    for the switch to recompute in place), from the live and the new versions' definitions — the same impact the
    deployment computed."""
    latest, live = latest_versions(versions), live_versions(versions)
    changes = {m: classify(m, live[m].definition, latest[m].definition, metadata_changed=False)
               for m in builds if m in live and m in latest}
    parents = {m.id: list(files.dependencies(m.id)) for m in files}
    statements = {m: v.definition.get("sql") for m, v in latest.items()}
    reached = impact(changes, files.topological_order(), parents, statements, {m.id: m.id for m in files})
    return [m for m in reached.recompute if m not in builds and isinstance(files.models.get(m), IncrementalModel)]


def adopt_build(record: DurableRecord, model_id: ModelId, build: Build, retired: ModelId | None,
                head: Coverage = ()) -> None:
    """The model's completion rows become its build's, but for those of the ``head`` its build did not cover (their
    re-run must find them); its live version's rows are kept under ``retired`` (``kept_rows_id``: ``cbt rollback``
    adopts them back) — unless the model's rows already hold the build's version: a switch repeated after a crash
    must not keep the build's rows as the old version's."""
    held = record.version_coverage([model_id]).get(model_id, {})
    if retired is not None and build.new_version not in held:
        record.adopt(retired, model_id)
    record.adopt(model_id, build.table, (head[0][0], head[-1][1]) if head else None)


@dataclass
class Switch:
    """The switch's parts: Spark statements run in a thread (``cbt.adapters.switch``)."""

    coverage: HotIndex
    ledger: TaskLedger
    record: Callable[[], VersionRecord]
    durable: Callable[[], DurableRecord]
    switch_table: Callable[[ModelId, ModelId, ModelId], Switched]
    """Points the model's name at its build (model, build, the kept table's id): ``cbt.adapters.switch``."""
    drop_table: Callable[[ModelId], None]
    publish: Callable[[Invalidation], Awaitable[None]]
    delete_files: Callable[[ModelId, str, ModelId], bool] | None = None
    """Deletes a left-behind version's files (model, files, the kept table's id): ``cbt.adapters.switch``."""
    delete_build: Callable[[ModelId, ModelId], bool] = lambda model_id, build: False
    """Deletes a superseded build's files and entry (model, build table)."""

    def ready(self, builds: Mapping[ModelId, Build]) -> bool:
        """The builds are complete and nothing of theirs or their models' is in flight (call it with the models
        already paused)."""
        ids = [*builds, *(b.table for b in builds.values())]
        if not is_complete(builds, self.coverage.coverages(ids)):
            return False
        return not any(self.ledger.in_flight(ids, int(time.time() * 1000)).values())

    async def run(self, files: ModelSet, builds: Mapping[ModelId, Build]) -> None:
        """Switch every model of ``builds`` (``files``: the loaded files' models, which the new versions are)."""
        versions = await asyncio.to_thread(lambda: self.record().all_versions())
        live, building = live_versions(versions), {v.model: v for v in versions if v.state == "building"}
        coverage = self.coverage.coverages([*builds, *(b.table for b in builds.values())])
        self.coverage.announce_versions({m: b.new_version for m, b in builds.items()})  # (a live-version task left
        # in the queue is dropped from here on, never run into a switched table)
        rows: list[tuple[DeployedVersion, VersionState]] = []
        began = time.monotonic()
        for model_id in [m for m in files.topological_order() if m in builds]:
            build = builds[model_id]
            if model_id not in building or building[model_id].version != build.version:
                continue  # (switched already: the switch failed after recording, and runs again for the rest)
            retired = kept_rows_id(model_id, live[model_id].version) if model_id in live else None
            at = time.monotonic()
            switched = await asyncio.to_thread(self.switch_table, model_id, build.table,
                                               retired or kept_rows_id(model_id, 0))
            catalog_s = time.monotonic() - at
            head = head_left(build, coverage)
            at = time.monotonic()
            await asyncio.to_thread(adopt_build, self.durable(), model_id, build, retired, head)
            adopt_s = time.monotonic() - at
            self._cover(model_id, beyond(coverage.get(model_id, ()), coverage.get(build.table, ())))
            self.coverage.adopt_versions(model_id, known(self.coverage.version_coverage([build.table])[build.table]))
            await self._recompute_head(model_id, head, builds)
            ranges = coverage.get(model_id, ())
            if model_id in live:
                rows.append((replace(live[model_id], table_version=switched.table_version,
                                     table_location=switched.old_location,
                                     covered_end=ranges[-1][1] if ranges else None), "retired"))
            if model_id in building:
                rows.append((replace(building[model_id], build_table=None, table_location=switched.new_location),
                             "live"))
            log.info("model version: switched", extra={
                "model": model_id, "build": build.table, "files": switched.new_location,
                "kept": switched.old_location, "restore_to": switched.table_version,
                "catalog_s": round(catalog_s, 3), "adopt_s": round(adopt_s, 3)})
        at_ms = int(time.time() * 1000)  # (when readers began to see the new versions: every table is replaced)
        states = [replace(row, state=state, deployed_ms=at_ms) for row, state in rows]
        await asyncio.to_thread(lambda: self.record().record_versions(states))
        log.info("model version: switch recorded", extra={
            "models": sorted(builds), "seconds": round(time.monotonic() - began, 3)})
        for model_id in waiting_in_place(files, builds, versions):
            await self._recompute(model_id, builds)
        for build in builds.values():
            await asyncio.to_thread(self.drop_table, build.table)

    async def prune(self, files: ModelSet, versions: list[DeployedVersion], now_ms: int) -> None:
        """Delete the files switches left behind once their model's ``change.retention`` has passed, and record that
        they are gone (the version keeps its state, without a location: no rollback to it any more)."""
        if self.delete_files is None:
            return
        retention = {m.id: m.change.retention_s for m in files if isinstance(m, IncrementalModel)}
        for version in files_past_retention(versions, retention, now_ms):
            try:
                if version.state == "superseded" and version.build_table:
                    deleted = await asyncio.to_thread(self.delete_build, version.model, version.build_table)
                else:
                    deleted = await asyncio.to_thread(self.delete_files, version.model, version.table_location or "",
                                                      kept_rows_id(version.model, version.version))
            except Exception:  # (the others go on; this one is tried again at the next read)
                log.exception("model version: deleting files past their retention failed", extra={
                    "model": version.model, "version": version.version, "files": version.table_location})
                continue
            gone = replace(version, table_location=None, build_table=None, deployed_ms=now_ms)
            await asyncio.to_thread(self.record().record_versions, [gone])
            log.info("model version: its files past their retention deleted", extra={
                "model": version.model, "version": version.version, "files": version.table_location,
                "found": deleted})

    def _cover(self, model_id: ModelId, ranges: Coverage) -> None:
        """The hot index's side of the adoption: what the build covered beyond the live model."""
        seq = self.coverage.invalidation_seq(model_id)
        for start, end in ranges:
            self.coverage.record_completed(model_id, (start, end), seq)

    async def _recompute(self, model_id: ModelId, builds: Mapping[ModelId, Build]) -> None:
        ranges = self.coverage.coverage(model_id)
        if ranges:
            await self._invalidate(model_id, (ranges[0][0], ranges[-1][1]), builds, "its parents switched", False)

    async def _recompute_head(self, model_id: ModelId, left: Coverage, builds: Mapping[ModelId, Build]) -> None:
        """The live model's head that its build did not cover: the switched table lacks its rows (it holds the
        build's), so it is computed again — alone: a descendant the change reaches is built or waited for the
        switch, and one it does not reach read only columns whose values the head's new rows keep."""
        if left:
            await self._invalidate(model_id, (left[0][0], left[-1][1]), builds, "its head was not built", False)

    async def _invalidate(self, model_id: ModelId, span: tuple[int, int], builds: Mapping[ModelId, Build], why: str,
                          cascade: bool) -> None:
        switched = ",".join(sorted(f"{m}={b.version}" for m, b in builds.items()))
        key = hashlib.sha256(f"{switched};{why}".encode()).hexdigest()[:16]
        await self.publish(Invalidation(id=f"switch:{key}:{model_id}"[:200], model=model_id, start=span[0],
                                        end=span[1], reason=f"model change: {why} ({switched})"[:200], source=SOURCE,
                                        cascade=cascade))
