"""``cbt status`` names the tables an in-place change has not finished with: the intervals each version's rows hold,
read from the admin tables' files (no Spark)."""

from __future__ import annotations

from pathlib import Path

from cbt.adapters.delta_admin import DeltaAdmin
from cbt.cli.plan_cmds import render_mixed_versions
from cbt.config.settings import Config, load_config
from cbt.models.deployment import DeployedVersion
from cbt.scheduling.task_runs import compress
from cbt.service.model_changes import read_mixed_versions
from cbt.state.admin_records import CompletedInterval, InvalidationRecord

PROJECT = Path(__file__).resolve().parents[3]
MODEL, OTHER = "analytics.in_place", "analytics.built"


def files_admin(config: Config) -> DeltaAdmin:
    names = config.admin
    warehouse = config.warehouse()
    assert warehouse is not None
    admin = DeltaAdmin(None, (names.incremental.database, names.incremental.table),
                       (names.scheduled.database, names.scheduled.table),
                       (names.invalidations.database, names.invalidations.table), files=(warehouse, {}))
    admin.ensure_tables()
    admin.tables.versions.ensure()
    return admin


def test_a_table_half_recomputed_in_place_is_listed_with_what_each_version_holds(tmp_path: Path) -> None:
    config = load_config(PROJECT / "config.yaml", environ={"CBT__SPARK__WAREHOUSE": str(tmp_path)})
    admin = files_admin(config)
    admin.tables.versions.record_versions([
        DeployedVersion(MODEL, 1, "a" * 64, "m", {}, deployed_ms=1), DeployedVersion(MODEL, 2, "b" * 64, "m", {},
                                                                                      deployed_ms=2)])
    admin.record_completed([CompletedInterval(MODEL, s, 60, f"t{s}", version="a" * 12) for s in (0, 60, 120)]
                           + [CompletedInterval(OTHER, 0, 60, "o", version="c" * 12)])
    admin.record_invalidation(InvalidationRecord(id="deploy", model=MODEL, start=0, end=60, reason="model change",
                                                 source="test", affected={MODEL: compress([(0, 60)])},
                                                 received_at_ms=3))
    admin.record_completed([CompletedInterval(MODEL, 0, 60, "again", invalidation_seq=1, version="b" * 12)])

    mixed = read_mixed_versions(config, [MODEL, OTHER])

    assert mixed == {MODEL: {1: ((60, 180),), 2: ((0, 60),)}}, "a table of one version is not listed"
    assert render_mixed_versions(mixed) == ("In-place changes under way (the intervals each version's rows hold):\n"
                                            f"  {MODEL}: version 1 [60, 180); version 2 [0, 60)")


def test_without_a_warehouse_status_reads_no_versions() -> None:
    config = load_config(PROJECT / "config.yaml", environ={"CBT__SPARK__WAREHOUSE": ""})
    assert config.warehouse() is None and read_mixed_versions(config, [MODEL]) == {}


def test_plan_says_what_a_recompute_takes_from_the_model_s_recorded_runs(tmp_path: Path) -> None:
    from cbt.models.loader import load_models
    from cbt.service.model_changes import compare, render, to_json

    config = load_config(PROJECT / "config.yaml", environ={"CBT__SPARK__WAREHOUSE": str(tmp_path)})
    models = load_models(config)
    minute = "analytics.block_propagation_minute"
    admin = files_admin(config)
    admin.tables.versions.record_versions([DeployedVersion(minute, 1, "0" * 64, "m", {}, deployed_ms=1)])
    admin.record_completed([CompletedInterval(minute, 60 * i, 60, f"t{i}", duration_ms=1_000) for i in range(6)]
                           + [CompletedInterval(minute, 360, 240, "batch", duration_ms=1_600)])

    changes = compare(config, models, {minute: ((0, 600),)})
    [entry] = [r for r in to_json(changes)["recompute"] if r["id"] == minute]
    assert (entry["intervals"], entry["tasks"]) == (10, 1) and entry["estimate_s"] is not None, entry
    assert f"{minute}  [0, 600): 10 intervals in 1 task, about " in render(changes)


def test_the_read_api_finds_a_switched_model_s_files_through_the_versions_record(tmp_path: Path) -> None:
    from cbt.service.model_changes import live_folders

    only_api = {"CBT__SPARK__WAREHOUSE": "", "CBT__API__TABLES__WAREHOUSE": str(tmp_path)}
    config = load_config(PROJECT / "config.yaml", environ=only_api)
    assert live_folders(config) == {}, "nothing recorded yet: every model in the folder of its name"
    admin = files_admin(load_config(PROJECT / "config.yaml", environ={"CBT__SPARK__WAREHOUSE": str(tmp_path)}))
    admin.tables.versions.record_versions([
        DeployedVersion(MODEL, 1, "a" * 64, "m", {}, deployed_ms=1, state="retired",
                        table_location=f"file:{tmp_path}/analytics.db/in_place"),
        DeployedVersion(MODEL, 2, "b" * 64, "m", {}, deployed_ms=1, state="live",
                        table_location=f"file:{tmp_path}/analytics.db/in_place__cbt_v2/"),
        DeployedVersion(OTHER, 1, "c" * 64, "m", {}, deployed_ms=1)])
    assert live_folders(config) == {MODEL: "in_place__cbt_v2"}, "read with the api's warehouse alone too"
