"""``cbt version``: what is installed — the version, the commit it was built from when known, the Python running it
(the original CBT printed its version, commit and OS/arch)."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

DISTRIBUTION = "cbt-core"
COMMIT_ENV_VAR = "CBT_COMMIT"
"""Set by an image build to the commit it was built from; otherwise a source checkout's ``git`` is asked."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("version", help="print the version, the commit (when known) and the Python",
                       description="Prints the installed version, the commit it was built from ($CBT_COMMIT, else "
                       "the source checkout's) and the Python.")
    p.set_defaults(func=cmd_version)


def cmd_version(args: argparse.Namespace) -> int:
    print(f"Version: {installed_version()}")
    print(f"Commit: {commit() or 'unknown'}")
    print(
        f"Python: {platform.python_version()} ({platform.python_implementation()}, "
        f"{platform.system().lower()}/{platform.machine()})"
    )
    return 0


def installed_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed as a distribution)"


def commit() -> str | None:
    """``$CBT_COMMIT``, else the commit of the git checkout this code runs from (an editable install), else None."""
    if os.environ.get(COMMIT_ENV_VAR):
        return os.environ[COMMIT_ENV_VAR]
    try:
        run = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout.strip() or None if run.returncode == 0 else None
