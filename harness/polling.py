"""Waiting for something the stack does in its own time (a minion coming
back, a queue draining, an engine's write) by polling, not by sleeping a
fixed guess."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float = 30, interval: float = 0.2
) -> T:
    """``predicate()``'s first true value within ``timeout`` seconds, else its
    last (false) value, for the caller to report or assert on."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
