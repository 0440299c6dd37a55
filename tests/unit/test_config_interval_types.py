"""`interval_types` in config.yaml: CBT's form loads, each transformation shows a position, bad ones are refused
with `path:line: field: problem` (cbt.config.interval_types)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cbt.config.interval_types import NUMBER_DEFAULT, TIME_DEFAULT, Transformation, transformations_for
from cbt.config.settings import ConfigProblems, load_config

GENESIS = 1606824023


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_each_transformation_shows_a_position(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            f"""\
        interval_types:
          slot:
          - name: Time
            expression: "(value * 12 + {GENESIS}) * 1000"
            format: datetime
          - name: Epoch
            expression: "value // 32"
            label: "epoch {{value}}"
          - name: Slot
            format: number
          - {{name: Age, expression: "(value * 12 + {GENESIS}) * 1000", format: relative}}
          - {{name: Span, expression: "value * 12000", format: duration}}
          - {{name: Day, expression: "(value * 12 + {GENESIS}) * 1000", format: date}}
          - {{name: Clock, expression: "(value * 12 + {GENESIS}) * 1000", format: time}}
        """,
        ),
        {},
    )
    slot = config.interval_types["slot"]
    now_ms = (GENESIS + 100 * 12 + 90) * 1000
    shown = [t.show(100, now_ms) for t in slot]
    assert shown == ["2020-12-01 12:20:23 UTC", "epoch 3", "100", "1m 30s ago", "20m", "2020-12-01", "12:20:23 UTC"]
    assert slot[0].program == ["*", ["+", ["*", "value", 12], GENESIS], 1000]
    assert config.warnings == ()


def test_types_not_configured_get_the_default() -> None:
    configured = {"slot": (Transformation(name="Slot"),)}
    assert transformations_for("slot", configured, is_time=False) == configured["slot"]
    assert transformations_for("timestamp", configured, is_time=True) == TIME_DEFAULT
    assert transformations_for("block", configured, is_time=False) == NUMBER_DEFAULT
    assert TIME_DEFAULT[0].show(1700000000, 0) == "2023-11-14 22:13:20 UTC"
    assert NUMBER_DEFAULT[0].show(1234567, 0) == "1,234,567"


@pytest.mark.parametrize(
    ("entry", "line", "field", "problem"),
    [
        pytest.param(
            '{name: X, expression: "value.__class__"}',
            3,
            "interval_types.slot[0].expression",
            "attribute access is not allowed",
            id="attribute",
        ),
        pytest.param(
            '{name: X, expression: "open(value)"}',
            3,
            "interval_types.slot[0].expression",
            "unknown function 'open'",
            id="unknown-function",
        ),
        pytest.param(
            '{name: X, expression: "9 ** 9 ** 9"}',
            3,
            "interval_types.slot[0].expression",
            "operator ** is not supported",
            id="power",
        ),
        pytest.param("{name: X, format: hex}", 3, "interval_types.slot[0].format", "datetime", id="format"),
        pytest.param(
            '{name: X, label: "slot {value} {other}"}',
            3,
            "interval_types.slot[0].label",
            "exactly one {value}",
            id="label",
        ),
        pytest.param("{name: X, colour: red}", 3, "interval_types.slot[0].colour", "unknown field", id="unknown-key"),
        pytest.param("{expression: value}", 3, "interval_types.slot[0].name", "required", id="no-name"),
    ],
)
def test_invalid_transformations_are_refused_at_their_line(
    tmp_path: Path, entry: str, line: int, field: str, problem: str
) -> None:
    path = write(tmp_path, f"interval_types:\n  slot:\n  - {entry}\n")
    with pytest.raises(ConfigProblems) as caught:
        load_config(path, {})
    (found,) = caught.value.problems
    assert (found.line, found.field) == (line, field)
    assert problem in found.message
    assert str(found).startswith(f"{path}:{line}: {field}: ")
