"""Turn pydantic validation errors into ``path:line: field: problem`` lines people can act on."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from cbt.base.errors import Problem
from cbt.base.yamldoc import Loc, SourceMap, format_loc


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
    """The keys a schema accepts at ``loc`` (field names), for "did you mean" hints; mapping keys are stepped over."""
    annotation: Any = schema
    for part in loc:
        mapping_value = _mapping_value(annotation)
        if mapping_value is not None:
            annotation = mapping_value
            continue
        model = _model_in(annotation)
        info = _field_by_key(model, str(part)) if model is not None else None
        if info is None:
            return []
        annotation = info.annotation
    model = _model_in(annotation)
    return list(model.model_fields) if model is not None else []


def _mapping_value(annotation: Any) -> Any:
    if typing.get_origin(annotation) is dict:
        return typing.get_args(annotation)[1]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _mapping_value(arg)
            if found is not None:
                return found
    return None


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
