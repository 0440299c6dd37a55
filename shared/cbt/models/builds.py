"""Building a model's new version beside the one readers see, and the model set the services run meanwhile.

A breaking or non-breaking change to an incremental SQL model is built, by default, into a table of its own — the
*build* — while the model's name keeps serving its live version, which stays fresh. During the build the services
run two models where the files define one:

- the model's name with its **live** definition (the one its deployed version keeps, ``cbt.models.stored``), planned
  and run as before, so readers see one definition, fresh;
- its **build**, ``<table>__cbt_v<version>`` in the same database: the files' definition writing to the build table,
  covering what the live one covers. A build whose parent is rebuilt by the same deployment reads the parent's build
  (its dependencies name the parent's build; ``reads`` lets ``ref()`` and ``dep`` in its SQL still name the parent),
  so a new descendant is computed from the new parent.

When every build of a deployment covers what its live model covers, they switch together (``cbt.models.switch``);
the live definitions then become the files' and the builds leave the set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion, live_versions
from cbt.models.spec import (
    KEPT_FILES_S,
    Dependency,
    IncrementalModel,
    ModelId,
    ScheduledModel,
    Transformation,
    dependency_ids,
)
from cbt.models.stored import model_from_document
from cbt.models.target_tables import owns_table
from cbt.models.versions import short_version

BUILD_MARK = "__cbt_v"
VERSIONS_READ_S = 10
"""How often a running service reads the versions record again for builds and rollbacks (``cbt rollback`` writes it
from outside; a deployment, from the coordinator's leader)."""
_BUILD_ID = re.compile(rf"^(?P<database>[^.]+)\.(?P<table>.+){BUILD_MARK}(?P<version>[0-9]+)$")


@dataclass(frozen=True)
class Build:
    """One model's version being built: ``live`` is the definition its name serves until the switch, ``new`` the
    one being built (both as the versions record keeps them, so a worker whose files are older or newer runs the
    same definitions)."""

    model: ModelId
    version: int
    live: Transformation
    new: IncrementalModel
    live_version: str = ""
    """The live version as tasks carry it (``short_version``)."""
    new_version: str = ""

    @property
    def table(self) -> ModelId:
        return build_id(self.model, self.version)


@dataclass(frozen=True)
class Switched:
    """Where the model's rows were before the switch and are after it (``cbt rollback`` goes back to the first)."""

    old_location: str | None = None
    """The old version's files (registered as the kept table); None when the model had no table, or for a copy."""
    new_location: str | None = None
    """The new version's files (the build's); None for a copy (the model's own table holds them)."""
    table_version: int | None = None
    """A copy: the model's Delta table version before it (what a rollback restores); None otherwise."""


def files_past_retention(versions: Iterable[DeployedVersion], retention_s: Mapping[ModelId, int | None],
                         now_ms: int) -> list[DeployedVersion]:
    """The versions whose files a switch left behind (``retired``, ``rolled_back``, with a ``table_location`` other
    than their model's live version's), and the builds a newer version superseded (``build_table``), since longer
    than their model's ``change.retention`` (``retention_s``; a model missing there: the default; ``None``: kept
    until deleted by hand) — their files may go, and a rollback to them with them."""
    states = list(versions)
    live = live_versions(states)
    out = []
    for version in states:
        serving = live.get(version.model)
        left_behind = (version.state in ("retired", "rolled_back") and version.table_location is not None
                       and (serving is None or serving.table_location != version.table_location))
        if not left_behind and not (version.state == "superseded" and version.build_table):
            continue
        kept_s = retention_s.get(version.model, KEPT_FILES_S)
        if kept_s is not None and version.deployed_ms + kept_s * 1000 <= now_ms:
            out.append(version)
    return out


def build_id(model_id: ModelId, version: int) -> ModelId:
    """The build table of ``model_id``'s ``version``: beside the model, in its database."""
    return f"{model_id}{BUILD_MARK}{version}"


def kept_rows_id(model_id: ModelId, version: int) -> ModelId:
    """Where a switch keeps the completion rows of the version it retires (``cbt rollback`` adopts them back): an
    id of its own — a build's id keeps that build's rows."""
    return f"{model_id}__cbt_kept_v{version}"


def built_model(model_id: ModelId) -> tuple[ModelId, int] | None:
    """The model and version a build table builds; None for any other id."""
    found = _BUILD_ID.match(model_id)
    return None if found is None else (f"{found['database']}.{found['table']}", int(found["version"]))


def is_buildable(model: Transformation) -> bool:
    """Only a model whose table the product owns (an incremental SELECT, written ``replace`` or ``append``:
    ``cbt.models.target_tables.owns_table``) is built beside its live version. A scheduled model recomputes at its
    next run anyway; an exec model's scripts are not kept with its version; a ``sql`` write strategy's statements
    name their own tables: they change in place."""
    return owns_table(model)


def builds_from(versions: Iterable[DeployedVersion]) -> dict[ModelId, Build]:
    """The builds in progress, from every version's current state (``VersionRecord.all_versions``): a model with a
    ``building`` version and a live one, both with their definitions kept."""
    states = list(versions)
    live = live_versions(states)
    out: dict[ModelId, Build] = {}
    for version in states:
        serving = live.get(version.model)
        if version.state != "building" or version.spec is None or serving is None or serving.spec is None:
            continue
        new = model_from_document(version.spec)
        if isinstance(new, IncrementalModel):
            out[version.model] = Build(version.model, version.version, model_from_document(serving.spec), new,
                                       short_version(serving.data_hash), short_version(version.data_hash))
    return out


@dataclass(frozen=True)
class Pin:
    """A model ``cbt rollback`` switched back: it runs its live version's kept definition, whatever its files say,
    until they define another version."""

    live: Transformation
    version: str


def pins_from(versions: Iterable[DeployedVersion]) -> dict[ModelId, Pin]:
    """The rolled-back models (a ``rolled_back`` version newer than the live one) with their live definitions."""
    states = list(versions)
    live = live_versions(states)
    out: dict[ModelId, Pin] = {}
    for version in states:
        serving = live.get(version.model)
        if (version.state == "rolled_back" and serving is not None and serving.version < version.version
                and serving.spec is not None):
            out[version.model] = Pin(model_from_document(serving.spec), short_version(serving.data_hash))
    return out


def deployed_pins(files: Mapping[ModelId, str], versions: Iterable[DeployedVersion]) -> dict[ModelId, Pin]:
    """A worker whose files define another version of a model than the live one (a rolling update, either way)
    runs the live version's kept definition — but for exec models, whose scripts are not kept (``files``: each
    model's version as this process's files define it)."""
    out: dict[ModelId, Pin] = {}
    for model_id, live in live_versions(versions).items():
        version = short_version(live.data_hash)
        if live.spec is None or model_id not in files or files[model_id] == version:
            continue
        model = model_from_document(live.spec)
        if not (isinstance(model, IncrementalModel | ScheduledModel) and model.exec):
            out[model_id] = Pin(model, version)
    return out


def pinned(models: ModelSet, pins: Mapping[ModelId, Pin]) -> ModelSet:
    """``models`` with each rolled-back model's live definition."""
    pins = {model_id: pin for model_id, pin in pins.items() if model_id in models}
    if not pins:
        return models
    return ModelSet({**models.models, **{m: pin.live for m, pin in pins.items()}}, models.external_database,
                    models.transformation_database, models.warnings)


def running_models(files: ModelSet, versions: Iterable[DeployedVersion]) -> ModelSet:
    """The models to run (and to invalidate) with the record's builds and rollbacks: ``with_builds`` over
    ``pinned``, from every version's current state."""
    states = list(versions)
    return with_builds(pinned(files, pins_from(states)), builds_from(states))


def running_versions(files: Mapping[ModelId, str], builds: Mapping[ModelId, Build],
                     pins: Mapping[ModelId, Pin] | None = None) -> dict[ModelId, str]:
    """The version each model of ``with_builds`` (over ``pinned``) runs (tasks carry it): a built model's name its
    live version, its build the new one, a rolled-back model its live one, every other model its files'."""
    out = dict(files)
    for model_id, pin in (pins or {}).items():
        out[model_id] = pin.version
    for model_id, build in builds.items():
        out[model_id], out[build.table] = build.live_version, build.new_version
    return out


def with_builds(models: ModelSet, builds: Mapping[ModelId, Build]) -> ModelSet:
    """The set to plan and run while ``builds`` are in progress: each built model's name with its live definition,
    plus one build per model with its new definition (a build of a model no longer loaded is left out)."""
    builds = {model_id: build for model_id, build in builds.items() if model_id in models}
    if not builds:
        return models
    out = dict(models.models)
    for model_id, build in builds.items():
        out[model_id] = build.live
        reads = {parent: builds[parent].table for parent in _parents(build.new) if parent in builds}
        out[build.table] = replace(build.new, table=build.new.table + BUILD_MARK + str(build.version), reads=reads,
                                   dependencies=tuple(_renamed(dep, reads) for dep in build.new.dependencies),
                                   expose=None)
    return ModelSet(out, models.external_database, models.transformation_database, models.warnings)


def _parents(model: IncrementalModel) -> tuple[ModelId, ...]:
    return tuple(dict.fromkeys(member for dep in model.dependencies for member in dependency_ids(dep)))


def _renamed(dep: Dependency, reads: Mapping[ModelId, ModelId]) -> Dependency:
    if isinstance(dep, tuple):
        return tuple(reads.get(member, member) for member in dependency_ids(dep))
    return reads.get(dep, dep)
