"""The small, safe arithmetic language of ``interval_types`` expressions: a position in, a number out.

``math.floor((value - 1606824023) / 12)``, ``value * 1000``, ``max(value - 32, 0)``: the variable ``value``, numeric
literals, ``+ - * / // %``, unary ``-``/``+``, parentheses and the functions of ``FUNCTIONS`` (bare, or ``math.``
prefixed as in the original CBT's CEL expressions). Nothing else: no other names, attributes, strings, comparisons,
subscripts, keywords or ``**`` (whose huge results are the classic way to hang an evaluator).

Python's own parser (``ast``) reads the text; every node is checked against that whitelist and compiled into a
plain tree of lists (``Program``): ``["floor", ["/", ["-", "value", 1606824023], 12]]``. Nothing is ever handed to
``eval``. The tree is what the web UI evaluates too (``interval_display.js``), so there is one parser and both sides
compute the same numbers. Pure: no I/O.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Union

MAX_LENGTH = 300
"""Longer expressions are refused: a display transformation is one short formula."""
MAX_DEPTH = 30
"""Deeper nesting is refused (Python's parser recurses on it)."""
MAX_MAGNITUDE = 1e30
"""A result, or any intermediate value, beyond this is an error rather than a number to show."""

Program = Union[int, float, str, list["Program"]]  # noqa: UP007 (a recursive alias needs the string form)
"""A number, ``"value"``, or ``[operator_or_function, *operands]``."""

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}
FUNCTIONS: dict[str, tuple[Callable[..., float], int, int | None]] = {
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "round": (round, 1, 1),
    "abs": (abs, 1, 1),
    "min": (min, 2, None),
    "max": (max, 2, None),
}
"""Name → (function, fewest arguments, most arguments or None)."""
_ALIASES = {"least": "min", "greatest": "max"}
"""CBT's names (its UI maps ``math.least``/``math.greatest`` to Math.min/Math.max)."""


class ExpressionError(ValueError):
    """The text is not an expression of the language, or its value cannot be computed; the message says why."""


def compile_expression(text: str) -> Program:
    """``text`` checked and compiled, or ExpressionError naming the first thing that is not allowed."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise ExpressionError("empty expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"not an arithmetic expression ({e.msg})") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels") from None
    return _compile(tree.body, 0)


def _compile(node: ast.expr, depth: int) -> Program:
    if depth > MAX_DEPTH:
        raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExpressionError(f"only numbers may be literals, not {node.value!r}")
        if abs(node.value) > MAX_MAGNITUDE:
            raise ExpressionError(f"the literal {node.value} is beyond ±{MAX_MAGNITUDE:g}")
        return node.value
    if isinstance(node, ast.Name):
        if node.id != "value":
            raise ExpressionError(f"unknown name {node.id!r} (the only variable is 'value')")
        return "value"
    if isinstance(node, ast.BinOp):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ExpressionError(f"operator {_op_text(node.op)} is not supported (use + - * / // %)")
        return [op, _compile(node.left, depth + 1), _compile(node.right, depth + 1)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _compile(node.operand, depth + 1)
        return ["neg", operand] if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call):
        return _call(node, depth)
    raise ExpressionError(f"{_describe(node)} is not allowed (only arithmetic on 'value' and numbers)")


def _call(node: ast.Call, depth: int) -> Program:
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math":
        name = func.attr
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        raise ExpressionError("only the functions " + ", ".join(FUNCTIONS) + " may be called")
    name = _ALIASES.get(name, name)
    if name not in FUNCTIONS:
        raise ExpressionError(f"unknown function {name!r} (known: {', '.join(FUNCTIONS)})")
    if node.keywords:
        raise ExpressionError(f"{name}() takes no keyword arguments")
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise ExpressionError(f"{name}() takes no *arguments")
    _, least, most = FUNCTIONS[name]
    if len(node.args) < least or (most is not None and len(node.args) > most):
        wanted = str(least) if most == least else f"at least {least}"
        raise ExpressionError(f"{name}() takes {wanted} argument{'s' if least > 1 else ''}, got {len(node.args)}")
    return [name, *(_compile(a, depth + 1) for a in node.args)]


def _op_text(op: ast.operator) -> str:
    return {
        ast.Pow: "**",
        ast.MatMult: "@",
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitAnd: "&",
        ast.BitXor: "^",
    }.get(type(op), type(op).__name__)


def _describe(node: ast.expr) -> str:
    return {
        ast.Attribute: "attribute access",
        ast.Subscript: "indexing",
        ast.Compare: "a comparison",
        ast.BoolOp: "and/or",
        ast.IfExp: "if/else",
        ast.Lambda: "a lambda",
    }.get(type(node), type(node).__name__)


def evaluate(program: Program, value: int | float) -> int | float:
    """``program`` at ``value``; ExpressionError on a division by zero or a value beyond ``MAX_MAGNITUDE``."""
    return _eval(program, value)


def _eval(p: Program, value: int | float) -> int | float:
    if isinstance(p, str):
        return value
    if not isinstance(p, list):
        return p
    head, *args = p
    nums = [_eval(a, value) for a in args]
    try:
        out = _apply(str(head), nums)
    except ZeroDivisionError:
        raise ExpressionError("division by zero") from None
    except (OverflowError, ValueError) as e:
        raise ExpressionError(str(e)) from None
    if abs(out) > MAX_MAGNITUDE:
        raise ExpressionError(f"a value beyond ±{MAX_MAGNITUDE:g}")
    return out


def _apply(head: str, nums: list[int | float]) -> int | float:
    if head == "neg":
        return -nums[0]
    if head in FUNCTIONS:
        return FUNCTIONS[head][0](*nums)
    a, b = nums
    match head:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return a / b
        case "//":
            return a // b
        case "%":
            return a % b
    raise ExpressionError(f"unknown operator {head!r}")
