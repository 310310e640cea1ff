"""``python -m tour``: see :mod:`tour.cli`."""

import sys

from tour.cli import main

sys.exit(main())
