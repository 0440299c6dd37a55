"""The ``cbt`` command line: one entry point, one module per group of sub-commands.

Every installed distribution adds its groups through the ``cbt.commands`` entry points (name = module), so ``cbt dev``
exists only where the local-stack tooling (``cbt-dev``) is installed.

Every command builds the whole parser, so a module that registers parsers imports only what parsing needs (the
standard library, ``cbt.base.errors``, pure model modules); its commands import config, models, pydantic, Redis, Kafka,
Spark or FastAPI in the function that runs. tests/unit/test_cli_imports.py holds ``cbt --help`` to that.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from cbt.base.errors import CbtError
from cbt.cli import version_cmd

COMMAND_GROUP = "cbt.commands"
"""Entry-point group: each entry names a module exposing ``register(subparsers)``; sub-parsers set ``func(args)``."""


def command_modules() -> list[str]:
    """The modules of every installed distribution's command groups, in the order of their entry names."""
    return [entry.value for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name)]


DESCRIPTION = ("Keeps derived tables fresh: models (Spark SQL or scripts) run over intervals of positions, in "
               "dependency order, through Kafka, Spark Connect and Delta Lake.")
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("write models", ("init", "validate", "dag", "render", "ddl", "plan", "import-cbt")),
    ("operate a pipeline", ("status", "rows", "rerun", "rollback", "checks", "override", "bounds", "admin")),
    ("run the services", ("run",)),
    ("the local stack", ("dev",)),
    ("documents and version", ("schema", "version")),
)
"""How ``cbt --help`` lists the commands; one no group names is listed under "other"."""


class _Parser(argparse.ArgumentParser):
    """``cbt --help`` lists the commands by what they are for, one line each."""

    def format_help(self) -> str:
        import shutil
        import textwrap

        width = max(shutil.get_terminal_size().columns - 2, 40)
        helps = {c.dest: c.help or "" for a in self._actions if isinstance(a, argparse._SubParsersAction)
                 for c in a._choices_actions}
        listed = {name for _, names in GROUPS for name in names}
        parts = [self.format_usage().rstrip(), textwrap.fill(self.description or "", width)]
        for title, names in (*GROUPS, ("other", tuple(sorted(set(helps) - listed)))):
            lines = [textwrap.fill(helps[n], width, initial_indent=f"  {n:<12} ", subsequent_indent=" " * 15)
                     for n in names if n in helps]
            if lines:
                parts.append("\n".join([f"{title}:", *lines]))
        options = self._get_formatter()
        options.start_section("options")
        options.add_arguments(self._optionals._group_actions)
        options.end_section()
        parts += [options.format_help().strip(), textwrap.fill(self.epilog or "", width)]
        return "\n\n".join(parts) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cbt", description=DESCRIPTION,
        epilog="cbt COMMAND --help says more about each. cbt --config FILE, with no command, runs every installed "
               "service (as cbt run all), like the original CBT's binary.")
    parser.add_argument("--config", dest="top_config", metavar="FILE",
                        help="config file for the command (default: $CBT_CONFIG or ./config.yaml); alone, it runs "
                             "every service")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=argparse.ArgumentParser)
    version_cmd.register(sub)
    for name in command_modules():
        importlib.import_module(name).register(sub)
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command's arguments; ``cbt --config FILE`` alone is ``cbt run all --config FILE``, and a ``--config``
    before the command is the command's own when it has none after."""
    parser = build_parser()
    args = parser.parse_args(argv)
    top_config = args.top_config
    if args.command is None:
        if top_config is None:
            parser.error("a command is required (or --config FILE alone, to run every service)")
        args = parser.parse_args(["run", "all", "--config", top_config])
    elif top_config is not None and getattr(args, "config", None) is None:
        args.config = top_config
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        code: int = args.func(args)
    except CbtError as e:
        print(f"cbt {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


def run() -> None:
    """The ``cbt`` executable: ``main``, then out of the process. Where a command read Delta tables with delta-rs,
    the process exits without the interpreter's teardown (output flushed first): delta-rs's native runtime can abort
    it there (``terminate called without an active exception``, exit code 134) after the command has done its work."""
    code = main()
    if "deltalake" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
