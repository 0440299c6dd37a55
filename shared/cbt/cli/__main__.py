"""``python -m cbt.cli``."""

import sys

from cbt.cli import main

sys.exit(main())
