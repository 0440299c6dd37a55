"""``cbt api openapi``: print the OpenAPI document of ``/api/v1`` (``docs/openapi.json`` is this output).

The document depends on the code only: it is generated from an app built over stand-in ports, without config,
models, Redis, Kafka or Spark. Building the ``cbt`` parser imports this module: FastAPI and the app's modules are
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("api", help="print the REST API's OpenAPI document (> docs/openapi.json)")
    p.add_argument("what", choices=["openapi"], help="openapi: the OpenAPI document of /api/v1, as JSON")
    p.set_defaults(func=cmd_api)


def openapi_text() -> str:
    """The committed form: two-space indent, sorted keys, a final newline."""
    from cbt.api.offline import offline_app

    return json.dumps(offline_app().openapi(), indent=2, sort_keys=True) + "\n"  # as served (with /tables)


def cmd_api(args: argparse.Namespace) -> int:
    del args
    print(openapi_text(), end="")
    return 0
