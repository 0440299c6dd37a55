"""``cbt import-cbt`` on a CBT project of our own that holds every construct it converts or reports
(tests/fixtures/cbt_project): the project converts completely, its report is exactly the expected one, and the
result is a project of ours — ``cbt validate`` passes and every model renders to Spark SQL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlglot

from cbt.cli import main
from cbt.config.settings import load_config
from cbt.import_cbt.files import import_project
from cbt.import_cbt.report import format_report
from cbt.models.loader import load_models
from cbt.models.render import render_bounds_query
from cbt.models.spec import ExternalModel, IncrementalModel
from cbt.models.templates import RenderSettings, ScanContext, TaskContext
from cbt.models.writes import task_statements
from tests.unit.hostile_yaml import LAUGHS

FIXTURE = Path(__file__).parents[2] / "fixtures" / "cbt_project"
EXPECTED_REPORT = FIXTURE.with_suffix(".report")


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    dest = tmp_path_factory.mktemp("imported") / "project"
    result = import_project(FIXTURE, dest)
    assert (result.models_found, result.models_converted, result.models_transpiled) == (10, 10, 9)
    return dest, format_report(result.notes)


def test_the_report_lists_exactly_what_was_not_converted(converted: tuple[Path, str]) -> None:
    _, report = converted
    assert report.splitlines() == EXPECTED_REPORT.read_text().splitlines()


def test_the_converted_project_validates_and_every_model_renders_spark_sql(converted: tuple[Path, str]) -> None:
    dest, _ = converted
    config = load_config(dest / "config.yaml", {})
    assert [t.expression for t in config.interval_types["slot"]] == ["value / 12"]  # (the CEL-only one reported)
    models = load_models(config)
    settings = RenderSettings.from_config(config)
    rendered: dict[str, list[str]] = {}
    for model in models.models.values():
        if model.exec is not None:
            continue
        if isinstance(model, ExternalModel):
            scans = [ScanContext(), ScanContext(is_incremental_scan=True, previous_min=10, previous_max=20)]
            rendered[model.id] = [s for scan in scans for s in render_bounds_query(model, scan, settings)]
            continue
        is_incremental = isinstance(model, IncrementalModel)
        task = TaskContext(
            model.id, int(time.time()), 3600 if is_incremental else None, 7200 if is_incremental else None
        )
        rendered[model.id] = task_statements(model, task, settings)
    assert len(rendered) == 8
    for model_id, statements in rendered.items():
        for statement in statements:
            assert sqlglot.parse(statement, read="spark", error_level=sqlglot.ErrorLevel.RAISE), model_id


def test_cbts_idempotency_idiom_becomes_write_strategy_replace(converted: tuple[Path, str]) -> None:
    dest, _ = converted
    model = load_models(load_config(dest / "config.yaml", {})).models["mart.hourly_blocks"]
    assert isinstance(model, IncrementalModel)
    assert model.write.strategy == "replace"
    assert model.write.replace_where == (
        "hour >= TIMESTAMP_SECONDS({{ bounds.start }}) AND hour < TIMESTAMP_SECONDS({{ bounds.end }})"
    )
    assert model.sql is not None and "DELETE" not in model.sql and "FINAL" not in model.sql
    assert model.fill.allow_gap_skipping is False and model.limits.max is None


def test_the_command_prints_the_report_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import-cbt", str(FIXTURE), str(tmp_path / "new")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == EXPECTED_REPORT.read_text().splitlines()
    assert "10 of 10 models converted (9 with all their SQL in Spark SQL)" in err

    assert main(["import-cbt", str(FIXTURE), str(tmp_path / "new")]) == 1
    assert "exists and is not an empty folder" in capsys.readouterr().err

    assert main(["import-cbt", str(tmp_path / "nowhere"), str(tmp_path / "b")]) == 1
    assert "nowhere: not a folder" in capsys.readouterr().err

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text("models:\n  env: [unclosed\n")
    assert main(["import-cbt", str(broken), str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert "config.yaml is not readable YAML" in err and "config.yaml:3" in err and "Traceback" not in err


def test_nothing_outside_the_project_folder_is_read(tmp_path: Path) -> None:
    """A configured path that climbs out of SRC, and a symlink inside it, point at files the import must not copy."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.sql").write_text("---\ntable: secret\n---\nSELECT 'outside'\n")
    src = tmp_path / "cbt"
    (src / "models" / "transformations").mkdir(parents=True)
    (src / "models" / "transformations" / "linked.sql").symlink_to(outside / "secret.sql")
    (src / "config.yaml").write_text("models:\n  external:\n    paths: [\"../outside\"]\n"
                                     "  transformations:\n    paths: [\"models/transformations\"]\n")

    result = import_project(src, tmp_path / "new")

    copied = "".join(p.read_text() for p in (tmp_path / "new").rglob("*") if p.is_file())
    assert "outside" not in copied
    assert any("models.external.paths ../outside" in note.what for note in result.notes)


def test_a_config_that_is_a_symlink_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It could name any file the importing user may read (its lines would be quoted in the report)."""
    outside = tmp_path / "outside.yaml"
    outside.write_text("models:\n  env: {SECRET: hunter2}\n")
    src = tmp_path / "cbt"
    src.mkdir()
    (src / "config.yaml").symlink_to(outside)
    assert main(["import-cbt", str(src), str(tmp_path / "new")]) == 1
    err = capsys.readouterr().err
    assert "config.yaml: a symbolic link" in err and not (tmp_path / "new").exists()


def test_a_billion_laughs_config_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "cbt"
    src.mkdir()
    (src / "config.yaml").write_text(LAUGHS)
    started = time.monotonic()
    assert main(["import-cbt", str(src), str(tmp_path / "new")]) == 1
    assert "aliases expand to more than" in capsys.readouterr().err and time.monotonic() - started < 10
