"""Argument types of the command lines: a bad value is one usage error."""

from __future__ import annotations

import argparse

import pytest

from evil_minions.argtypes import positive_number, rate, seconds


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


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (rate, "-5", "must be 0 or more events per second: -5"),
        (rate, "inf", "must be 0 or more events per second"),
        (rate, "fast", "not a number of events per second: 'fast'"),
        (positive_number, "0", "must be more than 0: 0"),
        (positive_number, "x", "not a number: 'x'"),
    ],
)
def test_numbers_refused(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)
