"""The tour's CLI refuses bad arguments with a message, never a traceback."""

from __future__ import annotations

import pytest

from tests.conftest import usage_error
from tour.cli import main


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--worker-threads", "0"], "must be at least 1"),
        (["--minions", "0"], "must be at least 1"),
        (["--storm-jobs", "x"], "not a whole number"),
        (["up"], "unrecognized arguments"),
    ],
)
def test_bad_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in usage_error(main, argv, capsys)
