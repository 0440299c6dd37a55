"""``python -m cbt.worker`` / ``cbt-worker``: run the worker service."""

import sys

from cbt.service.process import service_main


def main() -> int:
    return service_main("worker")


if __name__ == "__main__":
    sys.exit(main())
