"""Deploying model files: compare each model's version with the one deployed, and decide what recomputes.

A deployment is the services loading the model files (a restart, a rollout). For every transformation the files'
fingerprint (``cbt.models.versions``) is compared with the deployed version's: a model never deployed — or deployed
before versions were recorded — becomes version 1 as it is (nothing recomputes: its rows are what that version
computed); a changed one becomes the next version, classified (``cbt.models.changes``), and the impact of all the
changes together says which models recompute and why. ``DeploymentPlan.new_versions`` is what to record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from pydantic import TypeAdapter

from cbt.models.changes import Change, Impact, classify, impact
from cbt.models.dag import ModelSet
from cbt.models.interval_checks import IntervalCheck
from cbt.models.spec import IncrementalModel, ModelId, Transformation
from cbt.models.stored import definition_document
from cbt.models.versions import Fingerprint

VersionState = Literal["live", "building", "retired", "superseded", "rolled_back"]
"""``live``: what the model's name serves. ``building``: being built into its ``build_table`` while the live one
keeps serving. ``retired``: was live until a switch replaced it (``cbt rollback`` can switch back to it).
``superseded``: a build that a newer deployment replaced before it switched. ``rolled_back``: was live until
``cbt rollback``; files that still define it are not deployed again (until they change)."""


@dataclass(frozen=True)
class DeployedVersion:
    """One version of one model as recorded when it was deployed, or when its state changed (the latest row of a
    version is its state)."""

    model: ModelId
    version: int
    data_hash: str
    metadata_hash: str
    definition: Mapping[str, Any]
    category: str = "new"
    reasons: tuple[str, ...] = ()
    deployed_ms: int = 0
    spec: Mapping[str, Any] | None = None
    """The whole model (``cbt.models.stored``), so this version runs without its files; None for versions recorded
    before it was kept."""
    state: VersionState = "live"
    build_table: str | None = None
    """Where a ``building`` version is built (``database.table``); None when it is built in place."""
    table_version: int | None = None
    """A ``retired`` version switched by copying its build's rows (before location switches): the Delta version of
    the model's table it last served (``cbt rollback`` restores it)."""
    table_location: str | None = None
    """Where the version's rows are, once a switch moved the model's name between tables (``cbt.adapters.switch``):
    a ``live`` version's table, a ``retired`` one's (``cbt rollback`` points the name back at it). None: the table
    the catalog names (versions switched before locations were)."""
    covered_end: int | None = None
    """A ``retired`` version: where the model's coverage ended at the switch (what came after was computed by the
    version that replaced it: a rollback re-runs it)."""


class VersionRecord(Protocol):
    """Where deployed versions are kept (an admin table)."""

    def record_versions(self, versions: list[DeployedVersion]) -> None: ...

    def deployed_versions(self) -> dict[ModelId, DeployedVersion]:
        """Each model's latest deployed version."""
        ...

    def all_versions(self) -> list[DeployedVersion]:
        """Every version of every model in its latest state (``current_states``)."""
        ...


def highest_versions(versions: Iterable[DeployedVersion]) -> dict[ModelId, int]:
    """Each model's highest version number in ``versions``."""
    out: dict[ModelId, int] = {}
    for version in versions:
        out[version.model] = max(out.get(version.model, 0), version.version)
    return out


def current_states(rows: Iterable[DeployedVersion]) -> list[DeployedVersion]:
    """Each (model, version)'s latest row: its state now."""
    out: dict[tuple[ModelId, int], DeployedVersion] = {}
    for row in rows:
        key = (row.model, row.version)
        if key not in out or row.deployed_ms >= out[key].deployed_ms:
            out[key] = row
    return sorted(out.values(), key=lambda v: (v.model, v.version))


def latest_versions(versions: Iterable[DeployedVersion]) -> dict[ModelId, DeployedVersion]:
    """Each model's latest deployed version among ``versions`` (current states): the one the files were last
    compared with — being built, or live — never a superseded or retired one."""
    out: dict[ModelId, DeployedVersion] = {}
    for version in versions:
        seen = out.get(version.model)
        if version.state in ("live", "building") and (seen is None or version.version > seen.version):
            out[version.model] = version
    return out


def live_versions(versions: Iterable[DeployedVersion]) -> dict[ModelId, DeployedVersion]:
    """Each model's live version among ``versions`` (current states): the newest one in state ``live``."""
    out: dict[ModelId, DeployedVersion] = {}
    for version in versions:
        if version.state == "live" and (version.model not in out or version.version > out[version.model].version):
            out[version.model] = version
    return out


