"""The OpenAPI document of ``/api/v1`` as committed in ``docs/openapi.json``; ``cbt schema`` writes it (this
distribution adds it to the documents that command writes, through the ``cbt.documents`` entry points).

The document depends on the code only: it is generated from an app built over stand-in ports, without config,
models, Redis, Kafka or Spark.
"""

from __future__ import annotations

import json


def openapi_text() -> str:
    """The committed form: two-space indent, sorted keys, a final newline."""
    from cbt.api.offline import offline_app

    return json.dumps(offline_app().openapi(), indent=2, sort_keys=True) + "\n"  # as served (with /tables)


def documents() -> dict[str, str]:
    """``cbt schema``'s share from this distribution: path under the docs folder → text."""
    return {"openapi.json": openapi_text()}
