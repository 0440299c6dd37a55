"""The environment names cbt sets for exec models (docs/design/models.md#exec-models): neither a model's ``env`` nor the
config's may set them."""

from __future__ import annotations

import re

RESERVED_ENV = {"SPARK_REMOTE", "SPARK_MASTER", "SPARK_CONF_JSON", "BOUNDS_START", "BOUNDS_END"}
RESERVED_ENV_PREFIXES = ("TASK_", "SELF_", "CACHE_")
_DEP_ENV = re.compile(r"DEP_.+_(DATABASE|TABLE)")


def reserved_env_problem(name: str) -> str | None:
    """Why ``name`` may not be set by users (cbt sets it for exec models), or None."""
    if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIXES) or _DEP_ENV.fullmatch(name):
        return f"{name} is set by cbt for exec models; choose another name"
    return None
