"""Upstream's asyncio slow-callback check: known slow tests, and which failures were it.

Loaded by :mod:`series.timing_reruns` as ``-p saltfleet_timing``.

``--saltfleet-timing-record FILE``: at the end of the session FILE holds a
JSON object: each failed test's node id, mapped to ``true`` when its failure
is the asyncio slow-callback check of Salt's ``tests/pytests/unit/conftest.py``
and to ``false`` for any other failure. A collection error is recorded under
its collector's node id, as ``false``.

``--saltfleet-slow-callbacks FILE``: node ids, one a line (``#`` comments),
of upstream tests that exceed that check's 50 ms on the pristine release on
this kind of machine. They run with the check's own per-test override,
``no_blocking(threshold=...)``, at :data:`KNOWN_SLOW_THRESHOLD`; everything
else they assert still counts. The header names them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The threshold, in seconds, for the listed tests: a handler may still not
# hold the loop for this long.
KNOWN_SLOW_THRESHOLD = 0.5

_KNOWN_SLOW = pytest.StashKey[set[str]]()

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
    parser.addoption(
        "--saltfleet-slow-callbacks",
        metavar="FILE",
        default=None,
        help="node ids of tests known to exceed the slow-callback check on the "
        f"pristine release; they run with a {KNOWN_SLOW_THRESHOLD} s threshold",
    )


def pytest_configure(config: Any) -> None:
    """Read the known slow tests once; record only in the process that
    reports, not in an xdist worker."""
    slow = config.getoption("saltfleet_slow_callbacks")
    config.stash[_KNOWN_SLOW] = set(known_slow(Path(slow))) if slow else set()
    path = config.getoption("saltfleet_timing_record")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(path)), "saltfleet-timing")


def known_slow(path: Path) -> list[str]:
    """The node ids a ``--saltfleet-slow-callbacks`` file lists."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def pytest_report_header(config: Any) -> str | None:
    """Say which tests run with the raised threshold."""
    path = config.getoption("saltfleet_slow_callbacks")
    if not path:
        return None
    return (
        f"saltfleet: {len(config.stash[_KNOWN_SLOW])} upstream test(s) known to "
        "exceed the 50 ms slow-callback check on the pristine release run with "
        f"a {KNOWN_SLOW_THRESHOLD} s threshold ({path})"
    )


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Give the listed tests the check's own per-test threshold override."""
    listed = config.stash[_KNOWN_SLOW]
    for item in items:
        if item.nodeid in listed:
            item.add_marker(
                pytest.mark.no_blocking(
                    threshold=KNOWN_SLOW_THRESHOLD,
                    reason="over 50 ms on the pristine release here",
                )
            )


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
