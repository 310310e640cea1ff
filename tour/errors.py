"""The tour's one error: a scenario saw something other than what it shows."""

from __future__ import annotations


class ScenarioFailed(Exception):
    """A scenario saw something other than what it shows; the message says what."""
