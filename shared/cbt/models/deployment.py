"""Deploying model files: compare each model's version with the one deployed, and decide what recomputes.

A deployment is the services loading the model files (a restart, a rollout). For every transformation the files'
fingerprint (``cbt.models.versions``) is compared with the deployed version's: a model never deployed — or deployed
before versions were recorded — becomes version 1 as it is (nothing recomputes: its rows are what that version
computed); a changed one becomes the next version, classified (``cbt.models.changes``), and the impact of all the
changes together says which models recompute and why. ``DeploymentPlan.new_versions`` is what to record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cbt.models.changes import Change, Impact, classify, impact
from cbt.models.dag import ModelSet
from cbt.models.spec import ModelId, Transformation
from cbt.models.versions import Fingerprint


@dataclass(frozen=True)
class DeployedVersion:
    """One version of one model as recorded when it was deployed."""

    model: ModelId
    version: int
    data_hash: str
    metadata_hash: str
    definition: Mapping[str, Any]
    category: str = "new"
    reasons: tuple[str, ...] = ()
    deployed_ms: int = 0


class VersionRecord(Protocol):
    """Where deployed versions are kept (an admin table)."""

    def record_versions(self, versions: list[DeployedVersion]) -> None: ...

    def deployed_versions(self) -> dict[ModelId, DeployedVersion]:
        """Each model's latest deployed version."""
        ...


@dataclass(frozen=True)
class DeploymentPlan:
    changes: dict[ModelId, Change] = field(default_factory=dict)
    """Every model whose version or metadata changed, or that is new."""
    impact: Impact = field(default_factory=Impact)
    new_versions: list[DeployedVersion] = field(default_factory=list)

    @property
    def recompute(self) -> dict[ModelId, tuple[str, ...]]:
        return self.impact.recompute


def plan_deployment(models: ModelSet, fingerprints: Mapping[ModelId, Fingerprint],
                    deployed: Mapping[ModelId, DeployedVersion], at_ms: int) -> DeploymentPlan:
    """``fingerprints``: the files' version of each transformation (its definition's normalised SQL gives the
    column lineage)."""
    changes: dict[ModelId, Change] = {}
    new_versions: list[DeployedVersion] = []
    for model_id, print_ in fingerprints.items():
        before = deployed.get(model_id)
        metadata_changed = before is not None and before.metadata_hash != print_.metadata
        change = classify(model_id, None if before is None else before.definition, print_.definition,
                          metadata_changed=metadata_changed)
        if change.category == "unchanged":
            continue
        changes[model_id] = change
        version = 1 if before is None else before.version + (0 if change.category == "metadata" else 1)
        new_versions.append(DeployedVersion(model_id, version, print_.data, print_.metadata, print_.definition,
                                            change.category, change.reasons, at_ms))
    parents = {m.id: list(models.dependencies(m.id)) for m in models}
    tables = {m.id: m.id for m in models}
    statements = {model_id: print_.definition.get("sql") for model_id, print_ in fingerprints.items()}
    reached = impact(changes, models.topological_order(), parents, statements, tables)
    return DeploymentPlan(changes, reached, new_versions)


def transformations(models: ModelSet) -> list[Transformation]:
    return [*models.incrementals, *models.scheduled]
