"""A model's version: a fingerprint of what determines its rows, and apart from it a hash of what does not.

``data``: the transformation's SQL rendered for a fixed task and normalised by sqlglot (Spark dialect: formatting,
comments, identifier case and quoting do not count), or an exec model's command, options, environment and the
content of the files its command names; and the frontmatter fields that change an interval's rows (``DATA_FIELDS``).
``metadata``: every other field (``METADATA_FIELDS``): a change there never recomputes anything. Each field of a
model is in exactly one of the two (``tests/unit/models/test_versions.py`` holds every field of the spec to that).

A parent's version is not part of its children's: what a parent's change means for each child is decided from
column lineage (``cbt.models.changes``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from cbt.models.render import NotRenderable, exec_argv, render_replace_where, render_statements
from cbt.models.spec import IncrementalModel, Model, ScheduledModel, Transformation
from cbt.models.templates import RenderSettings, TaskContext

DATA_FIELDS = frozenset({"sql", "exec", "exec_options", "env", "interval", "dependencies", "write"})
"""Fields of a transformation that change the rows an interval gets (``env``: an exec model's; a template's
reads show in its rendered SQL)."""
METADATA_FIELDS = frozenset({"schedules", "schedule", "limits", "fill", "tags", "timeout_s", "batch", "expose",
                             "change", "checks"})
"""Fields that change when or how a model runs, or who reads it, never an interval's rows."""
IDENTITY_FIELDS = frozenset({"database", "table", "source", "reads"})
"""What names the model, where its file is and which tables a build of it reads: a model renamed is another
model, and a build computes the version it builds."""
SHORT_LENGTH = 12
VERSION_TASK_START = 0
"""The task a model's SQL is rendered for when fingerprinted (its bounds are ``[0, interval.max)``)."""


@dataclass(frozen=True)
class Fingerprint:
    """A model's two hashes, and the canonical definition the data hash is taken over (what a change is classified
    from)."""

    data: str
    metadata: str
    definition: Mapping[str, Any]

    @property
    def short(self) -> str:
        """The version as tasks and completions carry it."""
        return short_version(self.data)


def short_version(data_hash: str) -> str:
    """A data hash as tasks and completions carry it (its first 12 hex digits)."""
    return data_hash[:SHORT_LENGTH]


class NotFingerprintable(ValueError):
    """The SQL cannot be rendered or parsed for a fingerprint."""


def fingerprint(model: Transformation, settings: RenderSettings, base_dir: Path | None = None) -> Fingerprint:
    """The model's version: ``base_dir`` is where an exec model's command runs (the files it names are read
    there)."""
    definition = data_definition(model, settings, base_dir)
    metadata = {name: _plain(getattr(model, name)) for name in sorted(METADATA_FIELDS) if hasattr(model, name)}
    return Fingerprint(_hash(definition), _hash(metadata), definition)


def data_definition(model: Transformation, settings: RenderSettings, base_dir: Path | None = None) -> dict[str, Any]:
    """What determines the model's rows, canonical: normalised SQL or the exec command, and the data fields."""
    out: dict[str, Any] = {"kind": "incremental" if isinstance(model, IncrementalModel) else "scheduled",
                           "dependencies": [_plain(d) for d in model.dependencies]}
    if isinstance(model, IncrementalModel):
        out["interval"] = _plain(model.interval)
        out["write"] = {"strategy": model.write.strategy, "unique_key": list(model.write.unique_key),
                        "replace_where": None}
    task = _task(model)
    if model.sql is not None:
        out["sql"] = [normalized(statement) for statement in render_statements(model, task, settings)]
        if isinstance(model, IncrementalModel) and model.write.replace_where is not None:
            out["write"]["replace_where"] = normalized(render_replace_where(model, task, settings), expression=True)
    else:
        out["exec"] = {"command": model.exec, "options": _plain(model.exec_options), "env": dict(sorted(
            model.env.items())), "files": _named_files(model, base_dir)}
    return out


def normalized(sql: str, *, expression: bool = False) -> str:
    """``sql`` as sqlglot writes it back in the Spark dialect: no comments, identifiers lower-case and quoted."""
    try:
        parsed = sqlglot.parse_one(f"SELECT * FROM t WHERE {sql}" if expression else sql, read="spark")
    except SqlglotError as e:
        raise NotFingerprintable(f"the SQL cannot be parsed: {str(e).splitlines()[0]}") from e
    if expression:
        parsed = parsed.args["where"].this
    return normalize_identifiers(parsed, dialect="spark").sql(dialect="spark", identify=True, comments=False)


def _task(model: Transformation) -> TaskContext:
    if isinstance(model, ScheduledModel):
        return TaskContext(model_id=model.id, task_start_unix=VERSION_TASK_START)
    return TaskContext(model_id=model.id, task_start_unix=VERSION_TASK_START, start=0, end=model.interval.max)


def _named_files(model: Model, base_dir: Path | None) -> dict[str, str]:
    """The files an exec model's command names (its arguments that are files under ``base_dir``), by content."""
    if base_dir is None:
        return {}
    try:
        arguments = exec_argv(model.exec) if model.exec else []
    except NotRenderable:
        return {}
    files = {}
    for argument in arguments:
        path = base_dir / argument
        if path.is_file():
            files[argument] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    return value


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
