"""A whole CBT project as one of ours, from file contents to file contents (no I/O: ``files.py`` reads and
writes)."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from cbt.base.yamldoc import parse_yaml
from cbt.import_cbt.config_map import ConvertedConfig, convert_config
from cbt.import_cbt.ddl import Table, tables_of
from cbt.import_cbt.model import ProjectFacts, convert_model
from cbt.import_cbt.report import Note

CONFIG_HEADER = """\
# Converted from CBT's {source} by `cbt import-cbt`; what it could not convert is in its report.
# Every key not written here has its documented default (docs/reference/configuration.md).
"""


class UnreadableConfig(Exception):
    """CBT's config.yaml does not parse; ``problems`` say where."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class ModelSource:
    path: str
    """Relative to the CBT project, for notes."""
    kind: str
    """``external`` or ``transformations``: the kind of path it was found under."""
    out: str
    """Where it goes in the new project, relative to it."""
    text: str


@dataclass
class Converted:
    files: dict[str, str] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    models_found: int = 0
    models_converted: int = 0
    models_transpiled: int = 0


def read_config(text: str, path: str) -> ConvertedConfig:
    data, smap, problems = parse_yaml(text, path)
    if problems:
        raise UnreadableConfig([str(p) for p in problems])
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UnreadableConfig([f"{path}:1: (root): expected a mapping of settings"])
    return convert_config(data, smap, path)


def convert_project(
    config: ConvertedConfig, config_path: str, models: list[ModelSource], ddl: dict[str, str]
) -> Converted:
    """``ddl``: the project's other ``.sql`` files (path → text), read for the tables they create."""
    tables: dict[str, Table] = {}
    for text in ddl.values():
        tables.update(tables_of(text))
    facts = ProjectFacts(config.placeholders, config.env_names, tables)
    out = Converted(notes=list(config.notes))
    out.files["config.yaml"] = CONFIG_HEADER.format(source=config_path) + yaml.safe_dump(
        config.config, sort_keys=False, allow_unicode=True, width=120
    )
    for source in models:
        out.models_found += 1
        converted = convert_model(source.path, source.text, source.kind, facts)
        out.notes.extend(converted.notes)
        if not converted.text:
            continue
        out.models_converted += 1
        if not any(n.what == "SQL not transpiled" for n in converted.notes):
            out.models_transpiled += 1
        out.files[source.out] = converted.text
    for path, text in sorted(ddl.items()):
        if tables_of(text):
            out.notes.append(
                Note(
                    path,
                    1,
                    "ClickHouse DDL",
                    "not converted: create the target tables in Spark "
                    "(CREATE TABLE … USING DELTA) before the models run",
                )
            )
    return out
