"""`cbt validate | dag | render` on the example pipeline and on broken inputs."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from conftest import Project

from cbt.base.errors import CbtError
from cbt.cli import model_cmds
from cbt.models.sqlsplit import split_sql

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_CONFIG = str(REPO / "config.yaml")
PROBLEM_LINE = re.compile(r"^[^\s:][^:]*:\d+: \S+: .+$")


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="cbt")
    model_cmds.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    code: int = args.func(args)
    return code


def test_validate_example_and_how_each_external_gets_its_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("validate", "--config", EXAMPLE_CONFIG) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ok: 11 models (4 external, 5 incremental, 2 scheduled)",
        "bounds of ethereum.beacon_blocks: from the Delta log (slot_start_date_time's file statistics)",
        "bounds of ethereum.raw_transactions: from the Delta log (block_timestamp's file statistics)",
        "bounds of ethereum.validator_entity: from the Delta log (updated_date_time's file statistics)",
    ]  # (raw_transactions_alt is an exec model: its own command finds its bounds)


def test_validate_says_why_a_bounds_query_needs_spark(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.config_text("spark: {warehouse: var/warehouse}\nmodels: {external: {default_database: src}}\n")
    project.file("models/external/blocks.sql", "---\ntable: blocks\ninterval: {type: slot}\n---\n"
                 "SELECT min(slot) AS min, max(slot) + 1 AS max FROM {{ self.from }} WHERE slot > 100\n")
    assert run("validate", "--config", str(project.root / "config.yaml")) == 0
    assert ("bounds of src.blocks: a Spark scan: the bounds query has WHERE (the Delta log holds only whole-table "
            "statistics)") in capsys.readouterr().out.splitlines()


def test_validate_lists_every_problem_one_per_line(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.file("models/transformations/a.sql", "SELECT 1\n")
    project.file("models/transformations/b.yml", "type: scheduled\ntable: b\nschedule: never\nexec: x\n")
    project.file("models/external/c.sql", "---\ntable: c\n---\nSELECT 1\n")
    assert run("validate", "--config", str(project.root / "config.yaml")) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 3 and all(PROBLEM_LINE.match(line) for line in lines), lines
    assert "3 problems found" in captured.err


def test_validate_reports_config_problems(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.config_text("kafka: {bootstrap: x}\nworker: {concurrency: 0}\n")
    assert run("validate", "--config", str(project.root / "config.yaml")) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(PROBLEM_LINE.match(line) for line in lines)


def test_validate_prints_warnings_and_passes(project_with_blocks: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project_with_blocks.config_text(
        "models:\n  overrides: {ghost: {enabled: false}}\n  external: {default_database: ethereum}\n"
    )
    assert run("validate", "--config", str(project_with_blocks.root / "config.yaml")) == 0
    assert "models.overrides.ghost: warning: override names no model; ignored" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "json", "mermaid", "dot"])
def test_dag_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("dag", "--config", EXAMPLE_CONFIG, "--format", fmt) == 0
    out = capsys.readouterr().out
    assert "analytics.block_propagation_five_minute" in out
    if fmt == "json":
        data = json.loads(out)
        edges = {(e["from"], e["to"], e["or_group"]) for e in data["edges"]}
        assert ("ethereum.raw_transactions_alt", "analytics.transactions", True) in edges
        assert ("analytics.validator_entities", "analytics.block_propagation_five_minute", False) in edges
    elif fmt == "mermaid":
        assert out.startswith("flowchart LR")
    elif fmt == "dot":
        assert out.startswith("digraph cbt {") and out.rstrip().endswith("}")


def test_render_replace_model(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["render", "analytics.block_propagation_minute", "--start", "1700000000", "--end", "1700000060"]
    assert run(*argv, "--config", EXAMPLE_CONFIG, "--task-start", "1700000100") == 0
    out = capsys.readouterr().out
    assert "write strategy replace" in out
    statements = split_sql(out)
    assert len(statements) == 1 and "FROM `ethereum`.`beacon_blocks`" in statements[0]
    assert (
        "INSERT INTO `analytics`.`block_propagation_minute` REPLACE WHERE slot_start_date_time >= "
        "timestamp_seconds(1700000000)" in statements[0]
    )


def test_render_append_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("render", "transactions", "--start", "0", "--end", "60", "--config", EXAMPLE_CONFIG) == 0
    out = capsys.readouterr().out
    assert "MERGE INTO `analytics`.`transactions`" in out and "WHEN NOT MATCHED THEN INSERT *" in out


def test_render_sql_strategy_and_scheduled(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run("render", "block_propagation_five_minute", "--start", "0", "--end", "300", "--config", EXAMPLE_CONFIG) == 0
    )
    assert "REPLACE WHERE slot_start_date_time >= timestamp_seconds(0)" in capsys.readouterr().out
    assert run("render", "analytics.entity_leaderboard", "--task-start", "3600", "--config", EXAMPLE_CONFIG) == 0
    out = capsys.readouterr().out
    assert "task analytics.entity_leaderboard:@3600" in out and "timestamp_seconds(3600 - 3600)" in out


def test_render_exec_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(
            "render",
            "analytics.block_gas",
            "--start",
            "100",
            "--end",
            "220",
            "--task-start",
            "5",
            "--config",
            EXAMPLE_CONFIG,
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "# command: python3 models/scripts/block_gas.py" in out
    for line in (
        "BOUNDS_START=100",
        "BOUNDS_END=220",
        "TASK_ID=analytics.block_gas:100:120",
        "DEP_ANALYTICS_TRANSACTIONS_TABLE=transactions",
        "SPARK_REMOTE=sc://127.0.0.1:15002",
    ):
        assert line in out.splitlines()


def test_render_external_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(
            "render",
            "ethereum.beacon_blocks",
            "--scan",
            "incremental",
            "--previous-min",
            "10",
            "--previous-max",
            "20",
            "--config",
            EXAMPLE_CONFIG,
        )
        == 0
    )
    assert "timestamp_seconds(20)" in capsys.readouterr().out
    assert run("render", "raw_transactions_alt", "--config", EXAMPLE_CONFIG) == 0
    assert "CACHE_IS_INCREMENTAL_SCAN=false" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["analytics.transactions"], "give --start and --end", id="incremental-without-bounds"),
        pytest.param(["analytics.transactions", "--start", "5", "--end", "5"], "must be greater", id="empty-interval"),
        pytest.param(
            ["analytics.validator_entities", "--start", "1", "--end", "2"],
            "has no interval",
            id="scheduled-with-bounds",
        ),
        pytest.param(["nope"], "no model 'nope'", id="unknown-model"),
        pytest.param(
            ["ethereum.beacon_blocks", "--scan", "incremental"],
            "needs --previous-min",
            id="incremental-scan-without-previous",
        ),
    ],
)
def test_render_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(CbtError, match=message):
        run("render", *argv, "--config", EXAMPLE_CONFIG)


def test_cli_entry_point_reports_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    from cbt.cli import main

    assert main(["render", "nope", "--config", EXAMPLE_CONFIG]) == 1
    assert "no model 'nope'" in capsys.readouterr().err


def test_example_ddl_creates_every_table_the_product_does_not_own_and_no_other() -> None:
    ddl = "\n".join(p.read_text() for p in sorted((REPO / "models/ddl").glob("*.sql")))
    ddl = ddl.replace("{{external}}", "ethereum").replace("{{transformation}}", "analytics")  # as config.yaml
    created = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+\.\w+)", ddl))
    assert all("USING DELTA" in s for s in split_sql(ddl) if "CREATE TABLE" in s)
    from cbt.config.settings import load_config
    from cbt.models.loader import load_models
    from cbt.models.spec import Transformation
    from cbt.models.target_tables import owns_table

    models = load_models(load_config(EXAMPLE_CONFIG, {}))
    owned = {m.id for m in models if isinstance(m, Transformation) and owns_table(m)}
    assert owned, "the example has models whose tables the product creates"
    assert {m.id for m in models} - owned == created
