"""The environment's two ways into ``config.yaml``: ``${VAR}`` / ``${VAR:-default}`` references inside values, and
``CBT__SECTION__KEY=value`` variables that set (or add) any key.

Both run on the parsed YAML, never on its text, so a value can never inject YAML and line numbers stay exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cbt.base.errors import Problem
from cbt.base.yamldoc import Loc, Located, SourceMap, format_loc, parse_yaml

ENV_PREFIX = "CBT__"
_REFERENCE = re.compile(r"\$\$|\$\{([^}]*)\}|\$\{")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_references(data: Any, environ: Mapping[str, str], smap: SourceMap, loc: Loc = ()) -> list[Problem]:
    """Replace ``${VAR}``, ``${VAR:-default}`` and ``$$`` (a literal ``$``) in every string value, in place."""
    problems: list[Problem] = []
    items: list[tuple[Any, Any]] = []
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, list):
        items = list(enumerate(data))
    for key, value in items:
        child: Loc = (*loc, key)
        if isinstance(value, str):
            found: list[str] = []
            data[key] = _expand(value, environ, found.append)
            problems += [smap.problem(child, message) for message in found]
        else:
            problems += expand_references(value, environ, smap, child)
    return problems


def _expand(text: str, environ: Mapping[str, str], report: Callable[[str], None]) -> str:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$$":
            return "$"
        inner = match.group(1)
        if inner is None:
            report(f"unterminated '${{' in {text!r}")
            return whole
        name, has_default, default = inner.partition(":-")
        if not _NAME.fullmatch(name):
            report(f"invalid reference '{whole}': expected ${{NAME}} or ${{NAME:-default}}")
            return whole
        if name in environ:
            return environ[name]
        if has_default:
            return default
        report(f"environment variable {name} is not set (write ${{{name}:-default}} to give a default)")
        return ""

    return _REFERENCE.sub(replace, text)


def apply_env_overrides(data: dict[str, Any], environ: Mapping[str, str], smap: SourceMap) -> list[Problem]:
    """Set ``data[section][key]…`` from each ``CBT__SECTION__KEY`` variable (names are lower-cased).

    Values are strings (pydantic converts numbers and booleans); a value starting with ``[`` or ``{`` is read as a
    YAML flow list or mapping. Each set key is located at ``$CBT__…:0`` so errors name the variable.
    """
    problems: list[Problem] = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        where = Located(f"${name}", 0)
        parts: Loc = tuple(part.lower() for part in name[len(ENV_PREFIX) :].split("__"))
        if not all(parts):
            problems.append(Problem(where.path, 0, name, "expected CBT__SECTION__KEY with non-empty parts"))
            continue
        value, error = _env_value(environ[name])
        if error:
            problems.append(Problem(where.path, 0, format_loc(parts), error))
            continue
        error = _set_path(data, parts, value)
        if error:
            problems.append(Problem(where.path, 0, format_loc(parts), error))
            continue
        smap.lines[parts] = where
        for loc in [k for k in smap.lines if k[: len(parts)] == parts and len(k) > len(parts)]:
            del smap.lines[loc]
    return problems


def _env_value(raw: str) -> tuple[Any, str | None]:
    if not raw.lstrip().startswith(("[", "{")):
        return raw, None
    data, _, problems = parse_yaml(raw, "environment")  # (the same limits as a file: aliases cannot explode)
    if problems:
        return None, f"invalid YAML flow value: {problems[0].message.removeprefix('invalid YAML: ')}"
    return data, None


def _set_path(data: dict[str, Any], parts: Loc, value: Any) -> str | None:
    node = data
    for index, part in enumerate(parts[:-1]):
        child = node.get(str(part))
        if child is None:
            child = node[str(part)] = {}
        if not isinstance(child, dict):
            return f"cannot set a key inside {format_loc(parts[: index + 1])}: it is not a mapping"
        node = child
    node[str(parts[-1])] = value
    return None
