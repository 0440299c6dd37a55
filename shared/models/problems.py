"""Turn pydantic validation errors into ``path:line: field: problem`` lines people can act on."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from cbt.errors import Problem
from cbt.models.yamldoc import Loc, SourceMap, format_loc
from pydantic import BaseModel, ValidationError


def pydantic_problems(
    err: ValidationError, smap: SourceMap, schema: type[BaseModel], prefix: Loc = ()
) -> list[Problem]:
    """One Problem per pydantic error, located at the offending key's line (the parent's for a missing key)."""
    problems = []
    for item in err.errors(include_url=False):
        loc: Loc = (*prefix, *item["loc"])
        problems.append(smap.problem(loc, _message(item, schema, tuple(item["loc"]))))
    return problems


def _message(item: Any, schema: type[BaseModel], loc: Loc) -> str:
    kind = item["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(schema, loc)
    msg = str(item["msg"])
    if kind in ("value_error", "assertion_error"):
        return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if msg.startswith("Input should be "):
        msg = "expected " + msg.removeprefix("Input should be ")
    return f"{msg}, got {_shown(item.get('input'))}"


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def _unknown_field(schema: type[BaseModel], loc: Loc) -> str:
    allowed = allowed_keys(schema, loc[:-1])
    name = str(loc[-1])
    if not allowed:
        return "unknown field"
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else f"; expected one of: {', '.join(sorted(allowed))}"
    return f"unknown field{hint}"


def allowed_keys(schema: type[BaseModel], loc: Loc) -> list[str]:
    """The keys a schema accepts at ``loc`` (field names and aliases), for "did you mean" hints."""
    current: type[BaseModel] | None = schema
    for part in loc:
        if current is None or not isinstance(part, str):
            return []
        info = _field_by_key(current, part)
        current = _model_in(info.annotation) if info is not None else None
    if current is None:
        return []
    return list(current.model_fields)


def _field_by_key(schema: type[BaseModel], key: str) -> Any:
    for name, info in schema.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


__all__ = ["allowed_keys", "format_loc", "pydantic_problems"]