@dataclass(frozen=True)
class DeploymentPlan:
    changes: dict[ModelId, Change] = field(default_factory=dict)
    """Every model whose version or metadata changed, or that is new."""
    impact: Impact = field(default_factory=Impact)
    new_versions: list[DeployedVersion] = field(default_factory=list)
    starts: dict[ModelId, int] = field(default_factory=dict)
    """A recomputed model recomputes from this position on (``change.mode: forward_only`` with
    ``effective_from``, and the descendants it reaches); absent: all it covered."""
    at_ms: int = 0
    """When it was planned (the deployment's time, on every row it records)."""
    rechecks: dict[ModelId, tuple[IntervalCheck, ...]] = field(default_factory=dict)
    """Models not recomputed whose checks are new or changed: those checks run again over their published intervals
    (``changed_checks``)."""

    @property
    def recompute(self) -> dict[ModelId, tuple[str, ...]]:
        return self.impact.recompute


_CHECK: TypeAdapter[IntervalCheck] = TypeAdapter(IntervalCheck)
RECHECK_INTERVALS = 1440
"""The most intervals one re-check task covers (a day of minutes)."""


def plan_deployment(models: ModelSet, fingerprints: Mapping[ModelId, Fingerprint],
                    deployed: Mapping[ModelId, DeployedVersion], at_ms: int,
                    highest: Mapping[ModelId, int] | None = None) -> DeploymentPlan:
    """``fingerprints``: the files' version of each transformation (its definition's normalised SQL gives the
    column lineage). ``highest``: each model's highest version number ever recorded — a new version takes the next
    one, so it never reuses a rolled-back or superseded version's number (nor its build's folder)."""
    changes: dict[ModelId, Change] = {}
    for_impact: dict[ModelId, Change] = {}
    new_versions: list[DeployedVersion] = []
    own_starts: dict[ModelId, int] = {}
    for model_id, print_ in fingerprints.items():
        before = deployed.get(model_id)
        metadata_changed = before is not None and before.metadata_hash != print_.metadata
        change = classify(model_id, None if before is None else before.definition, print_.definition,
                          metadata_changed=metadata_changed)
        if change.category == "unchanged":
            continue
        model = models.models.get(model_id)
        change, applied, start = _with_policy(change, model) if isinstance(model, IncrementalModel) else (
            change, change, None)
        changes[model_id] = change
        for_impact[model_id] = applied
        if start is not None:
            own_starts[model_id] = start
        version = 1 if before is None else before.version if change.category == "metadata" else max(
            before.version, (highest or {}).get(model_id, 0)) + 1
        new_versions.append(DeployedVersion(model_id, version, print_.data, print_.metadata, print_.definition,
                                            change.category, change.reasons, at_ms,
                                            definition_document(model) if isinstance(model, Transformation) else None))
    parents = {m.id: list(models.dependencies(m.id)) for m in models}
    tables = {m.id: m.id for m in models}
    statements = {model_id: print_.definition.get("sql") for model_id, print_ in fingerprints.items()}
    reached = impact(for_impact, models.topological_order(), parents, statements, tables)
    rechecks = {m.id: changed for m in models.incrementals
                if m.id not in reached.recompute and (changed := changed_checks(m, deployed.get(m.id)))}
    return DeploymentPlan(changes, reached, new_versions, _starts(reached, own_starts, parents), at_ms, rechecks)


