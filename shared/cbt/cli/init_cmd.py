"""``cbt init DIR``: a working project — config.yaml for the local stack, an external model over a sample table, one
transformation, a README — and the sample table itself, made through Spark Connect (``cbt dev up`` first)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError

if TYPE_CHECKING:
    from cbt.cli.init_project import Project

SPARK_REMOTE = "sc://127.0.0.1:15002"
"""Where ``cbt dev up`` serves Spark Connect, and so what the project's config.yaml names."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("init", help="write a new project and make its sample table",
                       description="Writes a new project — config.yaml for the local stack, an external model over a "
                       "sample table, one transformation, a README — and makes the sample table through Spark "
                       "Connect. Every database, topic and Redis key carries the project's name.",
                       epilog="The sample table is made through Spark Connect at $CBT__SPARK__REMOTE, else "
                              f"{SPARK_REMOTE} (`cbt dev up`); the project's config.yaml names the same one.")
    p.add_argument("dir", metavar="DIR", help="the project's folder: new, or empty")
    p.add_argument("--name", help="the project's name, in its databases, topics and keys (default: DIR's name)")
    p.add_argument("--no-sample-data", dest="sample_data", action="store_false",
                   help="only write the files (the sample table can be made later with --sample-data-only)")
    p.add_argument("--sample-data-only", action="store_true",
                   help="make the sample table of the project in DIR again; write no file")
    p.set_defaults(func=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    import os

    from cbt.cli.init_project import NAME, Project, project_files, sample_data_statements

    folder = Path(args.dir)
    name = args.name or folder.resolve().name
    if not NAME.fullmatch(name):
        raise CbtError(f"{name!r} cannot name a project: lower-case letters, digits and _, starting with a letter "
                       f"(at most 40); give one with --name")
    project = Project(name)
    remote = os.environ.get("CBT__SPARK__REMOTE", SPARK_REMOTE)
    if args.sample_data_only:
        _make_sample_table(project, remote, sample_data_statements(project))
        return 0
    if folder.exists() and any(folder.iterdir()):
        raise CbtError(f"{folder} is not empty: cbt init writes a new project into a new or empty folder")
    warehouse = _make_sample_table(project, remote, sample_data_statements(project)) if args.sample_data else None
    for path, text in project_files(project, warehouse).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")
    print(f"\nNext: cd {folder}, then cbt validate, cbt plan and cbt run all (the tutorial: docs/tutorial.md)")
    return 0


def _make_sample_table(project: Project, remote: str, statements: list[str]) -> str | None:
    """Runs ``sample_data.sql``; answers the server's warehouse folder when it is a local one (else ``None``)."""
    from cbt.adapters.spark import connect

    try:
        spark = connect(remote)
    except Exception as e:
        raise CbtError(f"could not reach Spark Connect at {remote} ({type(e).__name__}): start the local stack with "
                       f"`cbt dev up`, or pass --no-sample-data") from e
    try:
        for statement in statements:
            spark.sql(statement).collect()
        rows = spark.sql(f"SELECT count(*) AS n FROM {project.source_database}.orders").collect()
        print(f"made {project.source_database}.orders: {rows[0]['n']} rows through {remote}")
        warehouse = str(spark.conf.get("spark.sql.warehouse.dir") or "")
    finally:
        spark.stop()
    if warehouse.startswith("file:"):
        warehouse = warehouse[len("file:"):]
    return warehouse if warehouse.startswith("/") else None
