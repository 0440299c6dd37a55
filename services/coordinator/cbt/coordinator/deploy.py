"""The coordinator's side of a deployment: once per process, as leader, compare the loaded model files with the
deployed versions (``cbt.models.deployment``), re-run what a change affects, and record the new versions.

Each model a change recomputes gets one invalidation of its covered range, without cascade (which descendants
recompute is the deployment's decision, from column lineage) — the invalidator records it and the re-runs follow
the coverage protocol like any other. The invalidation's id is derived from the versions deployed, so a leader that
dies before recording them publishes the same ids again on the next start, and they change nothing twice. Until the
build-and-switch mode lands, a changed model is recomputed in place: its intervals are replaced one by one.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping

from cbt.config.settings import Config
from cbt.contract.messages import Invalidation
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeploymentPlan, VersionRecord, plan_deployment
from cbt.models.spec import IncrementalModel, ModelId
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


def invalidations(plan: DeploymentPlan, models: ModelSet, covered: Mapping[ModelId, Coverage]) -> list[Invalidation]:
    """One invalidation per recomputed incremental model with coverage, over its covered range."""
    deployment = hashlib.sha256("".join(sorted(f"{v.model}={v.data_hash};" for v in plan.new_versions))
                                .encode()).hexdigest()[:16]
    out = []
    for model_id, reasons in plan.recompute.items():
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


async def deploy(models: ModelSet, prints: Mapping[ModelId, Fingerprint], record: VersionRecord,
                 coverage: Callable[[Collection[ModelId]], Mapping[ModelId, Coverage]],
                 publish: Callable[[Invalidation], Awaitable[None]], at_ms: int) -> DeploymentPlan:
    """Classify, re-run what the changes reach, then record the versions (a failure before that repeats the same
    invalidations at the next attempt, which change nothing twice)."""
    deployed = await asyncio.to_thread(record.deployed_versions)
    plan = plan_deployment(models, prints, deployed, at_ms)
    for model_id, change in plan.changes.items():
        if change.category != "new" or deployed:
            log.info("model version: %s", change.category, extra={"model": model_id, "reasons": list(change.reasons)})
    events = invalidations(plan, models, coverage(list(plan.recompute)))
    for event in events:
        log.info("model version: recomputing", extra={"model": event.model, "range": [event.start, event.end],
                                                      "reason": event.reason})
        await publish(event)
    await asyncio.to_thread(record.record_versions, plan.new_versions)
    return plan
