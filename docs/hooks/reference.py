"""MkDocs hook: the reference pages, generated at every build from the code and never checked in.

- ``reference/configuration.md`` from the pydantic config models (``cbt.config.settings.Config`` and its sections):
  keys, types, defaults, constraints and the attribute docstrings written under each field;
- ``cli.md`` from the ``cbt`` parser (``cbt.cli.build_parser``): the commands by group with what each does (its
  parser's description), then every sub-command's usage and help;
- ``reference/api.md`` from the api's OpenAPI document (``cbt.api.openapi_doc.openapi_text``, the app built over
  stand-in ports, the same text as ``docs/openapi.json``): every path, its parameters, body and responses, and the
  schemas.

Nothing here needs Kafka, Redis or Spark: the config models are pure, building the parser imports no client, and the
OpenAPI document is built without config or services. Each page is rendered by a plain function (``PAGES``), so
tests can call them without MkDocs.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import itertools
import json
import os
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

GENERATED_NOTE = "*Generated at build time from the code by `docs/hooks/reference.py`; not checked in.*"


# --- shared -------------------------------------------------------------------------------------------------------


def _rst(text: str) -> str:
    """Docstrings use reST's double backticks; Markdown's code spans take single ones."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    """One Markdown table cell: a single line, pipes escaped."""
    return " ".join(_rst(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# --- configuration ------------------------------------------------------------------------------------------------


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Field name -> the string literal written right under it in the class body, for ``cls`` and its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is BaseModel or not (isinstance(klass, type) and issubclass(klass, BaseModel)):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def module_docstrings(module: types.ModuleType) -> dict[str, str]:
    """Module-level name -> the string literal written right under its assignment (e.g. ``DurationS``)."""
    tree = ast.parse(inspect.getsource(module))
    out: dict[str, str] = {}
    for node, after in itertools.pairwise(tree.body):
        targets = (
            [node.target] if isinstance(node, ast.AnnAssign) else node.targets if isinstance(node, ast.Assign) else []
        )
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            out.update({t.id: inspect.cleandoc(after.value.value) for t in targets if isinstance(t, ast.Name)})
    return out


def _section_class(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _is_duration(field: FieldInfo) -> bool:
    return any(getattr(getattr(m, "func", None), "__name__", "") == "_duration" for m in field.metadata)


def type_name(annotation: Any) -> str:
    """A reader's spelling of a field's type: ``int``, ``"a" | "b"``, ``list of str``, ``map of str → Pool``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join("null" if a is type(None) else type_name(a) for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"map of {type_name(args[0])} → {type_name(args[1])}"
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _constraints(field: FieldInfo) -> str:
    spelled = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "at least", "max_length": "at most"}
    found: dict[str, Any] = {}
    for meta in field.metadata:
        for attr in spelled:
            value = getattr(meta, attr, None)
            if value is not None:
                found[attr] = value
    if "gt" in found and "ge" in found and found["gt"] >= found["ge"]:
        del found["ge"]  # e.g. a duration (>= 0) that must also be > 0
    return ", ".join(f"{spelled[attr]} {value}" for attr, value in found.items())


