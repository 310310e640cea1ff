"""``python -m series``: see :mod:`series.cli`."""

import sys

from series.cli import main

sys.exit(main())
