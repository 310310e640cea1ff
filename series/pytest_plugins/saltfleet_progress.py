"""A line at least every 10 s while a test runs long, naming what is running.

pytest prints when a test ends (a dot, or with ``-v`` a line); under xdist,
and in a file of slow tests, nothing is printed for minutes while an
integration test works, and a user cannot tell a slow test from a hung one.
This plugin prints, after ``--saltfleet-heartbeat`` seconds (default 9.5)
without a test ending, one line naming the tests still running
and how long each has run, and again every as many seconds while that lasts.

Loaded as ``-p series.pytest_plugins.saltfleet_progress`` (``nox -s tests``
for this project's tests) or ``-p saltfleet_progress`` with this directory on
``PYTHONPATH`` (:mod:`series.timing_reruns`, for upstream's). The line is
written to the terminal pytest started on, past pytest's output capture; in
an xdist worker the plugin does nothing (its stdout is xdist's channel, and
the controller already hears of every test a worker starts and ends).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TextIO

import pytest

from harness.progress import INTERVAL, Ticker, span

DEFAULT_INTERVAL = INTERVAL


class Heartbeat(Ticker):
    """A :class:`~harness.progress.Ticker` whose steps are the running tests."""

    def __init__(
        self,
        stream: TextIO,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(stream, interval, clock=clock)
        self.lead = "\n"  # pytest's dots leave the line open
        self.running: dict[str, float] = {}

    def started(self, nodeid: str) -> None:
        """``nodeid`` began. Not an end of the silence: without ``-v`` pytest
        prints nothing when a test starts, only its dot when it ends."""
        with self.lock:
            self.running[nodeid] = self.clock()

    def finished(self, nodeid: str) -> None:
        """``nodeid`` ended (a second call for it changes only the time)."""
        with self.lock:
            self.running.pop(nodeid, None)
            self.last = self.clock()

    def describe(self, now: float) -> str | None:
        """The running tests, longest first, each with how long it has run."""
        if not self.running:
            return None
        tests = ", ".join(
            f"{nodeid} ({span(now - since)})"
            for nodeid, since in sorted(self.running.items(), key=lambda i: i[1])
        )
        return f"still running: {tests}"


class _Plugin:
    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat

    def pytest_sessionstart(self) -> None:
        self.heartbeat.start()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.heartbeat.started(nodeid)

    def pytest_runtest_logreport(self, report: Any) -> None:
        # before pytest_runtest_logfinish, right when its result is printed
        if report.when == "teardown":
            self.heartbeat.finished(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.heartbeat.finished(nodeid)

    def pytest_sessionfinish(self) -> None:
        self.heartbeat.stop()
        self.heartbeat.stream.close()


def pytest_addoption(parser: Any) -> None:
    """Register ``--saltfleet-heartbeat``."""
    parser.addoption(
        "--saltfleet-heartbeat",
        type=float,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help="print the running tests after SECONDS without a test starting or ending",
    )


def pytest_configure(config: Any) -> None:
    """Start listening, except in an xdist worker."""
    if hasattr(config, "workerinput"):
        return
    interval = config.getoption("saltfleet_heartbeat")
    if interval <= 0:
        raise pytest.UsageError("--saltfleet-heartbeat must be more than 0 seconds")
    # fd 1 as it is now, before pytest captures a test's output into a file
    out = open(os.dup(1), "w", encoding="utf-8")  # noqa: SIM115 (closed at the end)
    config.pluginmanager.register(
        _Plugin(Heartbeat(out, interval)), "saltfleet-heartbeat"
    )
