"""YAML parsing that remembers where every key was written, so errors can say ``path:line: field: problem``.

Lines are 1-based file lines: ``line_offset`` shifts a document that starts further down a file (frontmatter).
A malformed document, a duplicate key or a non-string key becomes a Problem, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from cbt.base.errors import Problem

Loc = tuple[str | int, ...]
"""A path into a parsed document: mapping keys and sequence indexes."""


@dataclass(frozen=True)
class Located:
    path: str
    line: int


@dataclass
class SourceMap:
    """Where each key (or sequence item) of a document was written; unknown paths fall back to the parent's."""

    path: str
    root_line: int = 1
    lines: dict[Loc, Located] = field(default_factory=dict)

    def locate(self, loc: Loc) -> Located:
        for end in range(len(loc), 0, -1):
            found = self.lines.get(tuple(loc[:end]))
            if found is not None:
                return found
        return Located(self.path, self.root_line)

    def problem(self, loc: Loc, message: str, field_name: str | None = None) -> Problem:
        where = self.locate(loc)
        return Problem(where.path, where.line, field_name or format_loc(loc), message)

    def graft(self, prefix: Loc, other: SourceMap, other_prefix: Loc = ()) -> None:
        """Point ``prefix + rest`` at wherever ``other_prefix + rest`` was written in ``other``."""
        base = other.locate(other_prefix)
        self.lines[prefix] = base
        for loc, where in other.lines.items():
            if loc[: len(other_prefix)] == other_prefix and len(loc) > len(other_prefix):
                self.lines[prefix + loc[len(other_prefix) :]] = where


def format_loc(loc: Loc) -> str:
    """``('dependencies', 1, 0)`` → ``dependencies[1][0]``; the root is ``(root)``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def parse_yaml(text: str, path: str, line_offset: int = 0) -> tuple[Any, SourceMap, list[Problem]]:
    """Parse one YAML document; return (data, where each key is, problems). ``data`` is None on a parse error."""
    smap = SourceMap(path=path, root_line=line_offset + 1)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_EXPANDED_VALUES:
            return None, smap, [Problem(path, line_offset + 1, "yaml",
                                        f"invalid YAML: its aliases expand to more than {MAX_EXPANDED_VALUES:,} "
                                        "values (an alias of an alias of ...); write the values out")]
        problems = _check_keys(node, path, line_offset, set())
        if problems:
            return None, smap, problems
        data = loader.construct_document(node) if node is not None else None  # type: ignore[no-untyped-call]
        if node is not None:
            _record_lines(node, (), smap, line_offset, set())
    except yaml.YAMLError as e:
        return None, smap, [_yaml_problem(e, path, line_offset)]
    except RecursionError:
        return None, smap, [Problem(path, line_offset + 1, "yaml", "invalid YAML: nested too deeply")]
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]
    return data, smap, []


MAX_EXPANDED_VALUES = 100_000
"""The most values a document may hold once its aliases are expanded. A few lines of aliases to aliases ("billion
laughs") expand exponentially: every walk of the data afterwards — validation, rendering, a JSON dump — would
take exponential time and memory. Real model files and configs hold hundreds."""


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``node`` holds once every alias in it is expanded, computed once per node (linear in the
    document's nodes, however much they expand). A recursive alias counts once."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1  # (a recursive alias met below counts as one value, not forever)
    size = 1
    if isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(key, sizes) + _expanded_size(value, sizes) for key, value in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(item, sizes) for item in node.value)
    sizes[id(node)] = size = min(size, MAX_EXPANDED_VALUES + 1)
    return size


def _yaml_problem(e: yaml.YAMLError, path: str, line_offset: int) -> Problem:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    line = (mark.line + 1 if mark is not None else 1) + line_offset
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return Problem(path, line, "yaml", message)


def _check_keys(node: yaml.Node | None, path: str, offset: int, seen: set[int]) -> list[Problem]:
    """Duplicate and non-string keys: YAML would silently keep the last or build odd keys."""
    if node is None or id(node) in seen:
        return []
    seen.add(id(node))
    problems: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1 + offset
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems += _check_keys(value_node, path, offset, seen)
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                problems.append(Problem(path, line, "yaml", f"keys must be strings, got {_node_text(key_node)}"))
            elif key_node.value in first_line:
                where = first_line[key_node.value]
                problems.append(Problem(path, line, key_node.value, f"duplicate key (first set on line {where})"))
            else:
                first_line[key_node.value] = line
            problems += _check_keys(value_node, path, offset, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            problems += _check_keys(item, path, offset, seen)
    return problems


def _node_text(node: yaml.Node) -> str:
    return (
        repr(node.value)
        if isinstance(node, yaml.ScalarNode)
        else f"a {type(node).__name__.removesuffix('Node').lower()}"
    )


def _record_lines(node: yaml.Node, loc: Loc, smap: SourceMap, offset: int, visited: set[int]) -> None:
    """Where each key and item is, walking each node once: a node reached again through an alias keeps the lines of
    its first path (a later path is located at its nearest recorded ancestor), so shared aliases cost nothing more."""
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                child = (*loc, key_node.value)
                smap.lines[child] = Located(smap.path, key_node.start_mark.line + 1 + offset)
                _record_lines(value_node, child, smap, offset, visited)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*loc, index)
            smap.lines[child] = Located(smap.path, item.start_mark.line + 1 + offset)
            _record_lines(item, child, smap, offset, visited)
