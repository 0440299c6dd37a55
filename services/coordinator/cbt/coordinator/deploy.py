"""The coordinator's side of a deployment: once per process, as leader, compare the loaded model files with the
deployed versions (``cbt.models.deployment``), re-run what a change affects, and record the new versions.

A model a change recomputes is, by default, *built*: its new version is recorded ``building`` with a build table
(``cbt.models.builds``), and the services plan the build beside the live version until the switch
(``cbt.coordinator.switch``). A model that cannot be built (``is_buildable``), or that says ``change.mode:
in_place`` or ``forward_only``, is recomputed in place: one invalidation of its covered range, without cascade
(which descendants recompute is the deployment's decision, from column lineage) — the invalidator records it and the
re-runs follow the coverage protocol like any other. An in-place model downstream of a build is invalidated at the
switch instead, so it recomputes from its parents' new versions. The invalidation's id is derived from the versions
deployed, so a leader that dies before recording them publishes the same ids again on the next start, and they
change nothing twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import replace

from cbt.base.tasks import incremental_task_id
from cbt.config.settings import Config
from cbt.contract.messages import Invalidation, TaskRequested
from cbt.coordinator.switch import waiting_in_place
from cbt.models.builds import build_id, builds_from, is_buildable, pins_from, running_versions
from cbt.models.dag import ModelSet
from cbt.models.deployment import (
    DeployedVersion,
    DeploymentPlan,
    VersionRecord,
    current_states,
    highest_versions,
    latest_versions,
    live_versions,
    plan_deployment,
    recheck_pieces,
    rolled_back_files,
)
from cbt.models.spec import IncrementalModel, ModelId
from cbt.models.stored import definition_document
from cbt.models.versions import Fingerprint
from cbt.scheduling.coverage import Coverage
from cbt.service.model_changes import files_versions

log = logging.getLogger("cbt.coordinator.deploy")
SOURCE = "cbt deploy"
REASON_LIMIT = 200


def fingerprints(config: Config, models: ModelSet) -> dict[ModelId, Fingerprint]:
    """Every transformation's version as the files define it; a model that cannot be fingerprinted (its SQL does not
    parse) is left out — it keeps its deployed version, its tasks carry none — and logged."""
    prints, problems = files_versions(config, models)
    for model_id, problem in problems.items():
        log.warning("model version: cannot fingerprint the model; its deployed version stays",
                    extra={"model": model_id, "error": problem[:300]})
    return prints


def built_models(plan: DeploymentPlan, models: ModelSet, live: Mapping[ModelId, DeployedVersion]) -> set[ModelId]:
    """The recomputed models built beside their live version: buildable, ``change.mode: recompute``, whole history,
    and a live version whose definition is kept (one deployed before definitions were kept changes in place)."""
    out = set()
    for model_id in plan.recompute:
        model = models.models.get(model_id)
        serving = live.get(model_id)
        if (isinstance(model, IncrementalModel) and is_buildable(model) and model.change.mode == "recompute"
                and model_id not in plan.starts and serving is not None and serving.spec is not None):
            out.add(model_id)
    return out


def in_place_now(plan: DeploymentPlan, models: ModelSet, built: Collection[ModelId],
                 versions: list[DeployedVersion]) -> dict[ModelId, tuple[str, ...]]:
    """The in-place models to invalidate at once: all but those a build's change reaches (``versions``: every
    version's state once this deployment is recorded) — they would recompute from the parents' live versions, so they
    wait for the switch (``cbt.coordinator.switch.waiting_in_place``, the same rule)."""
    waiting = set(waiting_in_place(models, builds_from(versions), versions))
    return {model_id: reasons for model_id, reasons in plan.recompute.items()
            if model_id not in built and model_id not in waiting}


def with_states(plan: DeploymentPlan, models: ModelSet, built: Collection[ModelId],
                current: Mapping[ModelId, DeployedVersion], live: Mapping[ModelId, DeployedVersion] | None = None,
                highest: Mapping[ModelId, int] | None = None) -> list[DeployedVersion]:
    """The rows to record: a built model's new version ``building`` with its build table — one whose own
    definition did not change but whose parents' did is rebuilt as its next version too; a metadata change of a
    version being built keeps building; a build that a new version replaces is ``superseded``; a version live in the
    model's table as it is keeps the table's files (``live``: the live versions). ``highest``: each model's highest
    version number recorded (a new one never reuses a number)."""
    rows: list[DeployedVersion] = []
    live, highest = live or {}, highest or {}
    changed = {version.model: version for version in plan.new_versions}
    for model_id in sorted(set(built) - set(changed)):
        serving, model = current[model_id], models.get(model_id)
        changed[model_id] = replace(serving, version=max(serving.version, highest.get(model_id, 0)) + 1,
                                    category="breaking", table_location=None,
                                    reasons=plan.recompute[model_id], deployed_ms=plan.at_ms,
                                    spec=definition_document(model) if isinstance(model, IncrementalModel) else None)
    for version in changed.values():
        before = current.get(version.model)
        if version.model in built:
            rows.append(replace(version, state="building", build_table=build_id(version.model, version.version)))
        elif before is not None and before.state == "building" and before.version == version.version:
            rows.append(replace(version, state="building", build_table=before.build_table))
        else:  # (live in the model's table as it is: where its files are stays)
            files = live[version.model].table_location if version.model in live else None
            rows.append(replace(version, table_location=files))
        if before is not None and before.state == "building" and before.version != version.version:
            rows.append(replace(before, state="superseded", deployed_ms=version.deployed_ms))
    return rows


def invalidations(plan: DeploymentPlan, models: ModelSet, covered: Mapping[ModelId, Coverage],
                  recompute: Mapping[ModelId, tuple[str, ...]]) -> list[Invalidation]:
    """One invalidation per model of ``recompute`` that is incremental and has coverage, over its covered range."""
    deployment = hashlib.sha256("".join(sorted(f"{v.model}={v.data_hash};" for v in plan.new_versions))
                                .encode()).hexdigest()[:16]
    out = []
    for model_id, reasons in recompute.items():
        model = models.models.get(model_id)
        ranges = covered.get(model_id, ())
        if not isinstance(model, IncrementalModel) or not ranges:
            continue
        start, end = max(ranges[0][0], plan.starts.get(model_id, ranges[0][0])), ranges[-1][1]
        if start >= end:
            continue
        reason = f"model change: {'; '.join(reasons)}"
        out.append(Invalidation(id=f"deploy:{deployment}:{model_id}"[:200], model=model_id, start=start, end=end,
                                reason=reason[:REASON_LIMIT], source=SOURCE, cascade=False,
                                metadata={"deployment": deployment}))
    return out


def recheck_tasks(plan: DeploymentPlan, models: ModelSet, covered: Mapping[ModelId, Coverage],
                  pool_for: Callable[[IncrementalModel], str],
                  versions: Mapping[ModelId, str]) -> list[TaskRequested]:
    """The tasks that run a model's new or changed checks over its published intervals (``plan.rechecks``): runs of
    up to ``RECHECK_INTERVALS`` intervals of the covered ranges, lowest priority."""
    out = []
    for model_id, checks in plan.rechecks.items():
        model = models.models.get(model_id)
        if not isinstance(model, IncrementalModel):
            continue
        for position, length, step in recheck_pieces(model.interval.max, covered.get(model_id, ())):
            out.append(TaskRequested(task_id=incremental_task_id(model_id, position, length), model=model_id,
                                     position=position, interval=length, step=step, direction="backfill",
                                     pool=pool_for(model), version=versions.get(model_id), recheck=checks))
    return out


async def deploy(models: ModelSet, prints: Mapping[ModelId, Fingerprint], record: VersionRecord,
                 coverage: Callable[[Collection[ModelId]], Mapping[ModelId, Coverage]],
                 publish: Callable[[Invalidation], Awaitable[None]], at_ms: int,
                 announce: Callable[[Mapping[ModelId, str]], None] = lambda _: None,
                 recheck: Callable[[DeploymentPlan, Mapping[ModelId, Coverage]], Awaitable[None]] | None = None,
                 ) -> DeploymentPlan:
    """Classify, announce the version each model's tasks carry from now on (a task planned before is dropped by
    the worker), re-run in place what is not built, run changed checks again over the published intervals
    (``recheck``), then record the versions (a failure before that repeats the same invalidations at the next
    attempt, which change nothing twice, and the same re-checks, which record their verdicts again). ``models``:
    the files' models."""
    versions = await asyncio.to_thread(record.all_versions)
    deployed = latest_versions(versions)
    kept_back = rolled_back_files(prints, versions)
    for model_id in sorted(kept_back):
        log.info("model version: rolled back; its files are deployed again when they change", extra={"model": model_id})
    plan = plan_deployment(models, {m: p for m, p in prints.items() if m not in kept_back}, deployed, at_ms,
                           highest_versions(versions))
    for model_id, change in plan.changes.items():
        if change.category != "new" or deployed:
            log.info("model version: %s", change.category, extra={"model": model_id, "reasons": list(change.reasons)})
    built = built_models(plan, models, live_versions(versions))
    rows = with_states(plan, models, built, deployed, live_versions(versions), highest_versions(versions))
    after = current_states([*versions, *rows])
    now = in_place_now(plan, models, built, after)
    announce(running_versions({m: p.short for m, p in prints.items()}, builds_from(after), pins_from(after)))
    for event in invalidations(plan, models, coverage(list(now)), now):
        log.info("model version: recomputing in place", extra={"model": event.model, "reason": event.reason,
                                                               "range": [event.start, event.end]})
        await publish(event)
    for row in rows:
        if row.state == "building" and row.model in built:
            log.info("model version: building beside the live version", extra={"model": row.model,
                                                                               "build": row.build_table})
    if recheck is not None and plan.rechecks:
        for model_id, checks in plan.rechecks.items():
            log.info("model checks changed: running them again over the published intervals",
                     extra={"model": model_id, "checks": [c.name for c in checks]})
        await recheck(plan, coverage(list(plan.rechecks)))  # (before the record: a crash repeats them)
    await asyncio.to_thread(record.record_versions, rows)
    return plan
