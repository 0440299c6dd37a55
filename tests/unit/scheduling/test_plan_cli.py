"""``cbt plan`` / ``cbt status``: state-file handling, JSON shape, and the live-state error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cbt.cli import main, plan_cmds
from cbt.cli.plan_cmds import plans_to_json, read_state, render_plans
from cbt.contract.messages import TaskFailed
from cbt.scheduling.plan import plan_all
from cbt.scheduling.snapshot import StateFileError, StateSnapshot
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


@pytest.mark.parametrize("command", ["plan", "status"])
def test_live_state_unreachable_says_what_to_do(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CBT__REDIS__URL", "redis://127.0.0.1:1/0")  # nothing listens on port 1
    assert main([command, "--json"]) == 1
    err = capsys.readouterr().err
    assert "cannot read live state from redis://127.0.0.1:1/0" in err and "--state" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{", "not valid JSON", id="bad-json"),
        pytest.param('{"coverage": {"a.b": [[3, 1]]}}', "$.coverage['a.b'][0]", id="bad-range"),
    ],
)
def test_bad_state_file_is_reported_with_its_path(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(StateFileError) as err:
        read_state(str(path))
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_missing_state_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="cannot read the state file"):
        read_state(str(tmp_path / "missing.json"))


def test_plan_json_shape() -> None:
    model = inc("an.target", ["src.data"], imin=20)
    state = snapshot(bounds={"src.data": (0, 1050)}, coverage={"an.target": [(900, 1000)]})
    plans = plan_all(models_of(ext("src.data"), model), state, concurrency=4)
    document = json.loads(json.dumps(plans_to_json(plans)))
    assert document == {
        "models": [
            {
                "id": "an.target",
                "valid_range": [0, 1050],
                "tasks": [
                    {"position": 1000, "interval": 50, "direction": "forward"},
                    {"position": 800, "interval": 100, "direction": "backfill"},
                    {"position": 700, "interval": 100, "direction": "backfill"},
                    {"position": 600, "interval": 100, "direction": "backfill"},
                ],
                "waiting": document["models"][0]["waiting"],
            }
        ]
    }
    assert "concurrency limit 4" in document["models"][0]["waiting"]
    text = render_plans(plans)
    assert "an.target  valid [0, 1050)" in text and "forward   [1000, 1050)" in text


EXTERNAL = """---
table: {table}
interval:
  type: block
lag: {lag}
---
SELECT min(n) AS min, max(n) + 1 AS max FROM {{{{ self.from }}}}
"""

INCREMENTAL = """---
type: incremental
table: {table}
interval:
  max: {imax}
  min: {imin}
  type: block
schedules:
  forwardfill: "@every 1m"
  backfill: "{backfill}"
dependencies: {deps}
---
SELECT 1
"""


def _project(tmp_path: Path, state: dict[str, object]) -> tuple[str, str]:
    """A config, the models of the examples in docs/design/scheduling.md and a state file; returns their paths."""
    (tmp_path / "config.yaml").write_text(
        "models:\n  external:\n    default_database: eth\n  transformations:\n    default_database: an\n",
        encoding="utf-8",
    )
    ext_dir, trans_dir = tmp_path / "models" / "external", tmp_path / "models" / "transformations"
    ext_dir.mkdir(parents=True)
    trans_dir.mkdir(parents=True)
    for table, lag in (("blocks", 100), ("transactions", 0), ("src", 0)):
        (ext_dir / f"{table}.sql").write_text(EXTERNAL.format(table=table, lag=lag), encoding="utf-8")
    models = {
        "hourly": (100, 100, "", '["{{external}}.blocks"]'),
        "daily": (100, 100, "", '["{{external}}.blocks"]'),
        "target": (100, 20, "@every 5m", '["eth.blocks", "eth.transactions", "an.hourly", "an.daily"]'),
        "partial": (100, 20, "", '["eth.src"]'),
    }
    for table, (imax, imin, backfill, deps) in models.items():
        text = INCREMENTAL.format(table=table, imax=imax, imin=imin, backfill=backfill, deps=deps)
        (trans_dir / f"{table}.sql").write_text(text, encoding="utf-8")
    (tmp_path / "state.json").write_text(json.dumps(state), encoding="utf-8")
    return str(tmp_path / "config.yaml"), str(tmp_path / "state.json")


SPEC_STATE_JSON: dict[str, object] = {
    "bounds": {
        "eth.blocks": {"min": 1000, "max": 5000},
        "eth.transactions": {"min": 900, "max": 4900},
        "eth.src": {"min": 0, "max": 1050},
    },
    "coverage": {
        "an.hourly": [[1500, 4500]],
        "an.daily": [[2000, 4000]],
        "an.target": [[2000, 4000]],
        "an.partial": [[0, 1000]],
    },
    "now": 1700000000,
}


def test_cbt_plan_json_on_the_spec_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, state = _project(tmp_path, SPEC_STATE_JSON)
    assert main(["plan", "--config", config, "--state", state, "--json"]) == 0
    by_id = {m["id"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert sorted(by_id) == ["an.daily", "an.hourly", "an.partial", "an.target"]
    assert by_id["an.target"]["valid_range"] == [2000, 4000]
    assert by_id["an.target"]["tasks"] == [] and by_id["an.target"]["waiting"] is None
    assert by_id["an.partial"]["tasks"] == [{"position": 1000, "interval": 50, "direction": "forward"}]


def test_cbt_plan_and_status_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, state = _project(tmp_path, SPEC_STATE_JSON)
    assert main(["plan", "--config", config, "--state", state, "an.partial"]) == 0
    out = capsys.readouterr().out
    assert "an.partial  valid [0, 1050)  1 task(s)" in out and "an.target" not in out
    assert main(["status", "--config", config, "--state", state, "--json"]) == 0
    status = {m["id"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert status["an.hourly"]["gaps"] == [[1000, 1500]] and status["an.hourly"]["lag"] == 400
    assert main(["status", "--config", config, "--state", state]) == 0
    assert "an.target" in capsys.readouterr().out


def test_status_shows_positions_as_the_interval_types_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--show``: the ranges through the models' interval type (``block`` here), by its first transformation or
    the one named; a name no type has is refused with the names there are."""
    config, state = _project(tmp_path, SPEC_STATE_JSON)
    with Path(config).open("a", encoding="utf-8") as f:
        f.write("interval_types:\n  block:\n    - name: Block\n      label: 'block {value}'\n"
                "    - name: Time\n      expression: value * 12000\n      format: datetime\n")
    assert main(["status", "--config", config, "--state", state, "an.partial", "--show"]) == 0
    assert "[block 0, block 1,050)  [block 0, block 1,000)" in capsys.readouterr().out
    assert main(["status", "--config", config, "--state", state, "an.partial", "--show", "Time",
                 "--json"]) == 0
    partial = json.loads(capsys.readouterr().out)["models"][0]
    assert partial["valid_range"] == [0, 1050]
    assert partial["valid_range_shown"] == ["1970-01-01 00:00:00 UTC", "1970-01-01 03:30:00 UTC"]
    assert partial["coverage_shown"] == [["1970-01-01 00:00:00 UTC", "1970-01-01 03:20:00 UTC"]]
    assert main(["status", "--config", config, "--state", state, "--show", "Slot"]) == 1
    assert "--show: no interval type of these models has a transformation 'Slot' (they have: Block, Time)" in (
        capsys.readouterr().err)


