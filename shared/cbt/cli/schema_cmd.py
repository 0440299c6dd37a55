"""``cbt schema``: writes the generated reference documents into the docs folder — the JSON Schema of every message
body on the topics (``schemas/<kind>.schema.json``, which ``asyncapi.yaml`` refers to) and, where the api is
installed, the REST API's OpenAPI document (``openapi.json``). Each distribution adds its documents through the
``cbt.documents`` entry points (a function returning ``{path under the docs folder: text}``); ``--check`` writes
nothing and fails when a committed document is not what the code generates."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DOCS = Path("docs")
DOCUMENT_GROUP = "cbt.documents"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("schema", help="write the message schemas and the OpenAPI document into docs/",
                       description="Writes the generated documents into the docs folder: the JSON Schema of every "
                       "message body on the topics (schemas/, which asyncapi.yaml refers to) and, with the api "
                       "installed, the REST API's openapi.json. --check writes nothing and exits 1 when one is out "
                       "of date.")
    p.add_argument("--docs", metavar="DIR", default=str(DOCS), help=f"the docs folder (default: {DOCS})")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a document is out of date")
    p.set_defaults(func=cmd_schema)


def documents() -> dict[str, str]:
    """Every generated document, by its path under the docs folder."""
    from importlib.metadata import entry_points

    from cbt.contract.schemas import message_schemas, schema_text

    found = {f"schemas/{name}": schema_text(schema) for name, schema in message_schemas().items()}
    for entry in sorted(entry_points(group=DOCUMENT_GROUP), key=lambda e: e.name):
        found.update(entry.load()())
    return found


def cmd_schema(args: argparse.Namespace) -> int:
    docs = Path(args.docs)
    stale = []
    for path, text in documents().items():
        target = docs / path
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(str(target))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)
    if stale:
        print("out of date (run cbt schema): " + ", ".join(stale))
        return 1
    return 0
