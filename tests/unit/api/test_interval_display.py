"""/api/v1/interval-types bodies: every interval type the models use or the config lists, with its transformations
compiled for the web UI; one position shown by each (cbt.api.interval_display)."""

from __future__ import annotations

from cbt.api.interval_display import interval_type_list, shown
from cbt.config.interval_types import Transformation

GENESIS = 1606824023
SLOT = (
    Transformation(name="Time", expression=f"(value * 12 + {GENESIS}) * 1000", format="datetime"),
    Transformation(name="Epoch", expression="value // 32", label="epoch {value}"),
    Transformation(name="Odd", expression="1 / (value - 100)"),
)


def test_configured_types_and_the_models_types_are_listed() -> None:
    body = interval_type_list(["timestamp", "block", "slot"], {"slot": SLOT, "epoch": (Transformation(name="E"),)})
    types = body.interval_types
    assert sorted(types) == ["block", "epoch", "slot", "timestamp"]
    assert types["slot"].configured and not types["slot"].is_time
    assert types["slot"].transformations[0].program == ["*", ["+", ["*", "value", 12], GENESIS], 1000]
    assert types["slot"].transformations[1].label == "epoch {value}"
    assert not types["timestamp"].configured and types["timestamp"].is_time
    assert types["timestamp"].transformations[0].format == "datetime"
    assert [t.name for t in types["block"].transformations] == ["Position"]
    assert types["block"].transformations[0].program == "value"


def test_a_position_is_shown_by_each_transformation_and_a_failing_one_says_why() -> None:
    answer = shown("slot", 100, {"slot": SLOT}, now_ms=0)
    assert [(s.name, s.text, s.error) for s in answer.shown] == [
        ("Time", "2020-12-01 12:20:23 UTC", None),
        ("Epoch", "epoch 3", None),
        ("Odd", None, "division by zero"),
    ]
    assert [s.text for s in shown("block", 1234567, {}, now_ms=0).shown] == ["1,234,567"]
