"""A transformation's whole definition as a JSON document, and back: a deployed version keeps it, so the version can
still run after the files that defined it changed (the old version of a model being rebuilt stays fresh; a rollback
runs it again).

The document is the validated model itself (every field, overrides and defaults applied), not its file: reading it
back needs neither the file nor the config it was loaded with. An exec model's document names its command, not the
content of the scripts it runs; whether those are still the same is the fingerprint's business (its ``files``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from cbt.base.errors import CbtError
from cbt.models.spec import IncrementalModel, ScheduledModel, Transformation

_KINDS: dict[str, type[IncrementalModel] | type[ScheduledModel]] = {
    "incremental": IncrementalModel, "scheduled": ScheduledModel}


class UnreadableDefinition(CbtError):
    """A stored definition that this version of the code cannot read back (written by a newer one, or damaged)."""


@cache
def _adapter(kind: str) -> TypeAdapter[Any]:
    return TypeAdapter(_KINDS[kind])


def definition_document(model: Transformation) -> dict[str, Any]:
    """``model`` as plain JSON values, with its kind."""
    kind = "incremental" if isinstance(model, IncrementalModel) else "scheduled"
    return {"kind": kind, "model": _adapter(kind).dump_python(model, mode="json")}


def model_from_document(document: Mapping[str, Any]) -> Transformation:
    """The model ``definition_document`` wrote."""
    kind = document.get("kind")
    if kind not in _KINDS:
        raise UnreadableDefinition(f"stored definition: kind {kind!r} is not one of {', '.join(_KINDS)}")
    try:
        model: Transformation = _adapter(str(kind)).validate_python(document.get("model"))
    except ValidationError as e:
        raise UnreadableDefinition(f"stored definition: {e.error_count()} problem(s), first: "
                                   f"{e.errors()[0]['loc']}: {e.errors()[0]['msg']}") from e
    return model
