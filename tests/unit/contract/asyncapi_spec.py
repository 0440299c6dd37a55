"""The official AsyncAPI 3.0.0 JSON Schema, from the npm package ``@asyncapi/specs`` (pinned, checked against its
published integrity), unpacked once into ``var/tools/`` and reused: it is not committed."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

SPECS_PACKAGE = "@asyncapi/specs"
SPECS_VERSION = "6.11.1"
SPECS_INTEGRITY = "sha512-A3WBLqAKGoJ2+6FWFtpjBlCQ1oFCcs4GxF7zsIGvNqp/klGUHjlA3aAcZ9XMMpLGE8zPeYDz2x9FmO6DSuKraQ=="
"""The registry's ``dist.integrity`` of that version (``npm view @asyncapi/specs@6.11.1 dist.integrity``)."""
SCHEMA_MEMBER = "package/schemas/3.0.0.json"


class SpecUnavailable(RuntimeError):
    """The schema could not be fetched; the message says why and what to do."""


def asyncapi_3_schema(project: Path) -> dict[str, Any]:
    """The AsyncAPI 3.0.0 JSON Schema (draft-07, every definition embedded under its ``$id``)."""
    cached = project / "var" / "tools" / f"asyncapi-specs-{SPECS_VERSION}" / "3.0.0.json"
    if not cached.is_file():
        _fetch(cached)
    schema: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
    return schema


def _fetch(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SpecUnavailable(f"npm not found: install Node.js/npm to fetch {SPECS_PACKAGE}@{SPECS_VERSION}")
    with tempfile.TemporaryDirectory() as tmp:
        spec = f"{SPECS_PACKAGE}@{SPECS_VERSION}"
        done = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", tmp], capture_output=True,
                              text=True, timeout=180, check=False)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise SpecUnavailable(f"npm pack {spec} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        data = tarballs[0].read_bytes()
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        if integrity != SPECS_INTEGRITY:
            raise SpecUnavailable(f"{spec}: integrity {integrity}, expected {SPECS_INTEGRITY}")
        with tarfile.open(tarballs[0]) as archive:
            member = archive.extractfile(SCHEMA_MEMBER)
            if member is None:
                raise SpecUnavailable(f"{spec} has no {SCHEMA_MEMBER}")
            content = member.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(content)
    partial.replace(target)
