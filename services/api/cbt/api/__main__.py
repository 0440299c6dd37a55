"""``python -m cbt.api`` / ``cbt-api``: run the api service."""

import sys

from cbt.service.process import service_main


def main() -> int:
    return service_main("api")


if __name__ == "__main__":
    sys.exit(main())
