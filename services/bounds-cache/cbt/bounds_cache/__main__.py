"""``python -m cbt.bounds_cache`` / ``cbt-bounds-cache``: run the bounds-cache service."""

import sys

from cbt.service.process import service_main


def main() -> int:
    return service_main("bounds-cache")


if __name__ == "__main__":
    sys.exit(main())
