"""Go's template functions and the Sprig functions CBT's models and docs use, as Jinja expressions
(docs/coming-from-cbt.md#templates)."""

from __future__ import annotations

from collections.abc import Callable


class Unsupported(Exception):
    """An action with no equivalent: reported, and left out of the output."""

    def __init__(self, what: str, todo: str) -> None:
        super().__init__(what)
        self.what, self.todo = what, todo


def _binary(op: str) -> Callable[[list[str]], str]:
    return lambda a: f"({a[0]} {op} {a[1]})"


def _chain(op: str) -> Callable[[list[str]], str]:
    return lambda a: "(" + f" {op} ".join(a) + ")"


_FUNCTIONS: dict[str, tuple[int | None, Callable[[list[str]], str]]] = {
    # Go's built-ins
    "eq": (None, lambda a: "(" + " or ".join(f"{a[0]} == {b}" for b in a[1:]) + ")"),
    "ne": (2, _binary("!=")),
    "lt": (2, _binary("<")),
    "le": (2, _binary("<=")),
    "gt": (2, _binary(">")),
    "ge": (2, _binary(">=")),
    "and": (None, _chain("and")),
    "or": (None, _chain("or")),
    "not": (1, lambda a: f"(not {a[0]})"),
    "len": (1, lambda a: f"({a[0]}|length)"),
    "print": (None, lambda a: "(" + " ~ ".join(f"({x}|string)" for x in a) + ")"),
    "printf": (None, lambda a: f"({a[0]}|format({', '.join(a[1:])}))"),
    # Sprig
    "default": (2, lambda a: f"({a[1]}|default({a[0]}, true))"),
    "empty": (1, lambda a: f"(not {a[0]})"),
    "coalesce": (None, _chain("or")),
    "ternary": (3, lambda a: f"({a[0]} if {a[2]} else {a[1]})"),
    "upper": (1, lambda a: f"({a[0]}|upper)"),
    "lower": (1, lambda a: f"({a[0]}|lower)"),
    "title": (1, lambda a: f"({a[0]}|title)"),
    "trim": (1, lambda a: f"({a[0]}|trim)"),
    "quote": (1, lambda a: f"('\"' ~ {a[0]} ~ '\"')"),
    "squote": (1, lambda a: f'("\'" ~ {a[0]} ~ "\'")'),
    "replace": (3, lambda a: f"({a[2]}|replace({a[0]}, {a[1]}))"),
    "join": (2, lambda a: f"({a[1]}|join({a[0]}))"),
    "list": (None, lambda a: "[" + ", ".join(a) + "]"),
    "contains": (2, lambda a: f"({a[0]} in {a[1]})"),
    "hasPrefix": (2, lambda a: f"({a[1]}|string).startswith({a[0]})"),
    "hasSuffix": (2, lambda a: f"({a[1]}|string).endswith({a[0]})"),
    "add": (None, _chain("+")),
    "add1": (1, lambda a: f"({a[0]} + 1)"),
    "sub": (2, _binary("-")),
    "mul": (None, _chain("*")),
    "div": (2, _binary("//")),
    "mod": (2, _binary("%")),
    "max": (None, lambda a: "([" + ", ".join(a) + "]|max)"),
    "min": (None, lambda a: "([" + ", ".join(a) + "]|min)"),
    "toString": (1, lambda a: f"({a[0]}|string)"),
    "int": (1, lambda a: f"({a[0]}|int)"),
    "int64": (1, lambda a: f"({a[0]}|int)"),
    "atoi": (1, lambda a: f"({a[0]}|int)"),
    "float64": (1, lambda a: f"({a[0]}|float)"),
}


def call(name: str, args: list[str]) -> str:
    """A Go or Sprig function call as a Jinja expression; ``Unsupported`` when there is none."""
    known = _FUNCTIONS.get(name)
    if known is None:
        raise Unsupported(
            f"template function {name}",
            "no Jinja equivalent here: rewrite the expression by hand "
            "(the functions converted: docs/coming-from-cbt.md#templates)",
        )
    arity, build = known
    if (arity is not None and len(args) != arity) or (arity is None and len(args) < 1):
        raise Unsupported(f"{name} with {len(args)} argument(s)", "fix the template in CBT's file")
    return build(args)
