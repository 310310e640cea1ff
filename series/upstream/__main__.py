"""``python -m harness.upstream``: see :mod:`harness.upstream.cli`."""

import sys

from harness.upstream.cli import main

sys.exit(main())
