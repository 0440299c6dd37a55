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
from collections.abc import Mapping
from dataclasses import dataclass, replace

from cbt.models.dag import ModelSet
from cbt.models.spec import Dependency, IncrementalModel, ModelId, Transformation, dependency_ids

BUILD_MARK = "__cbt_v"
_BUILD_ID = re.compile(rf"^(?P<database>[^.]+)\.(?P<table>.+){BUILD_MARK}(?P<version>[0-9]+)$")


@dataclass(frozen=True)
class Build:
    """One model's version being built: ``live`` is the definition its name serves until the switch."""

    model: ModelId
    version: int
    live: Transformation

    @property
    def table(self) -> ModelId:
        return build_id(self.model, self.version)


def build_id(model_id: ModelId, version: int) -> ModelId:
    """The build table of ``model_id``'s ``version``: beside the model, in its database."""
    return f"{model_id}{BUILD_MARK}{version}"


def built_model(model_id: ModelId) -> tuple[ModelId, int] | None:
    """The model and version a build table builds; None for any other id."""
    found = _BUILD_ID.match(model_id)
    return None if found is None else (f"{found['database']}.{found['table']}", int(found["version"]))


def is_buildable(model: Transformation) -> bool:
    """Only an incremental SQL model is built beside its live version; a scheduled model recomputes at its next run
    anyway, and an exec model's scripts are not kept with its version, so both change in place."""
    return isinstance(model, IncrementalModel) and model.sql is not None


def with_builds(models: ModelSet, builds: Mapping[ModelId, Build]) -> ModelSet:
    """The set to plan and run while ``builds`` are in progress: each built model's name with its live definition,
    plus one build per model with the files' definition (``models`` holds the files' definitions)."""
    if not builds:
        return models
    out = dict(models.models)
    for model_id, build in builds.items():
        files = models.get(model_id)
        if not isinstance(files, IncrementalModel):
            raise ValueError(f"{model_id}: only an incremental model is built beside its live version")
        out[model_id] = build.live
        reads = {parent: builds[parent].table for parent in models.dependencies(model_id) if parent in builds}
        out[build.table] = replace(files, table=files.table + BUILD_MARK + str(build.version), reads=reads,
                                   dependencies=tuple(_renamed(dep, reads) for dep in files.dependencies),
                                   expose=None)
    return ModelSet(out, models.external_database, models.transformation_database, models.warnings)


def _renamed(dep: Dependency, reads: Mapping[ModelId, ModelId]) -> Dependency:
    if isinstance(dep, tuple):
        return tuple(reads.get(member, member) for member in dependency_ids(dep))
    return reads.get(dep, dep)
