"""CBT's Go templates (``text/template`` with Sprig) as our Jinja templates (docs/coming-from-cbt.md#templates).

A template becomes a list of parts — literal text, ``{{ expression }}`` and ``{% tag %}`` — so the SQL around them can
be transpiled with the expressions held in place. What has no equivalent is left out of the output and reported as a
``Note`` at its file line; nothing is dropped silently.

Branches on ClickHouse's cluster settings (``{{ if .clickhouse.cluster }}``) are decided here: Delta has no clusters
or local tables, so those settings are empty and such a branch is never taken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cbt.import_cbt.functions import Unsupported, call
from cbt.import_cbt.report import Note


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Expr:
    jinja: str
    line: int


@dataclass(frozen=True)
class Tag:
    jinja: str
    line: int


Part = Text | Expr | Tag

EMPTY = '""'
"""The Jinja of a value CBT had and we do not (ClickHouse's cluster): empty, as on a single ClickHouse server."""
_RESERVED = frozenset({"self", "env", "dep", "bounds", "task", "cache", "spark", "ref", "loop"})


@dataclass
class Scope:
    """What a template of one model may refer to, and where its findings go."""

    path: str
    first_line: int
    kind: str
    """``external``, ``incremental`` or ``scheduled``."""
    env_names: frozenset[str] = frozenset()
    placeholders: dict[str, str] = field(default_factory=dict)
    """``{{external}}`` / ``{{transformation}}`` → the default database they stand for."""
    dependencies: tuple[str, ...] = ()
    """The model's dependency ids, resolved (``db.table``)."""
    notes: list[Note] = field(default_factory=list)

    def note(self, line: int, what: str, todo: str) -> None:
        self.notes.append(Note(self.path, line, what, todo))


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s+|(?P<str>"(?:\\.|[^"\\])*")|(?P<raw>`[^`]*`)|(?P<chr>'(?:\\.|[^'\\])')|(?P<num>-?\d+(?:\.\d+)?)
    |(?P<field>(?:\$[A-Za-z_0-9]*)?(?:\.[A-Za-z_][A-Za-z_0-9]*)+|\.)|(?P<var>\$[A-Za-z_0-9]*)|(?P<declare>:=)
    |(?P<assign>=)|(?P<ident>[A-Za-z_][A-Za-z_0-9]*)|(?P<punct>[()|,])""",
    re.VERBOSE,
)


def _actions(source: str) -> list[tuple[int, int, str, bool, bool]]:
    """``(start, end, inner, trim_left, trim_right)`` of every ``{{ … }}``, string literals inside respected."""
    out: list[tuple[int, int, str, bool, bool]] = []
    pos = 0
    while (start := source.find("{{", pos)) != -1:
        i, quote = start + 2, ""
        while i < len(source):
            ch = source[i]
            if quote:
                if ch == "\\" and quote != "`":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif ch in '"`':
                quote = ch
            elif source.startswith("}}", i):
                break
            i += 1
        end = min(i + 2, len(source))
        inner = source[start + 2 : i]
        trim_left = inner.startswith("- ")
        trim_right = inner.endswith(" -")
        inner = inner[2 if trim_left else 0 : len(inner) - (2 if trim_right else 0)].strip()
        out.append((start, end, inner, trim_left, trim_right))
        pos = end
    return out


_COMMENTED_ACTION = re.compile(r"^[ \t]*--.*\{\{.*$", re.MULTILINE)


def convert(source: str, scope: Scope) -> list[Part]:
    """The Go template ``source`` as parts; findings go to ``scope.notes``.

    SQL comment lines holding template actions (examples commented out, as in CBT's own models) are left out: Go ran
    them even inside the comment, and kept as Jinja they would have to render too."""
    lines = [scope.first_line + source.count("\n", 0, m.start()) for m in _COMMENTED_ACTION.finditer(source)]
    if lines:
        spans = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in _runs(lines))
        where = f"line{'s' if len(lines) > 1 else ''} {spans}"
        scope.note(lines[0], "SQL comments holding template actions", f"left out ({where}): restore by hand if needed")
    return _Converter(_COMMENTED_ACTION.sub("", source), scope).run()


def _runs(lines: list[int]) -> list[tuple[int, int]]:
    """Consecutive line numbers as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for line in lines:
        if runs and runs[-1][1] == line - 1:
            runs[-1] = (runs[-1][0], line)
        else:
            runs.append((line, line))
    return runs


_JINJA_DELIMITER = re.compile(r"\{[{%#]")


def literal_parts(text: str) -> list[Part]:
    """CBT's literal SQL as parts: a ``{{``, ``{%`` or ``{#`` in it (a string, a comment) is only text to Go's
    templates, but would start a Jinja expression, tag or comment in ours, so each becomes an expression printing
    itself (``{{ '{#' }}``) — the SQL reads the same characters, and nothing of CBT's text runs as a template."""
    parts: list[Part] = []
    pos = 0
    for match in _JINJA_DELIMITER.finditer(text):
        parts.append(Text(text[pos:match.start()]))
        parts.append(Expr(repr(match.group()), 0))
        pos = match.end()
    parts.append(Text(text[pos:]))
    return [p for p in parts if not (isinstance(p, Text) and p.text == "")]


def to_jinja(parts: Sequence[Part]) -> str:
    """Parts as Jinja text."""
    out = []
    for part in parts:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Expr):
            out.append("{{ " + part.jinja + " }}")
        else:
            out.append("{% " + part.jinja + " %}")
    return "".join(out)


