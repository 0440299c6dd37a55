"""A model's version (``cbt.models.versions``): what changes it, what does not."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest

from cbt.models.spec import ExecOptions, IncrementalModel, Interval, Limits, ScheduledModel, Schedules, Write
from cbt.models.templates import RenderSettings
from cbt.models.versions import DATA_FIELDS, IDENTITY_FIELDS, METADATA_FIELDS, fingerprint
from tests.unit.scheduling.factories import inc

SQL = """SELECT slot, avg(x) AS avg_x
FROM {{ ref("src.blocks") }}
WHERE ts >= timestamp_seconds({{ bounds.start }}) AND ts < timestamp_seconds({{ bounds.end }})
GROUP BY slot"""
SETTINGS = RenderSettings(external_database="src", transformation_database="an")


def model(sql: str = SQL, **changes: object) -> IncrementalModel:
    base = replace(inc("an.hourly", ["src.blocks"], imax=3600), sql=sql,
                   write=Write("replace", replace_where="ts >= timestamp_seconds({{ bounds.start }})"))
    return replace(base, **changes)  # type: ignore[arg-type]


def version(m: IncrementalModel | ScheduledModel, base_dir: Path | None = None) -> str:
    return fingerprint(m, SETTINGS, base_dir).data


def test_every_field_of_a_transformation_is_data_metadata_or_identity_exactly_once() -> None:
    for kind in (IncrementalModel, ScheduledModel):
        for f in dataclasses.fields(kind):
            homes = [name for name, fields in (("data", DATA_FIELDS), ("metadata", METADATA_FIELDS),
                                               ("identity", IDENTITY_FIELDS)) if f.name in fields]
            assert len(homes) == 1, f"{kind.__name__}.{f.name} is in {homes or 'none'}: decide whether it changes rows"


@pytest.mark.parametrize("sql", [
    pytest.param(SQL.replace("\n", "\n    ").replace("avg(x)", "AVG( x )"), id="formatting-and-case"),
    pytest.param("-- the hourly average\n" + SQL.replace("GROUP BY", "/* per slot */ GROUP BY"), id="comments"),
    pytest.param(SQL.replace("avg_x", "`avg_x`").replace("slot,", "`slot`,"), id="identifier-quoting"),
    pytest.param(SQL.replace("SELECT slot", "select SLOT"), id="identifier-case"),
])
def test_formatting_comments_and_quoting_keep_the_version(sql: str) -> None:
    assert version(model(sql)) == version(model())


@pytest.mark.parametrize("changes", [
    pytest.param({"sql": SQL.replace("avg(x)", "round(avg(x), 2)")}, id="expression"),
    pytest.param({"sql": SQL.replace("AND ts <", "AND x > 0 AND ts <")}, id="filter"),
    pytest.param({"interval": Interval(max=7200, min=7200, type="timestamp")}, id="interval"),
    pytest.param({"dependencies": ("src.blocks", "src.other")}, id="dependencies"),
    pytest.param({"write": Write("append")}, id="write-strategy"),
    pytest.param({"write": Write("replace", replace_where="ts > timestamp_seconds({{ bounds.start }})")},
                 id="replace-where"),
])
def test_what_changes_rows_changes_the_version(changes: dict[str, object]) -> None:
    assert version(model(**changes)) != version(model())


@pytest.mark.parametrize("changes", [
    pytest.param({"tags": ("new",)}, id="tags"),
    pytest.param({"schedules": Schedules(forwardfill="@every 10s", backfill="")}, id="schedules"),
    pytest.param({"limits": Limits(min=100)}, id="limits"),
    pytest.param({"timeout_s": 30}, id="timeout"),
])
def test_metadata_changes_its_own_hash_only(changes: dict[str, object]) -> None:
    before, after = fingerprint(model(), SETTINGS), fingerprint(model(**changes), SETTINGS)
    assert after.data == before.data
    assert after.metadata != before.metadata


def test_an_env_value_the_template_reads_changes_the_version() -> None:
    reads = model(SQL.replace("avg(x)", "avg(x) * {{ env.SCALE }}"))
    assert fingerprint(reads, replace(SETTINGS, env={"SCALE": "2"})).data != \
        fingerprint(reads, replace(SETTINGS, env={"SCALE": "3"})).data


def test_an_exec_model_s_version_follows_its_command_and_the_content_of_its_script(tmp_path: Path) -> None:
    script = tmp_path / "scripts" / "load.py"
    script.parent.mkdir()
    script.write_text("print('v1')\n")
    exec_model = model(None, exec="python scripts/load.py --fast")
    first = version(exec_model, tmp_path)

    assert version(exec_model, tmp_path) == first
    assert version(replace(exec_model, exec="python scripts/load.py --slow"), tmp_path) != first
    assert version(replace(exec_model, exec_options=ExecOptions(shell=True)), tmp_path) != first
    script.write_text("print('v2')\n")
    assert version(exec_model, tmp_path) != first
