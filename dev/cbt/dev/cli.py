"""``cbt dev up | down | status``: local Kafka, Redis and Spark Connect (``--spark cluster``: on a standalone Spark
master and worker) for development, tests and the demo."""

from __future__ import annotations

import argparse
from typing import Any

from cbt.dev.layout import SPARK_MODES, Layout


def register(sub: argparse._SubParsersAction[Any]) -> None:
    dev = sub.add_parser("dev", help="local infrastructure: Kafka, Redis, Spark Connect on 127.0.0.1")
    actions = dev.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("up", help="start what is not running and wait until it answers")
    start.add_argument("--spark", choices=SPARK_MODES, default=None,
                       help="local: Spark Connect runs its work in its own JVM (local[*], the default); cluster: on a "
                            "Spark standalone master and worker started alongside (default: CBT_DEV_SPARK_MODE, or "
                            "what is running)")
    start.set_defaults(func=_up)
    actions.add_parser("down", help="stop the processes cbt dev up started").set_defaults(func=_down)
    actions.add_parser("status", help="what is up, where, and its memory").set_defaults(func=_status)


def _up(args: argparse.Namespace) -> int:
    from cbt.dev import stack

    for line in stack.up(Layout.from_env(spark_mode=args.spark)):
        print(line.line())
    return 0


def _down(args: argparse.Namespace) -> int:
    from cbt.dev import stack

    stopped = stack.down()
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _status(args: argparse.Namespace) -> int:
    from cbt.dev import stack

    lines = stack.status()
    for line in lines:
        print(line.line())
    return 0 if all(s.is_up for s in lines) else 3
