"""``python -m cbt.coordinator`` / ``cbt-coordinator``: run the coordinator service."""

import sys

from cbt.service.process import service_main


def main() -> int:
    return service_main("coordinator")


if __name__ == "__main__":
    sys.exit(main())