@dataclass
class _Block:
    kind: str
    """``if``, ``for`` or ``with``; ``dead``: a branch never taken (ClickHouse cluster); ``kept``: its else is."""
    dot: str | None
    line: int
    ends: list[str] = field(default_factory=list)


class _Converter:
    def __init__(self, source: str, scope: Scope) -> None:
        self.source, self.scope = source, scope
        self.parts: list[Part] = []
        self.blocks: list[_Block] = []
        self.dead = 0
        """Depth of blocks whose output is dropped (a branch never taken)."""

    def line_at(self, offset: int) -> int:
        return self.scope.first_line + self.source.count("\n", 0, offset)

    @property
    def dot(self) -> str | None:
        """What ``.`` is: ``None`` at the top (the root), else the Jinja name of the range/with element."""
        return next((b.dot for b in reversed(self.blocks) if b.dot is not None), None)

    def run(self) -> list[Part]:
        pos, trim_next = 0, False
        for start, end, inner, trim_left, trim_right in _actions(self.source):
            text = self.source[pos:start]
            if trim_next:
                text = text.lstrip()
            if trim_left:
                text = text.rstrip()
            self.emit(Text(text))
            try:
                self.action(inner, self.line_at(start))
            except Unsupported as e:
                if not self.dead:
                    self.scope.note(self.line_at(start), e.what, e.todo)
            pos, trim_next = end, trim_right
        tail = self.source[pos:]
        self.emit(Text(tail.lstrip() if trim_next else tail))
        for block in self.blocks:
            what = f"{{{{ {block.kind} }}}} without {{{{ end }}}}"
            self.scope.note(block.line, what, "close the block in CBT's file")
        return [p for p in self.parts if not (isinstance(p, Text) and p.text == "")]

    def emit(self, part: Part) -> None:
        if self.dead:
            return
        if isinstance(part, Text):
            self.parts.extend(literal_parts(part.text))
        else:
            self.parts.append(part)

    def action(self, inner: str, line: int) -> None:
        if inner.startswith("/*"):
            return  # a template comment
        words = inner.split(None, 1)
        keyword, rest = (words[0], words[1] if len(words) > 1 else "") if words else ("", "")
        handler: dict[str, Callable[[str, int], None]] = {
            "if": self.open_if,
            "else": self.else_,
            "end": self.end,
            "range": self.range_,
            "with": self.with_,
        }
        if keyword in handler:
            handler[keyword](rest, line)
        elif keyword in ("define", "template", "block", "break", "continue"):
            raise Unsupported(
                f"{{{{ {keyword} }}}}",
                "named templates and loop control have no equivalent here: inline the template by hand",
            )
        else:
            self.statement(inner, line)

    def statement(self, inner: str, line: int) -> None:
        tokens = _tokens(inner)
        if len(tokens) > 2 and tokens[0][0] == "var" and tokens[1][0] in ("declare", "assign"):
            self.emit(Tag(f"set {_var_name(tokens[0][1])} = {self.pipeline(tokens[2:], line)}", line))
            return
        self.emit(Expr(self.pipeline(tokens, line), line))

    def open_if(self, rest: str, line: int) -> None:
        condition = self.pipeline(_tokens(rest), line)
        if condition == EMPTY:  # a ClickHouse cluster branch: never taken here
            self.blocks.append(_Block("dead", None, line))
            self.dead += 1
            return
        self.blocks.append(_Block("if", None, line, ["endif"]))
        self.emit(Tag(f"if {condition}", line))

    def else_(self, rest: str, line: int) -> None:
        if not self.blocks:
            raise Unsupported("{{ else }} outside a block", "fix the template in CBT's file")
        block = self.blocks[-1]
        if block.kind == "dead":  # the branch never taken is over: its else is what runs
            self.dead -= 1
            block.kind = "kept"
            if rest.startswith("if "):
                condition = self.pipeline(_tokens(rest[3:]), line)
                block.kind, block.ends = "if", ["endif"]
                self.emit(Tag(f"if {condition}", line))
            return
        if rest.startswith("if "):
            if block.kind != "if":
                raise Unsupported("{{ else if }} after range or with", "rewrite it as a nested if")
            self.emit(Tag(f"elif {self.pipeline(_tokens(rest[3:]), line)}", line))
            return
        if block.kind == "with":
            raise Unsupported("{{ else }} of {{ with }}", "rewrite it as if/else")
        self.emit(Tag("else", line))

    def end(self, _rest: str, line: int) -> None:
        if not self.blocks:
            raise Unsupported("{{ end }} without a block", "fix the template in CBT's file")
        block = self.blocks.pop()
        if block.kind == "dead":
            self.dead -= 1
        for tag in block.ends:
            self.emit(Tag(tag, line))

    def range_(self, rest: str, line: int) -> None:
        tokens = _tokens(rest)
        names = [t[1] for t in tokens if t[0] == "var"]
        if any(t[0] == "declare" for t in tokens):
            split = next(i for i, t in enumerate(tokens) if t[0] == "declare")
            over = self.pipeline(tokens[split + 1 :], line)
            if len(names) == 2:  # Go: index (slice) or key (map, in key order), then the value
                key, value = _var_name(names[0]), _var_name(names[1])
                self.blocks.append(_Block("for", value, line, ["endfor"]))
                self.emit(
                    Tag(
                        f"for {value} in ({over}|dictsort|map(attribute=1)|list if {over} is mapping else {over})", line
                    )
                )
                self.emit(
                    Tag(
                        f"set {key} = ({over}|dictsort|map(attribute=0)|list)[loop.index0] if {over} is "
                        "mapping else loop.index0",
                        line,
                    )
                )
                return
            value = _var_name(names[0])
        else:
            over, value = self.pipeline(tokens, line), f"item{len(self.blocks)}"
        self.blocks.append(_Block("for", value, line, ["endfor"]))
        self.emit(Tag(f"for {value} in ({over}|dictsort|map(attribute=1) if {over} is mapping else {over})", line))

    def with_(self, rest: str, line: int) -> None:
        value = self.pipeline(_tokens(rest), line)
        name = f"item{len(self.blocks)}"
        self.blocks.append(_Block("with", name, line, ["endwith", "endif"]))
        self.emit(Tag(f"if {value}", line))
        self.emit(Tag(f"with {name} = {value}", line))

    # --- expressions -------------------------------------------------------------------------------------------------

    def pipeline(self, tokens: list[tuple[str, str]], line: int) -> str:
        commands: list[list[tuple[str, str] | list[tuple[str, str]]]] = [[]]
        depth, group = 0, list[tuple[str, str]]()
        for token in tokens:
            if token == ("punct", "("):
                if depth:
                    group.append(token)
                depth += 1
            elif token == ("punct", ")"):
                depth -= 1
                if depth:
                    group.append(token)
                else:
                    commands[-1].append(group)
                    group = []
            elif depth:
                group.append(token)
            elif token == ("punct", "|"):
                commands.append([])
            else:
                commands[-1].append(token)
        if not commands[0]:
            raise Unsupported("an empty action", "fix the template in CBT's file")
        value = self.command(commands[0], None, line)
        for command in commands[1:]:
            value = self.command(command, value, line)
        return value

    def command(self, items: list[tuple[str, str] | list[tuple[str, str]]], piped: str | None, line: int) -> str:
        head = items[0]
        if isinstance(head, tuple) and head[0] == "ident" and head[1] not in ("true", "false", "nil"):
            args = [self.operand(item, line) for item in items[1:]]
            if piped is not None:
                args.append(piped)
            if head[1] == "index":
                return self.index(items[1:], args, line)
            return call(head[1], args)
        if len(items) > 1 or piped is not None:
            raise Unsupported("a value given arguments", "fix the template in CBT's file")
        return self.operand(head, line)

    def operand(self, item: tuple[str, str] | list[tuple[str, str]], line: int) -> str:
        if isinstance(item, list):
            return f"({self.pipeline(item, line)})"
        kind, text = item
        if kind == "str":
            return json.dumps(json.loads(text))
        if kind == "raw":
            return json.dumps(text[1:-1])
        if kind == "chr":
            return str(ord(text[1:-1]))
        if kind == "num":
            return text
        if kind == "ident":
            return {"true": "true", "false": "false", "nil": "none"}.get(text) or call(text, [])
        if kind == "var":
            if text == "$":
                raise Unsupported("$ as a value", "name the field you need ($.self.table…)")
            return _var_name(text)
        if kind == "field":
            return self.field(text, line)
        raise Unsupported(f"{text!r} in an action", "fix the template in CBT's file")

    def field(self, text: str, line: int) -> str:
        if text == ".":
            if self.dot is None:
                raise Unsupported("{{ . }} (all of the data)", "name the field you need")
            return self.dot
        head, _, rest = text.partition(".")
        path = [p for p in rest.split(".") if p]
        if head not in ("", "$"):  # $var.a.b
            return ".".join([_var_name(head), *path])
        if head == "" and self.dot is not None:
            return ".".join([self.dot, *path])
        return self.root(path, line)

    def root(self, path: list[str], line: int) -> str:
        name, rest = path[0], path[1:]
        if name == "clickhouse":
            return EMPTY
        if name == "self":
            return self.self_field(rest)
        if name == "bounds" and self.scope.kind == "incremental" and rest in (["start"], ["end"]):
            return f"bounds.{rest[0]}"
        if name == "task" and rest in (["start"], ["direction"]) and self.scope.kind != "external":
            return f"task.{rest[0]}"
        if name == "execution" and rest == ["timestamp"] and self.scope.kind == "scheduled":
            return "task.start"
        if name == "env":
            return self.env(rest)
        if name == "cache" and self.scope.kind == "external" and len(rest) == 1:
            return f"cache.{rest[0]}"
        if name == "dep" and self.scope.kind != "external":
            return self.dep([json.dumps(p) for p in rest], line)
        raise Unsupported(
            f"{{{{ .{'.'.join(path)} }}}} is not a template variable of a {self.scope.kind} model",
            "replace it (the variables: docs/design/models.md#templates)",
        )

    def self_field(self, rest: list[str]) -> str:
        if rest == ["helpers", "from"]:
            return "self.from"
        if rest == ["cluster"]:
            return EMPTY
        if rest in (["database"], ["table"]) or (rest == ["interval"] and self.scope.kind == "incremental"):
            return f"self.{rest[0]}"
        raise Unsupported(f"{{{{ .self.{'.'.join(rest)} }}}}", "replace it (self.database, self.table, self.from…)")

    def env(self, rest: list[str]) -> str:
        if not rest:
            return "env"
        name = rest[0]
        if len(rest) == 1 and name in self.scope.env_names:
            return f"env.{name}"
        if len(rest) == 1:  # Go gives "" for a variable nobody set; our env.NAME would be an error
            return f'env.get({json.dumps(name)}, "")'
        raise Unsupported(f"{{{{ .env.{'.'.join(rest)} }}}}", "env values are strings: drop the extra field")

    def index(self, raw: list[tuple[str, str] | list[tuple[str, str]]], args: list[str], line: int) -> str:
        if raw and raw[0] == ("field", ".dep") and self.dot is None:
            return self.dep(args[1:], line)
        if not args:
            raise Unsupported("index without arguments", "fix the template in CBT's file")
        return args[0] + "".join(f"[{key}]" for key in args[1:])

    def dep(self, keys: list[str], line: int) -> str:
        """``dep[db][table]…`` with the placeholder keys resolved and ``helpers.from`` as ``from``."""
        plain = [json.loads(k) if k.startswith('"') else None for k in keys]
        if len(plain) >= 2 and plain[0] is not None and plain[1] is not None:
            database = self.scope.placeholders.get(plain[0], plain[0])
            table = plain[1]
            if f"{database}.{table}" not in self.scope.dependencies:
                matches = [d for d in self.scope.dependencies if d.split(".", 1)[1] == plain[0]]
                if plain[0] not in self.scope.placeholders and len(matches) == 1 and len(plain) >= 2:
                    self.scope.note(
                        line,
                        f".dep.{plain[0]} names a table, not a database (CBT's dep is keyed by database, then table)",
                        f'converted as dep["{matches[0].split(".")[0]}"]["{plain[0]}"]; check it',
                    )
                    database, table = matches[0].split(".")
                    keys = [json.dumps(database), json.dumps(table), *keys[1:]]
                    plain = [database, table, *plain[1:]]
                    return self._dep_path(database, table, plain[2:], keys[2:])
                raise Unsupported(
                    f"dep {plain[0]}.{plain[1]} is not a dependency of this model",
                    "add it to dependencies or fix the name",
                )
            return self._dep_path(database, table, plain[2:], keys[2:])
        return "dep" + "".join(f"[{k}]" for k in keys)

    def _dep_path(self, database: str, table: str, fields: list[str | None], keys: list[str]) -> str:
        base = f"dep[{json.dumps(database)}][{json.dumps(table)}]"
        if fields == ["helpers", "from"]:
            return f"{base}.from"
        if fields == ["cluster"]:
            return EMPTY
        if len(fields) == 1 and fields[0] in ("database", "table"):
            return f"{base}.{fields[0]}"
        return base + "".join(f"[{k}]" for k in keys)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Unsupported(f"{text[pos : pos + 20]!r} in an action", "fix the template in CBT's file")
        if match.lastgroup:
            out.append((match.lastgroup, match.group()))
        pos = match.end()
    return out


def _var_name(text: str) -> str:
    name = text.lstrip("$") or "root"
    return f"v_{name}" if name in _RESERVED else name
