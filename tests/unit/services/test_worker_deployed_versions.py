"""What a worker knows of the deployed versions: a task naming a build it has not seen makes it read the record
again at once, so a deployment's first tasks run instead of failing as unknown models."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion
from cbt.models.spec import IncrementalModel
from cbt.models.stored import definition_document
from cbt.worker.app import DeployedVersions
from tests.unit.scheduling.factories import ext, inc, models_of

MODELS = ModelSet(models_of(ext("ext.blocks"), inc("an.two", ["ext.blocks"], imax=120)))


def versions(building: bool) -> list[DeployedVersion]:
    live = MODELS.get("an.two")
    assert isinstance(live, IncrementalModel)
    rows = [DeployedVersion("an.two", 1, "h1", "m", {}, spec=definition_document(live))]
    if building:
        rows.append(DeployedVersion("an.two", 2, "h2", "m", {}, deployed_ms=5, state="building",
                                    build_table="an.two__cbt_v2",
                                    spec=definition_document(replace(live, sql="SELECT 2"))))
    return rows


def test_a_build_recorded_just_after_a_read_is_seen_by_the_next_unknown_task() -> None:
    record = {"rows": versions(building=False), "reads": 0}

    def all_versions() -> list[DeployedVersion]:
        record["reads"] += 1  # type: ignore[operator]
        return record["rows"]  # type: ignore[return-value]

    deployed = DeployedVersions(lambda: SimpleNamespace(all_versions=all_versions), {"an.two": "h1"},  # type: ignore[arg-type,return-value]
                                max_age_s=5.0, unknown_age_s=0.0)
    assert "an.two__cbt_v2" not in deployed.running(MODELS, {})[0].models  # (read at start, before the deployment)
    record["rows"] = versions(building=True)  # the coordinator deploys a breaking change a moment later
    assert "an.two__cbt_v2" in deployed.running(MODELS, {})[0].models, "the build's task is not an unknown model"
    assert deployed.short("an.two") is not None and record["reads"] == 2, "a known model's version stays cached"
