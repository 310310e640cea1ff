"""``python -m evil_minions``: see :mod:`evil_minions.cli`."""

import sys

from evil_minions.cli import main

if __name__ == "__main__":
    sys.exit(main())