def test_cbt_plan_rejects_unknown_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, state = _project(tmp_path, SPEC_STATE_JSON)
    assert main(["plan", "--config", config, "--state", state, "an.nope"]) == 1
    assert "an.nope" in capsys.readouterr().err


def test_plan_and_status_select_models_as_every_command_does(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """By positional MODELs, each an id or a unique table name (``--model ID``, the older way, still works)."""
    config, state = _project(tmp_path, SPEC_STATE_JSON)
    assert main(["status", "--config", config, "--state", state, "--json", "partial", "an.hourly"]) == 0
    assert [m["id"] for m in json.loads(capsys.readouterr().out)["models"]] == ["an.hourly", "an.partial"]
    assert main(["plan", "--config", config, "--state", state, "--model", "an.partial"]) == 0
    assert "an.partial  valid" in (out := capsys.readouterr().out) and "an.target" not in out


def test_status_warns_while_the_live_coverage_index_is_rebuilt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_cmds, "read_live_state", lambda config, models: StateSnapshot(coverage_known=False))
    monkeypatch.setattr(plan_cmds, "read_live_failures", lambda config, ids: {})
    monkeypatch.setattr(plan_cmds, "read_live_schedules", lambda config, models, now: [])
    monkeypatch.setattr(plan_cmds, "read_live_holds", lambda config, ids: {})
    assert main(["status"]) == 0
    assert "being rebuilt" in capsys.readouterr().err


def test_status_reports_a_models_latest_failure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = "analytics.block_propagation_minute"
    failure = TaskFailed(task_id=f"{model}:60:60", model=model, position=60, interval=60, attempts=3,
                         error="query timeout: a statement ran longer than spark.query_timeout (600 s)\nmore",
                         failed_at_ms=1_700_000_000_000)
    monkeypatch.setattr(plan_cmds, "read_live_state", lambda config, models: StateSnapshot())
    monkeypatch.setattr(plan_cmds, "read_live_failures",
                        lambda config, ids: {model: [failure]} if model in ids else {})
    monkeypatch.setattr(plan_cmds, "read_live_schedules", lambda config, models, now: [])
    monkeypatch.setattr(plan_cmds, "read_live_holds", lambda config, ids: {})

    assert main(["status"]) == 0
    assert (f"{model}: FAILED 1 task(s) recently; last {model}:60:60 at 2023-11-14 22:13:20Z after 3 attempt(s): "
            "query timeout: a statement ran longer than spark.query_timeout (600 s)") in capsys.readouterr().out
    assert main(["status", "--json"]) == 0
    by_id = {m["id"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert by_id[model]["failures"] == [{"task_id": f"{model}:60:60", "position": 60, "interval": 60,
                                         "scheduled_unix": None, "attempts": 3, "error": failure.error,
                                         "failed_at_ms": 1_700_000_000_000}]
    assert all(m["failures"] == [] for i, m in by_id.items() if i != model)
