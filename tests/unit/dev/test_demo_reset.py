"""The demo's reset leaves no admin files behind in a local warehouse."""

from __future__ import annotations

from pathlib import Path

from cbt.dev.demo_ops import Namespace, leftover_folders


def test_database_folders_left_in_a_local_warehouse_are_found_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "admin.db" / "cbt_incremental" / "_delta_log").mkdir(parents=True)
    (tmp_path / "someone_else.db").mkdir()
    ns = Namespace(("source", "admin"), "cbt:", "cbt.")

    assert leftover_folders(ns, str(tmp_path)) == [tmp_path / "admin.db"]
    assert leftover_folders(ns, None) == []
    assert leftover_folders(ns, "s3://bucket/warehouse") == []
