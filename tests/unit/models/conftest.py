"""Factories for model-layer tests: a throw-away project (config + model files) in a temp folder."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbt.base.errors import ModelError
from cbt.config.settings import Config, load_config
from cbt.models.dag import ModelSet
from cbt.models.loader import load_models

DEFAULT_CONFIG = """\
models:
  external: {paths: [models/external], default_database: ethereum}
  transformations: {paths: [models/transformations], default_database: analytics}
"""
BOUNDS_SQL = "SELECT min(ts) AS min, max(ts) AS max FROM {{ self.from }}\n"
SELECT_SQL = "SELECT * FROM {{ ref('ethereum.blocks') }} WHERE p >= {{ bounds.start }} AND p < {{ bounds.end }}\n"


class Project:
    """Writes a config and model files under ``root``; ``problems()`` returns them as ``rel/path:line: field: msg``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_text(DEFAULT_CONFIG)
        (root / "models/external").mkdir(parents=True)
        (root / "models/transformations").mkdir(parents=True)

    def config_text(self, text: str) -> Path:
        path = self.root / "config.yaml"
        path.write_text(textwrap.dedent(text))
        return path

    def file(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def sql_model(self, rel: str, fields: dict[str, Any] | str, body: str = SELECT_SQL) -> Path:
        front = fields if isinstance(fields, str) else yaml.safe_dump(fields, sort_keys=False)
        return self.file(rel, f"---\n{textwrap.dedent(front)}---\n{body}")

    def external(self, name: str = "blocks", body: str = BOUNDS_SQL, **fields: Any) -> Path:
        return self.sql_model(f"models/external/{name}.sql", make_external(name, **fields), body)

    def incremental(self, name: str = "hourly", body: str = SELECT_SQL, **fields: Any) -> Path:
        return self.sql_model(f"models/transformations/{name}.sql", make_incremental(name, **fields), body)

    def scheduled(self, name: str = "rates", body: str = "SELECT 1\n", **fields: Any) -> Path:
        return self.sql_model(f"models/transformations/{name}.sql", make_scheduled(name, **fields), body)

    def config(self, environ: dict[str, str] | None = None) -> Config:
        return load_config(self.root / "config.yaml", environ or {})

    def load(self) -> ModelSet:
        return load_models(self.config())

    def problems(self) -> list[str]:
        try:
            self.load()
        except ModelError as e:
            return [str(p).replace(f"{self.root}/", "") for p in e.problems]
        return []


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``changes``; a value of ``DROP`` removes the key."""
    out = dict(base)
    for key, value in changes.items():
        if value is DROP:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


DROP = object()


def make_external(name: str = "blocks", **changes: Any) -> dict[str, Any]:
    return _merge({"table": name, "interval": {"type": "slot"}}, changes)


def make_incremental(name: str = "hourly", **changes: Any) -> dict[str, Any]:
    base = {
        "type": "incremental",
        "table": name,
        "interval": {"max": 3600, "min": 0, "type": "slot"},
        "schedules": {"forwardfill": "@every 1m", "backfill": "@every 5m"},
        "dependencies": ["ethereum.blocks"],
    }
    return _merge(base, changes)


def make_scheduled(name: str = "rates", **changes: Any) -> dict[str, Any]:
    return _merge({"type": "scheduled", "table": name, "schedule": "@hourly"}, changes)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.fixture
def project_with_blocks(project: Project) -> Project:
    """A project holding the external ``ethereum.blocks`` (interval.type slot) most cases depend on."""
    project.external()
    return project


MakeFields = Callable[..., dict[str, Any]]
