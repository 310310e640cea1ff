"""run_cli: the one way every saltfleet CLI turns errors, Ctrl-C and SIGTERM into exit codes."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest

from evil_minions.config import ConfigError
from evil_minions.entrypoint import EXIT_INTERRUPTED, STOPPING, run_cli
from evil_minions.errors import EvilMinionsError
from evil_minions.keys import KeyStoreError

ERRORS: dict[type[Exception], int] = {ConfigError: 2, EvilMinionsError: 1}


def raising(exc: BaseException):
    def main(argv: Sequence[str] | None) -> int:
        raise exc

    return main


def test_returns_what_main_returns_and_passes_argv() -> None:
    seen = []

    def main(argv: Sequence[str] | None) -> int:
        seen.append(argv)
        return 3

    assert run_cli(main, ["a"], errors=ERRORS) == 3
    assert seen == [["a"]]


@pytest.mark.parametrize(
    ("exc", "code"),
    [(ConfigError("bad --count"), 2), (KeyStoreError("bad --count"), 1)],
)
def test_the_first_matching_class_gives_the_exit_code(
    exc: Exception, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(raising(exc), [], errors=ERRORS, prog="evil_minions") == code
    assert capsys.readouterr().err == "evil_minions: error: bad --count\n"


def test_without_prog_the_line_starts_with_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_cli(raising(ConfigError("no")), None, errors={ConfigError: 2}) == 2
    assert capsys.readouterr().err == "error: no\n"


def test_other_errors_and_argparse_exits_are_not_swallowed() -> None:
    with pytest.raises(ZeroDivisionError):
        run_cli(raising(ZeroDivisionError()), [], errors=ERRORS)
    with pytest.raises(SystemExit):
        run_cli(raising(SystemExit(2)), [], errors=ERRORS)


def test_sigterm_unwinds_like_ctrl_c_and_restores_the_handler(
    capfd: pytest.CaptureFixture[str],
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    unwound = []

    def main(argv: Sequence[str] | None) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # not reached: the handler raises first
            return 0
        finally:
            unwound.append(True)

    code = run_cli(main, [], errors=ERRORS, interrupted="interrupted; all stopped")
    assert code == EXIT_INTERRUPTED
    assert unwound == [True]
    assert capfd.readouterr().err == f"{STOPPING}\ninterrupted; all stopped\n"
    assert signal.getsignal(signal.SIGTERM) == before


# The child: a CLI whose clean-up waits for a line on stdin, so the test can
# see what it printed while it was still stopping.
_SLOW_STOP = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal
from evil_minions.entrypoint import run_cli

def main(argv):
    try:
        print("ready", flush=True)
        time.sleep(60)
        return 0
    finally:
        sys.stdin.readline()

sys.exit(run_cli(main, [], errors={}, prog="slow", interrupted="interrupted; stopped"))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_stopping_line_comes_before_the_clean_up_ends(signum: int) -> None:
    from tests.conftest import PROJECT_ROOT

    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_STOP],
        cwd=PROJECT_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdin is not None
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signum)
        # said while main's finally still waits on stdin (a missing line
        # fails here instead of hanging on the read)
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "no line on stderr within 30 s of the signal"
        assert proc.stderr.readline() == f"slow: {STOPPING}\n"
        assert proc.poll() is None
        proc.stdin.write("done\n")
        proc.stdin.close()
        assert proc.wait(timeout=30) == EXIT_INTERRUPTED
        assert proc.stderr.read() == "slow: interrupted; stopped\n"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("before", "taken"),
    [(signal.default_int_handler, True), (signal.SIG_IGN, False)],
)
def test_ctrl_c_is_taken_only_from_python_s_own_handler_and_given_back(
    before: Any, taken: bool
) -> None:
    """Ctrl-C is handled while the CLI runs and its handler given back; a
    CLI started with SIGINT ignored (``nohup``, a background job of a
    script) keeps ignoring it."""
    previous = signal.signal(signal.SIGINT, before)
    try:
        during = []

        def main(argv: Sequence[str] | None) -> int:
            during.append(signal.getsignal(signal.SIGINT))
            return 0

        assert run_cli(main, [], errors=ERRORS) == 0
        assert (during[0] is not before) == taken
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, previous)
