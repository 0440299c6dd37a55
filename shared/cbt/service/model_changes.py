"""``cbt plan``'s model changes: the files compared with the deployed versions (``cbt.models.deployment``) — per
changed model its category and why, and every model a deployment of these files would recompute, over which range.

The deployed versions are read from their admin table's files (``spark.warehouse``), never through Spark; without
``spark.warehouse`` the comparison is skipped and ``cbt plan`` says so.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cbt.config.settings import Config, warehouse_location
from cbt.models.dag import ModelSet
from cbt.models.deployment import (
    DeployedVersion,
    DeploymentPlan,
    highest_versions,
    latest_versions,
    plan_deployment,
    transformations,
)
from cbt.models.spec import IncrementalModel, ModelId
from cbt.models.templates import RenderSettings
from cbt.models.versions import Fingerprint, NotFingerprintable, fingerprint, short_version
from cbt.scheduling.batching import KEEP_RUNS, BatchSizer, Estimate, estimate
from cbt.scheduling.coverage import Coverage

if TYPE_CHECKING:
    from cbt.adapters.delta_admin import DeltaAdmin

NOTHING_COVERED = "nothing covered (a scheduled model: at its next run)"


@dataclass(frozen=True)
class ModelChanges:
    plan: DeploymentPlan | None
    """``None``: not compared (``skipped`` says why)."""
    covered: Mapping[ModelId, Coverage]
    skipped: str = ""
    unversioned: Mapping[ModelId, str] | None = None
    """Models whose version could not be computed, with why (they keep their deployed version)."""
    first_deployment: bool = False
    """Nothing was deployed since versions are recorded: every model becomes version 1 as it is."""
    estimates: Mapping[ModelId, Estimate] = field(default_factory=dict)
    """What each recomputed incremental model's ranges take: intervals, tasks and time from its recorded runs."""


def recomputed(plan: DeploymentPlan, covered: Mapping[ModelId, Coverage], model_id: ModelId) -> Coverage:
    """What a deployment recomputes of a model: what it covers, from its ``starts`` position on when it has one."""
    start = plan.starts.get(model_id)
    ranges = covered.get(model_id, ())
    return ranges if start is None else tuple((max(s, start), e) for s, e in ranges if e > start)


def compare(config: Config, models: ModelSet, covered: Mapping[ModelId, Coverage]) -> ModelChanges:
    every = read_versions(config)
    deployed = None if every is None else latest_versions(every)
    if deployed is None or every is None:
        return ModelChanges(None, covered, "spark.warehouse is not set: the deployed versions are read from their "
                                           "admin table's files")
    prints, unversioned = files_versions(config, models)
    plan = plan_deployment(models, prints, deployed, int(time.time() * 1000), highest_versions(every))
    return ModelChanges(plan, covered, unversioned=unversioned, first_deployment=not deployed,
                        estimates=estimates(config, models, plan, covered) if deployed else {})