def recheck_pieces(step: int, covered: Iterable[tuple[int, int]],
                   most: int = RECHECK_INTERVALS) -> list[tuple[int, int, int | None]]:
    """``(position, length, step)`` of the re-check tasks over ``covered``: runs of up to ``most`` whole intervals
    of ``step`` from each covered range's start (``step`` None: one interval), and what is left at a range's end as
    one piece."""
    pieces: list[tuple[int, int, int | None]] = []
    for start, end in covered:
        position = start
        while end - position >= step:
            length = min(most, (end - position) // step) * step
            pieces.append((position, length, step if length > step else None))
            position += length
        if position < end:
            pieces.append((position, end - position, None))
    return pieces


def changed_checks(model: IncrementalModel, deployed: DeployedVersion | None) -> tuple[IntervalCheck, ...]:
    """The model's checks that are new or differ from the deployed version's (its kept definition): a check's
    definition is metadata, so only these checks run again over the published intervals. None for a model first
    deployed, or deployed before definitions were kept, or whose rows carry no interval predicate (``append``)."""
    if deployed is None or deployed.spec is None or not model.checks or model.write.strategy == "append":
        return ()
    before = {c.get("name"): c for c in deployed.spec.get("model", {}).get("checks") or [] if isinstance(c, dict)}
    dump = _CHECK.dump_python
    return tuple(c for c in model.checks if before.get(c.name) != dump(c, mode="json"))


def _with_policy(change: Change, model: IncrementalModel) -> tuple[Change, Change, int | None]:
    """The change as reported, as it acts, and the position it recomputes from, under the model's ``change:``."""
    policy = model.change
    if not change.recomputes and change.category != "metadata":
        return change, change, None  # (new or unchanged: nothing to decide)
    if policy.category is not None:
        columns: frozenset[str] | None = None if policy.category == "breaking" else frozenset()
        change = replace(change, category=policy.category, changed_columns=columns,
                         reasons=(*change.reasons, f"category {policy.category} set by change.category"))
    if policy.mode != "forward_only" or not change.recomputes:
        return change, change, None
    if policy.effective_from is None:
        kept = replace(change, reasons=(*change.reasons, "forward_only: history kept, new intervals only"))
        return kept, replace(kept, category="metadata", changed_columns=frozenset()), None
    change = replace(change, reasons=(*change.reasons, f"forward_only from {policy.effective_from}"))
    return change, change, policy.effective_from


def _starts(reached: Impact, own: Mapping[ModelId, int], parents: Mapping[ModelId, list[ModelId]]) -> dict[
        ModelId, int]:
    """Where each recomputed model starts: its own ``effective_from``, or — reached through recomputed parents that
    all start somewhere — the lowest of their starts."""
    starts: dict[ModelId, int | None] = {}
    for model_id in reached.recompute:  # (dependency order)
        if model_id in own:
            starts[model_id] = own[model_id]
            continue
        upstream = [starts[p] for p in parents.get(model_id, ()) if p in starts]
        bounded = [s for s in upstream if s is not None]
        starts[model_id] = min(bounded) if upstream and len(bounded) == len(upstream) else None
    return {m: s for m, s in starts.items() if s is not None}


def transformations(models: ModelSet) -> list[Transformation]:
    return [*models.incrementals, *models.scheduled]


@dataclass(frozen=True)
class Rollback:
    """What ``cbt rollback`` does: point each model's name back at the version its last switch retired
    (``restores``: the retired versions, with where their rows are — ``table_location``, or for a switch that copied,
    the Delta ``table_version`` to restore), record the versions (``rows``), and re-run what the rolled-back versions
    computed after the switch (``heads``: model, position from which its coverage was computed by them)."""

    restores: list[DeployedVersion]
    rows: list[DeployedVersion]
    heads: dict[ModelId, int]


class NothingToRollBack(ValueError):
    """The model has no retired version to switch back to."""


def plan_rollback(model_id: ModelId, versions: Iterable[DeployedVersion], at_ms: int) -> Rollback:
    """Switch ``model_id`` back to the version its last switch retired, with every model switched with it (a reader
    never sees a rolled-back parent beside a child still on its new version)."""
    states = list(versions)
    live = live_versions(states)
    retired = [v for v in states if v.state == "retired"
               and (v.table_location is not None or v.table_version is not None)]
    mine = [v for v in retired if v.model == model_id and model_id in live and v.version < live[model_id].version]
    if not mine:
        raise NothingToRollBack(f"{model_id}: no earlier version to switch back to (a version is kept once a switch "
                                "replaced it; a change made in place has none)")
    switch_ms = max(mine, key=lambda v: v.version).deployed_ms
    group = sorted((v for v in retired if v.deployed_ms == switch_ms and v.model in live), key=lambda v: v.model)
    rows: list[DeployedVersion] = []
    for old in group:
        rows.append(replace(live[old.model], state="rolled_back", deployed_ms=at_ms))
        rows.append(replace(old, state="live", deployed_ms=at_ms, table_version=None, covered_end=None))
    return Rollback(group, rows,
                    {v.model: v.covered_end for v in group if v.covered_end is not None})


def rolled_back_files(fingerprints: Mapping[ModelId, Fingerprint],
                      versions: Iterable[DeployedVersion]) -> set[ModelId]:
    """The models whose files still define a version ``cbt rollback`` switched away from: they are not deployed
    again until their files change."""
    states = list(versions)
    live = live_versions(states)
    out = set()
    for version in states:
        print_ = fingerprints.get(version.model)
        serving = live.get(version.model)
        if (version.state == "rolled_back" and print_ is not None and print_.data == version.data_hash
                and serving is not None and serving.version < version.version):
            out.add(version.model)
    return out
