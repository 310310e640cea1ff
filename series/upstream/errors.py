"""The upstream workflow's error: one ``error:`` line and exit 2, never a traceback."""

from __future__ import annotations

from harness.errors import HarnessError


class UpstreamError(HarnessError):
    """The PR map, a patch, a base or an option is unusable; the message says which."""