def estimates(config: Config, models: ModelSet, plan: DeploymentPlan,
              covered: Mapping[ModelId, Coverage]) -> dict[ModelId, Estimate]:
    """Each recomputed incremental model's intervals, tasks and time, from its runs in the admin table's files."""
    recomputing = {m: model for m in plan.recompute if isinstance(model := models.models.get(m), IncrementalModel)}
    admin = files_admin(config)
    if admin is None or not recomputing:
        return {}
    from cbt.adapters.admin_tables.session import AdminTableError

    try:
        runs = admin.recent_runs(list(recomputing), KEEP_RUNS)
    except AdminTableError:
        runs = {}
    batch = config.scheduler.batch
    return {m: estimate(model, recomputed(plan, covered, m),
                        [(max(1, length // model.interval.max), ms) for length, ms in runs.get(m, [])],
                        BatchSizer(batch.max_intervals, batch.job_budget_s, batch.first_intervals))
            for m, model in recomputing.items()}


def files_versions(config: Config, models: ModelSet) -> tuple[dict[ModelId, Fingerprint], dict[ModelId, str]]:
    settings = RenderSettings.from_config(config)
    prints, problems = {}, {}
    for model in transformations(models):
        try:
            prints[model.id] = fingerprint(model, settings, config.base_dir)
        except (NotFingerprintable, ValueError) as e:
            problems[model.id] = str(e)
    return prints, problems


def read_deployed(config: Config) -> dict[ModelId, DeployedVersion] | None:
    """The deployed versions from their table's files; ``{}`` when none were recorded; ``None`` without
    ``spark.warehouse``."""
    every = read_versions(config)
    return None if every is None else latest_versions(every)


def read_versions(config: Config) -> list[DeployedVersion] | None:
    """Every version of every model in its current state (``VersionRecord.all_versions``), from the table's files;
    ``[]`` when none were recorded; ``None`` without ``spark.warehouse``."""
    admin = files_admin(config)
    if admin is None:
        return None
    from cbt.adapters.admin_tables.session import AdminTableError

    try:
        return admin.tables.versions.all_versions()
    except AdminTableError:  # (no table yet: nothing deployed since versions were recorded)
        return []


def live_folders(config: Config) -> dict[ModelId, str]:
    """Each model whose name a switch moved to its build's files (``cbt.adapters.switch``): the folder of its live
    version's files in its database's folder, from the versions record (``table_location``; read where
    ``spark.warehouse`` says, else ``api.tables.warehouse``); the others are in the folder of their own name. Raises
    ``AdminTableError`` when the record cannot be read (its absence is no switch yet)."""
    from cbt.adapters.admin_tables.session import AdminTableMissing

    tables = config.api.tables
    admin = files_admin(config, None if tables.warehouse is None else warehouse_location(tables.warehouse,
                                                                                          config.base_dir))
    if admin is None:
        return {}
    try:
        every = admin.tables.versions.all_versions()
    except AdminTableMissing:
        return {}
    return {v.model: v.table_location.rstrip("/").rsplit("/", 1)[-1] for v in every
            if v.state == "live" and v.table_location}


def read_mixed_versions(config: Config, model_ids: list[ModelId]) -> dict[ModelId, dict[int | None, Coverage]]:
    """The models whose tables hold rows of more than one version (an in-place change under way), with the
    intervals each version's rows hold, by version number (``None``: not known) — from the tables' files; ``{}``
    without ``spark.warehouse``."""
    admin = files_admin(config)
    if admin is None or not model_ids:
        return {}
    from cbt.adapters.admin_tables.session import AdminTableError

    try:
        held = admin.version_coverage(model_ids)
        numbers = {(v.model, short_version(v.data_hash)): v.version for v in admin.tables.versions.all_versions()}
    except AdminTableError:
        return {}
    return {m: {numbers.get((m, short)) if short else None: ranges for short, ranges in by_version.items()}
            for m, by_version in held.items() if len(by_version) > 1}


def _cost(recompute: Mapping[str, Any]) -> str:
    """``: 22 intervals in 1 task, about 6 s`` (the time from the model's recorded runs, when it has any)."""
    if not recompute.get("intervals"):
        return ""
    tasks = recompute["tasks"]
    took = recompute.get("estimate_s")
    timed = "no run recorded to time it" if took is None else f"about {took:g} s"
    return f": {recompute['intervals']} intervals in {tasks} task{'s' if tasks != 1 else ''}, {timed}"


def files_admin(config: Config, fallback: str | None = None) -> DeltaAdmin | None:
    """The admin tables over their files, without Spark; ``None`` without ``spark.warehouse`` (or ``fallback``)."""
    warehouse = config.warehouse() or fallback
    if warehouse is None:
        return None
    from cbt.adapters.delta_admin import DeltaAdmin

    names = config.admin
    return DeltaAdmin(None, (names.incremental.database, names.incremental.table),
                      (names.scheduled.database, names.scheduled.table),
                      (names.invalidations.database, names.invalidations.table),
                      files=(warehouse, dict(config.spark.storage_options)))


def to_json(changes: ModelChanges) -> dict[str, Any]:
    if changes.plan is None:
        return {"compared": False, "why_not": changes.skipped}
    plan = changes.plan
    return {
        "compared": True,
        "first_deployment": changes.first_deployment,
        "changed": [{"id": m, "category": c.category, "reasons": list(c.reasons)} for m, c in plan.changes.items()
                    if not changes.first_deployment],
        "recompute": [{"id": m, "why": list(why), "ranges": [list(r) for r in recomputed(plan, changes.covered, m)],
                       **_estimated(changes.estimates.get(m))} for m, why in plan.recompute.items()],
        "unaffected": [{"id": m, "why": why} for m, why in plan.impact.unaffected.items()],
        "not_versioned": [{"id": m, "why": why} for m, why in (changes.unversioned or {}).items()],
    }


def _estimated(found: Estimate | None) -> dict[str, Any]:
    if found is None:
        return {}
    return {"intervals": found.intervals, "tasks": found.tasks, "estimate_s": found.seconds}


def render(changes: ModelChanges) -> str:
    if changes.plan is None:
        return f"model changes: not compared ({changes.skipped})"
    document = to_json(changes)
    if changes.first_deployment:
        return "model changes: none recorded yet (the next start records every model as version 1, as it is)"
    if not document["changed"] and not document["not_versioned"]:
        return "model changes: none (the files are the deployed versions)"
    lines = ["model changes (the files against the deployed versions):"]
    lines += [f"  {c['id']}  {c['category']}: {'; '.join(c['reasons'])}" for c in document["changed"]]
    if document["recompute"]:
        lines.append("a deployment recomputes:")
        for r in document["recompute"]:
            ranges = ", ".join(f"[{s}, {e})" for s, e in r["ranges"]) or NOTHING_COVERED
            lines.append(f"  {r['id']}  {ranges}{_cost(r)}  ({'; '.join(r['why'])})")
    lines += [f"  {u['id']}  kept: {u['why']}" for u in document["unaffected"]]
    lines += [f"  {u['id']}  no version: {u['why']}" for u in document["not_versioned"]]
    return "\n".join(lines)

