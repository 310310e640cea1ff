"""Record which tests failed, and whether only upstream's slow-callback check failed them.

Loaded by :mod:`harness.timing_reruns` as ``-p saltfleet_timing
--saltfleet-timing-record FILE``. At the end of the session FILE holds a JSON
object: each failed test's node id, mapped to ``true`` when its failure is
the asyncio slow-callback check of Salt's ``tests/pytests/unit/conftest.py``
and to ``false`` for any other failure. A collection error is recorded under
its collector's node id, as ``false``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The start of the message that Salt's unit conftest fails a test with when
# an asyncio callback held the loop longer than its threshold (50 ms).
SLOW_CALLBACK_FAILURE = "asyncio slow-callback threshold of"


def pytest_addoption(parser: Any) -> None:
    """Register ``--saltfleet-timing-record``."""
    parser.addoption(
        "--saltfleet-timing-record",
        metavar="FILE",
        default=None,
        help="write the failed tests, and whether only the slow-callback "
        "check failed them, to FILE as JSON",
    )


def pytest_configure(config: Any) -> None:
    """Record only in the process that reports: not in an xdist worker."""
    path = config.getoption("saltfleet_timing_record")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(path)), "saltfleet-timing")


class _Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed: dict[str, bool] = {}

    def _add(self, nodeid: str, timing_only: bool) -> None:
        # A test fails its call and, separately, its teardown: it was a
        # timing failure only if every failure of it was one.
        self.failed[nodeid] = self.failed.get(nodeid, True) and timing_only

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self._add(report.nodeid, SLOW_CALLBACK_FAILURE in report.longreprtext)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self._add(report.nodeid or "<collection>", False)

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.failed, indent=1, sort_keys=True))
