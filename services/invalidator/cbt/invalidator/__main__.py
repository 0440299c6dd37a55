"""``python -m cbt.invalidator`` / ``cbt-invalidator``: run the invalidator service."""

import sys

from cbt.service.process import service_main


def main() -> int:
    return service_main("invalidator")


if __name__ == "__main__":
    sys.exit(main())
