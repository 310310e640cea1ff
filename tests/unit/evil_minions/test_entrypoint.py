"""run_cli: the one way every saltfleet CLI turns errors and SIGTERM into exit codes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

import pytest

from evil_minions.config import ConfigError
from evil_minions.entrypoint import EXIT_INTERRUPTED, run_cli
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
    capsys: pytest.CaptureFixture[str],
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
    assert capsys.readouterr().err == "interrupted; all stopped\n"
    assert signal.getsignal(signal.SIGTERM) == before
