"""``cbt init``: the project it writes is one ``cbt validate`` accepts, every name carries the project's, and it
never writes over an existing folder's files. (Making the sample table and running the project to full coverage on
the real stack: tests/e2e/test_tutorial.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from cbt.cli import main
from cbt.cli.init_project import Project, project_files, sample_data_statements


def test_the_written_project_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "shop"), "--no-sample-data"]) == 0
    assert main(["validate", "--config", str(tmp_path / "shop" / "config.yaml")]) == 0
    assert "ok: 2 models (1 external, 1 incremental, 0 scheduled)" in capsys.readouterr().out


def test_every_name_carries_the_project_s() -> None:
    files = project_files(Project("orders_lab"), "/var/warehouse")
    config = files["config.yaml"]
    for setting in ("topic_prefix: orders_lab.", 'key_prefix: "orders_lab:"', "default_database: orders_lab_raw",
                    "default_database: orders_lab\n", "{database: orders_lab_admin}", "warehouse: /var/warehouse"):
        assert setting in config, setting
    assert [s.split()[0:3] for s in sample_data_statements(Project("orders_lab"))] == [
        ["CREATE", "DATABASE", "IF"], ["CREATE", "OR", "REPLACE"]]
    assert "orders_lab_raw.orders" in sample_data_statements(Project("orders_lab"))[1]


def test_an_existing_folder_s_files_are_never_written_over(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "config.yaml").write_text("mine\n")
    assert main(["init", str(tmp_path / "shop"), "--no-sample-data"]) == 1
    assert "is not empty" in capsys.readouterr().err
    assert (tmp_path / "shop" / "config.yaml").read_text() == "mine\n"


@pytest.mark.parametrize("name", ["Shop", "1shop", "shop-2", "a" * 41])
def test_a_name_that_cannot_name_databases_is_refused(tmp_path: Path, name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "x"), "--name", name, "--no-sample-data"]) == 1
    assert "cannot name a project" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
