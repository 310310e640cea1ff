"""Shared fixtures: a way to run the harness CLI as a user would, and to check
that nothing the harness started is left running."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.polling import wait_until
from harness.postgres import open_temp_directory

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: harness.cli.ROOT_ENV, which the unit tests check against this
STACK_ROOT_ENV = "SALTFLEET_STACK_ROOT"


def run_cli(
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    package: str = "harness",
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m PACKAGE ARGS`` (the stack's CLI by default) from the
    project root."""
    return subprocess.run(
        [sys.executable, "-m", package, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def usage_error(
    main: Callable[[list[str]], int],
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
) -> str:
    """What ``main(argv)`` printed on stderr, after asserting that it refused
    the arguments as a usage error: exit 2, no traceback."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def query(database: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The rows of one statement (none for a statement without any), run and
    committed on a new connection to ``database`` (anything with ``connect()``,
    such as ``harness.postgres.ConnectionInfo``)."""
    conn = database.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


#: tests poll the stack the way the tour does
wait_for = wait_until


def alive(pids: list[int]) -> list[int]:
    """The pids of the list that still run (zombies count as gone)."""
    still = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                still.append(pid)
        except psutil.NoSuchProcess:
            pass
    return still


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def open_tmp():
    """A temporary directory that an unprivileged PostgreSQL can enter.

    pytest's ``tmp_path`` lives under a 0700 directory; as root the harness
    runs PostgreSQL as ``nobody``, which could not reach it.
    """
    with open_temp_directory("saltfleet-test-") as path:
        yield path


@pytest.fixture(scope="module")
def open_tmp_module():
    with open_temp_directory("saltfleet-test-") as path:
        yield path


@pytest.fixture(autouse=True, scope="session")
def _no_salt_temp_log_handler():
    """Salt buffers the log records of a process that has not set up its
    logging in a temporary stderr handler and writes them out at interpreter
    exit, when pytest has already closed the worker's stderr: a ``--- Logging
    error ---`` block in the test log for every record (an ext_pillar
    timeout, an unclosed client). Hand them to pytest's handlers instead, so
    they show up in a failing test's captured log."""
    import salt._logging

    salt._logging.shutdown_temp_handler()
    yield


def pytest_collection_modifyitems(config, items):
    """The tests that start real processes first, each file's tests in their
    order. ``nox -s tests`` hands files to its two xdist workers in this
    order (``--no-loadscope-reorder``): a file of minutes handed out last
    runs alone on one core while the other has nothing left, as the PR
    check and the stock-Salt installs did for about 3 minutes of a CI run.
    The quick unit tests then fill whichever worker is free."""
    items.sort(key=lambda item: not _starts_processes(item))


def _starts_processes(item: pytest.Item) -> bool:
    parts = Path(item.nodeid.split("::")[0]).parts
    return item.get_closest_marker("integration") is not None or any(
        part in ("integration", "functional") for part in parts
    )


def pytest_configure(config):
    """Let SIGTERM (a CI time limit, ``timeout``) unwind like Ctrl-C, so that
    fixtures stop the stacks they started instead of leaving them running.

    A harness command a test runs without ``--root`` finds the tests' own
    stack root, never the user's ``.saltfleet/stack``.
    """
    import signal

    os.environ[STACK_ROOT_ENV] = str(PROJECT_ROOT / ".saltfleet" / "tests-stack")

    def _interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    # A run started in the background of a non-interactive shell (nohup ...
    # &) inherits SIGINT ignored; the Ctrl-C tests need Python's own handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)


class FakeClock:
    """A monotonic clock that moves only when a test sets ``now``."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
