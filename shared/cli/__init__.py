"""The ``cbt`` command line: one entry point, one module per group of sub-commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from cbt.errors import CbtError

# Each module exposes ``register(subparsers)``; sub-parsers set ``func(args) -> int``.
COMMAND_MODULES = ("cbt.cli.dev_cmd", "cbt.cli.model_cmds", "cbt.cli.plan_cmds", "cbt.cli.run_cmd", "cbt.cli.admin_cmd",
                   "cbt.cli.rerun_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cbt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except CbtError as e:
        print(f"cbt {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
