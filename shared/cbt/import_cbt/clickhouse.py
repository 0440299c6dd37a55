"""ClickHouse SQL with template parts in it, as Spark SQL (sqlglot reads ClickHouse and writes Spark), the parts held
in place (docs/coming-from-cbt.md#sql).

Each ``{{ expression }}`` stands in the SQL as an identifier ``__cbtjN__`` (inside backticks or quotes too), put back
after the transpilation; ``{% if %}`` blocks are transpiled branch by branch (``transpile``). ClickHouse functions
sqlglot does not translate are rewritten here; what has no Spark equivalent is kept as written and reported.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from cbt.import_cbt.clickhouse_functions import FUNCTIONS, SPARK_FUNCTIONS
from cbt.import_cbt.gotemplate import Expr, Part, Scope, Tag, Text

_EXPR = re.compile(r"__cbtj(\d+)__")


@dataclass(frozen=True)
class Statement:
    """One statement: its parsed Spark form (placeholders in it), its line in the file, and its Spark SQL with the
    template parts put back (``sql``). ``tree`` is ``None`` for SQL with ``{% if %}`` blocks: its statements as one
    text."""

    tree: exp.Expr | None
    line: int
    sql: str


class NotTranspiled(Exception):
    """The SQL does not parse as ClickHouse SQL, or its template tags could not be kept in place."""


@dataclass
class Placeholders:
    exprs: list[str]

    def restore(self, sql: str) -> str:
        return _EXPR.sub(lambda m: "{{ " + self.exprs[int(m.group(1))] + " }}", sql)

    def jinja_of(self, name: str) -> str | None:
        """The Jinja expression an identifier stands for, when it is one placeholder."""
        match = _EXPR.fullmatch(name)
        return self.exprs[int(match.group(1))] if match else None


def hold(parts: Sequence[Part]) -> tuple[str, Placeholders]:
    """The template as SQL text with placeholders, and what they stand for."""
    held = Placeholders([])
    out = []
    for part in parts:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Expr):
            out.append(f"__cbtj{len(held.exprs)}__")
            held.exprs.append(part.jinja)
        elif isinstance(part, Tag):
            raise NotTranspiled(f"{{% {part.jinja} %}} left in the SQL")
    return "".join(out), held


def transpile(parts: Sequence[Part], scope: Scope) -> tuple[list[Statement], Placeholders]:
    """Every statement of the template as Spark SQL; raises ``NotTranspiled``.

    ``{% if %}`` blocks cannot pass through a transpiler as text: each branch is transpiled in a variant of the whole
    template (every other block on its default branch), and the lines where a variant differs from the default become
    the block (``_with_blocks``)."""
    blocks = _if_blocks(parts)
    if not blocks:
        text, held = hold(parts)
        return _statements(text, held, scope), held
    held = Placeholders([])
    base = _variant(parts, blocks, None, None)
    base_text, base_held = hold(base)
    base_lines = _joined(_statements(base_text, base_held, scope)).splitlines()
    edits: list[tuple[int, int, str, list[str]]] = []
    for index, block in enumerate(blocks):
        for branch, (condition, _) in enumerate(block.branches):
            if condition is None:
                continue
            variant_text, variant_held = hold(_variant(parts, blocks, index, branch))
            silent = Scope(scope.path, scope.first_line, scope.kind)  # its notes are the default variant's
            lines = _joined(_statements(variant_text, variant_held, silent)).splitlines()
            start, end, replacement = _difference(base_lines, lines)
            edits.append((start, end, condition, replacement))
    statements = [Statement(None, scope.first_line, _with_blocks(base_lines, edits))]
    return statements, held


@dataclass
class _IfBlock:
    branches: list[tuple[str | None, list[Part]]]
    """``(condition, parts)`` per branch; ``None``: the else branch."""
    start: int
    end: int
    """Indexes of the opening and the ``endif`` tags in the parts."""


def hoist_sets(parts: Sequence[Part]) -> tuple[str, list[Part]]:
    """The ``{% set %}`` tags as text to put before the SQL, and the other parts: a set prints nothing, so before
    the SQL every use still sees it."""
    depth, sets, rest = 0, list[Tag](), list[Part]()
    for part in parts:
        word = part.jinja.split(None, 1)[0] if isinstance(part, Tag) else ""
        depth += (word in ("if", "for", "with") and 1) or -(word in ("endif", "endfor", "endwith"))
        if isinstance(part, Tag) and word == "set" and depth == 0:
            sets.append(part)
        else:
            rest.append(part)
    return "".join("{% " + p.jinja + " %}\n" for p in sets), rest


def _if_blocks(parts: Sequence[Part]) -> list[_IfBlock]:
    """The top-level ``{% if %}`` blocks; ``NotTranspiled`` for other tags or nesting."""
    blocks: list[_IfBlock] = []
    current: _IfBlock | None = None
    for index, part in enumerate(parts):
        if not isinstance(part, Tag):
            if current is not None:
                current.branches[-1][1].append(part)
            continue
        word = part.jinja.split(None, 1)[0]
        if word == "if" and current is None:
            current = _IfBlock([(part.jinja[3:], [])], index, -1)
        elif word == "else" and current is not None:
            current.branches.append((None, []))
        elif word == "endif" and current is not None:
            current.end = index
            blocks.append(current)
            current = None
        else:
            raise NotTranspiled(f"a {{% {word} %}} block inside SQL (only if/else blocks, not nested, are transpiled)")
    return blocks


def _variant(parts: Sequence[Part], blocks: list[_IfBlock], chosen: int | None, branch: int | None) -> list[Part]:
    """The parts with every block replaced by one branch: block ``chosen`` by ``branch``, the others by their else
    branch (or nothing)."""
    out: list[Part] = []
    position = 0
    for index, block in enumerate(blocks):
        out.extend(parts[position : block.start])
        if index == chosen and branch is not None:
            out.extend(block.branches[branch][1])
        else:
            out.extend(next((p for c, p in block.branches if c is None), []))
        position = block.end + 1
    out.extend(parts[position:])
    return out


def _joined(statements: list[Statement]) -> str:
    return ";\n\n".join(s.sql for s in statements)


def _difference(base: list[str], variant: list[str]) -> tuple[int, int, list[str]]:
    """``base[start:end]`` is what ``variant`` has instead: the one contiguous run of lines where they differ."""
    start = 0
    while start < min(len(base), len(variant)) and base[start] == variant[start]:
        start += 1
    tail = 0
    while tail < min(len(base), len(variant)) - start and base[-1 - tail] == variant[-1 - tail]:
        tail += 1
    return start, len(base) - tail, variant[start : len(variant) - tail]


def _with_blocks(base: list[str], edits: list[tuple[int, int, str, list[str]]]) -> str:
    ordered = sorted(edits)
    for (_, end, _, _), (start, _, _, _) in itertools.pairwise(ordered):
        if start < end:
            raise NotTranspiled("two of its {% if %} blocks change the same lines of the SQL")
    lines = list(base)
    for start, end, condition, replacement in reversed(ordered):
        block = ["{% if " + condition + " %}", *replacement]
        if end > start:
            block += ["{% else %}", *base[start:end]]
        lines[start:end] = [*block, "{% endif %}"]
    return "\n".join(lines)


def _statements(text: str, held: Placeholders, scope: Scope) -> list[Statement]:
    statements: list[Statement] = []
    for chunk, chunk_line, line in _chunks(text, scope.first_line):
        try:
            trees = sqlglot.parse(chunk, read="clickhouse")
        except SqlglotError as e:
            raise NotTranspiled(f"line {line}: {str(e).splitlines()[0]}") from e
        for tree in trees:
            if tree is None:
                continue
            if re.search(r"\bON\s+CLUSTER\b", chunk, re.IGNORECASE):
                scope.note(line, "ON CLUSTER", "Delta has no clusters: the clause was left out")
            tree = rewrite(tree, scope, _locator(chunk, chunk_line, line))
            try:
                sql = tree.sql(dialect="spark", pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
            except (SqlglotError, ValueError) as e:
                raise NotTranspiled(f"line {line}: {e}") from e
            statements.append(Statement(tree, line, held.restore(sql)))
    return statements


def _chunks(text: str, first_line: int) -> list[tuple[str, int, int]]:
    """The text split at top-level semicolons (sqlglot's tokenizer: quotes and comments respected): each chunk with
    the file line it starts on and the file line of its first token; chunks of comments only are left out."""
    try:
        tokens = Dialect.get_or_raise("clickhouse").tokenize(text)
    except SqlglotError as e:
        raise NotTranspiled(str(e).splitlines()[0]) from e
    out: list[tuple[str, int, int]] = []
    start, token_line = 0, None

    def close(end: int) -> None:
        if token_line is not None:
            out.append((text[start:end], first_line + text.count("\n", 0, start), first_line + token_line - 1))

    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            close(token.start)
            start, token_line = token.end + 1, None
        elif token_line is None:
            token_line = token.line
    close(len(text))
    return out


def _locator(chunk: str, chunk_line: int, default: int) -> Callable[[str], int]:
    return lambda name: _line_of(name, chunk, chunk_line, default)


def _line_of(name: str, chunk: str, chunk_line: int, default: int) -> int:
    """The file line of the first ``name`` (a word) in the chunk, for a note; else ``default``."""
    match = re.search(rf"\b{re.escape(name)}\b", chunk, re.IGNORECASE)
    return default if match is None else chunk_line + chunk.count("\n", 0, match.start())


def rewrite(tree: exp.Expr, scope: Scope, locate: Callable[[str], int]) -> exp.Expr:
    """ClickHouse-only constructs as Spark's; the rest reported (at the line of their first use in the chunk)."""
    seen: set[str] = set()

    def note_once(key: str, at: int, what: str, todo: str) -> None:
        if key not in seen:
            seen.add(key)
            scope.note(at, what, todo)

    def visit(node: exp.Expr) -> exp.Expr:
        new = _visit(node)
        if new is node:
            return node
        if node.comments:  # a comment moves with the node's stand-in
            new.add_comments(node.comments)
        if isinstance(node, exp.Anonymous | exp.CombinedAggFunc | exp.Final):  # its arguments are still ClickHouse's
            for child in list(new.iter_expressions()):
                child.replace(child.transform(visit))
        return new

    def _visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Final):
            note_once(
                "final",
                locate("FINAL"),
                "FINAL",
                "Delta has no merge-time deduplication: the read was kept without it; if the table holds "
                "several versions of a row, keep the newest in the query",
            )
            inner: exp.Expr = node.this
            return inner
        if isinstance(node, exp.Count) and node.this is None:
            return exp.Count(this=exp.Star())
        if isinstance(node, exp.Rand) and not node.args.get("this"):  # ClickHouse's rand() is a UInt32
            return exp.maybe_parse("floor(rand() * 4294967296)", dialect="spark")
        if isinstance(node, exp.Table) and node.args.get("db") is not None and node.db.lower() == "system":
            note_once(
                f"system.{node.name}",
                locate("system"),
                f"system.{node.name}",
                "a ClickHouse system table: no Spark equivalent, rewrite the query",
            )
        if isinstance(node, exp.CombinedAggFunc | exp.Anonymous):
            return _function(node, locate, note_once)
        return node

    return tree.transform(visit)


def _function(
    node: exp.Expr, locate: Callable[[str], int], note_once: Callable[[str, int, str, str], None]
) -> exp.Expr:
    name = str(node.this if isinstance(node.this, str) else node.name)
    args = list(node.expressions)
    if name.lower() in ("cluster", "clusterallreplicas") and len(args) == 2:
        note_once(
            name,
            locate(name),
            f"{name}()",
            "Delta has no clusters: the table is read directly (check its name: "
            "a local table's suffix is not taken off)",
        )
        table = args[1]
        return (
            exp.Table(this=exp.to_identifier(table.name), db=exp.to_identifier(table.table))
            if isinstance(table, exp.Column)
            else table
        )
    build = FUNCTIONS.get(name.lower())
    converted = build(args) if build is not None else None
    if converted is not None:
        return converted
    if name.lower() in SPARK_FUNCTIONS:
        return node
    note_once(
        f"fn:{name}",
        locate(name),
        f"{name}()",
        "no Spark SQL equivalent known to the importer: kept as written, rewrite it by hand",
    )
    return node
