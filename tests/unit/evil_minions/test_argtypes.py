"""Argument types of the command lines: a bad value is one usage error."""

from __future__ import annotations

import argparse

import pytest

from harness.argtypes import seconds


@pytest.mark.parametrize(("text", "value"), [("0", 0.0), ("2.5", 2.5), ("30", 30.0)])
def test_seconds(text, value):
    assert seconds(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [("-1", "must be 0 or more"), ("nan", "must be 0 or more"), ("x", "not a number")],
)
def test_seconds_refused(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        seconds(text)
