"""``cbt import-cbt SRC DEST``: convert a project of the original CBT into one of ours (docs/coming-from-cbt.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("import-cbt", help="convert a project of the original CBT (Go, ClickHouse)",
                       description="Converts a project of the original CBT (Go, ClickHouse) into one of ours, and "
                       "reports what it could not convert.")
    p.add_argument("src", metavar="SRC", help="the CBT project's folder (holding config.yaml and models/)")
    p.add_argument("dest", metavar="DEST", help="where to write the new project (a new or empty folder)")
    p.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from cbt.import_cbt.files import import_project
    from cbt.import_cbt.report import format_report

    converted = import_project(Path(args.src), Path(args.dest))
    print(format_report(converted.notes))
    print(
        f"{converted.models_converted} of {converted.models_found} models converted "
        f"({converted.models_transpiled} with all their SQL in Spark SQL) into {args.dest}; check it with "
        f"`cbt validate --config {Path(args.dest) / 'config.yaml'}`",
        file=sys.stderr,
    )
    return 0