def _default(field: FieldInfo, name: str = "", parent: BaseModel | None = None) -> str:
    """The field's default; inside a section, the value in the section's own default (``admin.incremental``)."""
    if parent is not None:
        value = getattr(parent, name)
    elif field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{json.dumps(value, default=str)}`"


def _aliases(field: FieldInfo) -> list[str]:
    choices = getattr(field.validation_alias, "choices", None) or []
    return [c for c in choices if isinstance(c, str)]


def _row(key: str, name: str, field: FieldInfo, doc: str, parent: BaseModel | None) -> list[str]:
    """key, type, default, meaning (the docstring, then constraints and other accepted spellings)."""
    kind = "duration (s)" if _is_duration(field) else type_name(field.annotation)
    extra = [c for c in [_constraints(field)] if c]
    aliases = [a for a in _aliases(field) if a != name]
    if aliases:
        extra.append("also spelled " + ", ".join(f"`{a}`" for a in aliases))
    description = _cell(doc) + (f" ({'; '.join(extra)})" if extra else "")
    return [f"`{key}`", _cell(kind), _default(field, name, parent), description.strip()]


def _section_default(field: FieldInfo, parent: BaseModel | None, name: str) -> BaseModel | None:
    if parent is not None:
        value = getattr(parent, name)
    elif field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    return value if isinstance(value, BaseModel) else None


def _config_rows(
    model: type[BaseModel], prefix: str, rows: list[list[str]], intros: dict[str, str], parent: BaseModel | None = None
) -> None:
    """A row per key of ``model`` (recursing into sections); ``parent`` is the section's default value, if any."""
    docs = attribute_docstrings(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        args = typing.get_args(annotation)
        section = _section_class(annotation)
        optional_section = next((_section_class(a) for a in args if _section_class(a)), None)
        mapped_section = _section_class(args[1]) if typing.get_origin(annotation) is dict and len(args) == 2 else None
        doc = docs.get(name, field.description or "")
        if section is not None:
            if section.__doc__ and section.__doc__ is not BaseModel.__doc__ and doc == "":
                doc = inspect.cleandoc(section.__doc__)
            intros[key] = doc
            _config_rows(section, f"{key}.", rows, intros, _section_default(field, parent, name))
            continue
        rows.append(_row(key, name, field, doc, parent))
        nested = optional_section or mapped_section
        if nested is not None:
            if nested.__doc__ and nested.__doc__ is not BaseModel.__doc__:
                intros.setdefault(f"{key}.<name>" if mapped_section else key, inspect.cleandoc(nested.__doc__))
            _config_rows(nested, f"{key}.<name>." if mapped_section else f"{key}.", rows, intros)


def configuration_page() -> str:
    from cbt.config import settings

    config = settings.Config
    module_doc = inspect.cleandoc(settings.__doc__ or "")
    duration_doc = module_docstrings(settings).get("DurationS", "")
    lines = [
        "# Configuration reference",
        "",
        GENERATED_NOTE,
        "",
        _rst(module_doc),
        "",
        f"A *duration (s)*: {_rst(duration_doc) or 'seconds.'} `<name>` in a key stands for a name you choose (a "
        "pool, a model). Every key can also be written in camelCase, and set by an environment variable "
        "`CBT__<SECTION>__<KEY>`, e.g. `CBT__WORKER__CONCURRENCY=8`.",
        "",
    ]
    top_level: list[list[str]] = []
    docs = attribute_docstrings(config)
    for name, field in config.model_fields.items():
        section = _section_class(field.annotation)
        if section is None:
            top_level.append(_row(name, name, field, docs.get(name, field.description or ""), None))
            continue
        rows: list[list[str]] = []
        intros: dict[str, str] = {}
        _config_rows(section, f"{name}.", rows, intros)
        lines += [f"## `{name}`", ""]
        if section.__doc__ and section.__doc__ is not BaseModel.__doc__:
            lines += [_rst(inspect.cleandoc(section.__doc__)), ""]
        for key, intro in intros.items():
            if intro:
                lines += [f"- `{key}`: {_cell(intro)}"]
        if any(intros.values()):
            lines.append("")
        lines += [*_table(["key", "type", "default", "meaning"], rows), ""]
    lines += ["## Top-level keys", "", *_table(["key", "type", "default", "meaning"], top_level), ""]
    return "\n".join([*lines, *_cbt_keys()])


def _cbt_keys() -> list[str]:
    """The original CBT's keys: accepted with a warning each (``cbt.config.cbt_compat``)."""
    from cbt.config import cbt_compat

    rows = [[", ".join(f"`{'.'.join((*key.section, name))}`" for name in key.names), _cell(key.instead)]
            for key in cbt_compat.CBT_KEYS]
    intro = _rst(" ".join(inspect.cleandoc(cbt_compat.__doc__ or "").split("\n\n")[:2]))
    return ["## The original CBT's keys", "", " ".join(intro.split()), "",
            *_table(["key (CBT)", "here"], rows), ""]


# --- command line -------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps help to the terminal's width: a fixed one, so the page is the same wherever it is built."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def _commands(parser: argparse.ArgumentParser, prog: str) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{prog} {name}", helps.get(name, ""), sub
                yield from _commands(sub, f"{prog} {name}")


CLI_INTRO = (
    "`cbt --help` lists the commands by what they are for; `cbt COMMAND --help` gives each one's arguments, and the "
    "last part of this page prints every parser. A model is named by its id (`database.table`) or by its table name "
    "where that is unique, the same way in every command. Commands that change the stores record who did it in the "
    "audit table ([security](operations/security.md#who-changed-what)).")
CLI_NOTES = (
    "Every command reads `config.yaml` (or `--config`, or `$CBT_CONFIG`); any key can be overridden by environment "
    "variable, e.g. `CBT__KAFKA__BOOTSTRAP_SERVERS=broker:9092`, `CBT__WORKER__CONCURRENCY=8`.",
    "Commands start fast, so a `watch cbt status` or a monitoring script polling every few seconds costs little: a "
    "sub-command imports what it needs only when it runs (building the parser imports no Spark, pandas, FastAPI, "
    "Kafka client or pydantic; `tests/unit/test_cli_imports.py` names the import chain when one creeps back), and "
    "`make install` compiles bytecode, so nothing is compiled at each start where `PYTHONDONTWRITEBYTECODE` is set.")
CLI_MORE = {
    "init": "tutorial.md", "render": "concepts/batching.md", "ddl": "changing-models.md#tables-the-product-owns",
    "plan": "changing-models.md#before-you-deploy-cbt-plan", "status": "web-ui.md",
    "rows": "read-api.md#from-the-command-line", "rerun": "concepts/invalidations.md",
    "rollback": "changing-models.md#rollback", "checks": "checks.md", "override": "operations/overrides.md",
    "import-cbt": "coming-from-cbt.md", "dev": "local-infrastructure.md", "schema": "protocol.md",
}
"""Where the docs say more about a command (by its first word)."""


def _usage(sub: argparse.ArgumentParser) -> str:
    """A parser's usage on one line, without ``usage:`` and ``[-h]``."""
    return " ".join(sub.format_usage().split()).removeprefix("usage: ").replace(" [-h]", "")


def _leaves(parser: argparse.ArgumentParser) -> dict[str, list[tuple[str, str, argparse.ArgumentParser]]]:
    """Each top-level command's runnable parsers (itself, or its sub-commands): prog, one-line help, parser."""
    out: dict[str, list[tuple[str, str, argparse.ArgumentParser]]] = {}
    for prog, summary, sub in _commands(parser, "cbt"):
        is_leaf = not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
        if is_leaf:
            out.setdefault(prog.split()[1], []).append((prog, summary, sub))
    return out


def _said(text: str) -> str:
    """A parser's description or help as a sentence in a table cell (``<`` and ``>`` are not HTML there)."""
    cell = _cell(text).replace("<", "&lt;").replace(">", "&gt;")
    return cell[:1].upper() + cell[1:] + ("" if cell.endswith(".") else ".")


def cli_page() -> str:
    """``cli.md``: the commands by group with what each does (the parsers' descriptions), then every parser's help."""
    from cbt.cli import GROUPS, build_parser

    with _columns(110):
        parser = build_parser()
        leaves = _leaves(parser)
        listed = {name for _, names in GROUPS for name in names}
        lines = ["# Command line", "", GENERATED_NOTE, "", CLI_INTRO, ""]
        for title, names in (*GROUPS, ("other", tuple(sorted(set(leaves) - listed)))):
            rows = []
            for name in (n for n in names if n in leaves):
                more = f" ([more]({CLI_MORE[name]}))" if name in CLI_MORE else ""
                rows += [[f"`{_cell(_usage(sub))}`", _said(sub.description or summary) + more]
                         for _, summary, sub in leaves[name]]
            if rows:
                lines += [f"## {title[:1].upper()}{title[1:]}", "", *_table(["command", "what it does"], rows), ""]
        lines += [*(f"{note}\n" for note in CLI_NOTES), "## Every command's help", "", "```text",
                  parser.format_help().rstrip(), "```", ""]
        for prog, summary, sub in _commands(parser, "cbt"):
            lines += [f"### `{prog}`", ""]
            if summary:
                lines += [_cell(summary[:1].upper() + summary[1:]) + ".", ""]
            lines += ["```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


# --- API ----------------------------------------------------------------------------------------------------------


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{name.lower()})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_schema_type(s) for s in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of string → {_schema_type(schema['additionalProperties'])}"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    return str(kind or "any")


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    if op.get("summary"):
        lines += [_rst(op["summary"]), ""]
    if op.get("description"):
        lines += [_rst(op["description"]), ""]
    params = op.get("parameters", [])
    if params:
        rows = []
        for p in params:
            schema = p.get("schema", {})
            default = f"`{json.dumps(schema['default'])}`" if "default" in schema else ""
            rows.append(
                [
                    f"`{p['name']}`",
                    p["in"],
                    "yes" if p.get("required") else "no",
                    _cell(_schema_type(schema)),
                    default,
                    _cell(p.get("description", schema.get("description", ""))),
                ]
            )
        lines += [*_table(["parameter", "in", "required", "type", "default", "meaning"], rows), ""]
    body = op.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            lines += [f"Body (`{media}`): {_schema_type(content.get('schema', {}))}", ""]
    rows = []
    for status, response in op.get("responses", {}).items():
        kinds = [f"`{m}` {_schema_type(c.get('schema', {}))}" for m, c in response.get("content", {}).items()]
        rows.append([status, _cell(response.get("description", "")), ", ".join(kinds)])
    lines += [*_table(["status", "meaning", "body"], rows), ""]
    return lines


