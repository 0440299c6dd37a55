"""``python -m cbt.worker`` / ``cbt-worker``: run the worker service."""

import sys

from cbt.cli.run_cmd import service_main


def main() -> int:
    return service_main("worker")


if __name__ == "__main__":
    sys.exit(main())
