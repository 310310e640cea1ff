"""``python -m series.upstream``: see :mod:`series.upstream.cli`."""

import sys

from series.upstream.cli import main

sys.exit(main())