def api_page() -> str:
    from cbt.api.openapi_doc import openapi_text

    doc = json.loads(openapi_text())
    info = doc.get("info", {})
    lines = [
        "# API reference",
        "",
        GENERATED_NOTE,
        "",
        f"{info.get('title', '')} — version {info.get('version', '')}, OpenAPI {doc.get('openapi', '')}. The same "
        "document is served at `/api/v1/openapi.json` and checked in as [docs/openapi.json](../openapi.json). "
        "[API](../api.md) describes the conventions and shows examples.",
        "",
        _rst(info.get("description", "")),
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in doc.get("paths", {}).items():
        for method, op in operations.items():
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag in sorted(by_tag):
        lines += [f"## {tag.capitalize()}", ""]
        for method, path, op in by_tag[tag]:
            lines += _operation(method, path, op)
    lines += ["## Schemas", ""]
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{#schema-{name.lower()}}}", ""]
        if schema.get("description"):
            lines += [_rst(schema["description"]), ""]
        required = set(schema.get("required", []))
        props = schema.get("properties", {})
        if props:
            rows = [
                [
                    f"`{prop}`",
                    _cell(_schema_type(s)),
                    "yes" if prop in required else "no",
                    _cell(s.get("description", "")),
                ]
                for prop, s in props.items()
            ]
            lines += [*_table(["field", "type", "required", "meaning"], rows), ""]
        else:
            lines += [f"Type: {_schema_type(schema)}", ""]
    return "\n".join(lines)


PAGES: dict[str, Callable[[], str]] = {
    "reference/configuration.md": configuration_page,
    "cli.md": cli_page,
    "reference/api.md": api_page,
}
"""Generated page (path under docs/) -> the function that renders it."""


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site's files (they exist only in the build, never under docs/)."""
    from mkdocs.structure.files import File

    for path, render in PAGES.items():
        if files.get_file_from_path(path) is not None:
            raise RuntimeError(f"docs/{path} is generated by docs/hooks/reference.py: remove the checked-in copy")
        files.append(File.generated(config, path, content=render()))
    return files
