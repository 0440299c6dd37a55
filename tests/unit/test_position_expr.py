"""The interval_types expression language: arithmetic on `value`, nothing else (cbt.config.position_expr)."""

from __future__ import annotations

import pytest

from cbt.config.position_expr import ExpressionError, compile_expression, evaluate


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("value", 7, 7),
        ("math.floor((value - 1606824023) / 12)", 1606824023 + 12 * 5 + 11, 5),
        ("floor(value / 12)", 25, 2),
        ("ceil(value / 12)", 25, 3),
        ("value // 32", 65, 2),
        ("value % 32", 65, 1),
        ("-value + 3", 1, 2),
        ("(value * 12 + 1606824023) * 1000", 1, 1606824035000),
        ("max(value - 32, 0)", 10, 0),
        ("math.greatest(value, 3, 9)", 4, 9),
        ("math.least(value, 3)", 4, 3),
        ("round(value / 4)", 6, 2),
        ("abs(value - 10)", 4, 6),
        ("1.5 * value", 2, 3.0),
    ],
)
def test_arithmetic_on_value(text: str, value: int, expected: float) -> None:
    assert evaluate(compile_expression(text), value) == expected


def test_compiles_to_a_plain_tree_the_ui_evaluates() -> None:
    assert compile_expression("math.floor((value - 10) / 12)") == ["floor", ["/", ["-", "value", 10], 12]]
    assert compile_expression("-value") == ["neg", "value"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("value.__class__", "attribute access is not allowed"),
        ("().__class__.__bases__[0].__subclasses__()", "only the functions"),
        ("__import__('os').system('id')", "only the functions"),
        ("__import__('os')", "unknown function '__import__'"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("eval('1')", "unknown function 'eval'"),
        ("math.pi", "attribute access is not allowed"),
        ("os.floor(value)", "only the functions"),
        ("x + 1", "unknown name 'x'"),
        ("9 ** 9 ** 9", "operator ** is not supported"),
        ("value << 100000", "operator << is not supported"),
        ("'a' * 10", "only numbers may be literals"),
        ("True + value", "only numbers may be literals"),
        ("value if value else 1", "if/else is not allowed"),
        ("value > 1", "a comparison is not allowed"),
        ("[value][0]", "indexing is not allowed"),
        ("lambda: 1", "a lambda is not allowed"),
        ("floor(value, 2)", "floor() takes 1 argument, got 2"),
        ("max(value)", "max() takes at least 2 arguments, got 1"),
        ("floor(x=value)", "floor() takes no keyword arguments"),
        ("max(*value)", "max() takes no *arguments"),
        ("1e400 * value", "beyond"),
        ("value +", "not an arithmetic expression"),
        ("value; import os", "not an arithmetic expression"),
        ("", "empty expression"),
        ("value + " * 100 + "1", "longer than 300 characters"),
        ("abs(" * 40 + "value" + ")" * 40, "nested deeper than 30 levels"),
        ("-" * 200 + "value", "nested deeper than 30 levels"),
    ],
)
def test_anything_else_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(text)
    assert reason in str(caught.value)


def test_a_huge_product_is_refused_at_the_first_step_beyond_the_bound_not_computed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """(Checked by what is evaluated, not by a stopwatch: every intermediate is bounded, so 25 factors of 10^12
    stop at the second multiplication, where 10^36 passes ±1e30.)"""
    from cbt.config import position_expr

    applied: list[str] = []
    real = position_expr._apply
    monkeypatch.setattr(position_expr, "_apply", lambda head, nums: applied.append(head) or real(head, nums))
    program = compile_expression("*".join(["value"] * 25))
    with pytest.raises(ExpressionError, match="beyond"):
        evaluate(program, 10**12)
    assert len(applied) == 2


def test_division_by_zero_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate(compile_expression("1 / (value - 3)"), 3)
