"""argparse value types of every saltfleet command line: a bad value is one
clear usage error, never a traceback.

They live with the simulator, the lowest layer, because its own CLI uses
them; the stack re-exports them as :mod:`harness.argtypes` for the packages
above it.
"""

from __future__ import annotations

import argparse
import math
import re

# module.function, as Salt names an execution module function
_FUNCTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


def _whole_number(value: str, at_least: int, what: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {value!r}") from None
    if number < at_least:
        problem = (
            "must not be negative" if at_least == 0 else f"must be at least {at_least}"
        )
        raise argparse.ArgumentTypeError(f"{problem}: {number}")
    if what == "port number" and number > 65535:
        raise argparse.ArgumentTypeError(f"port out of range 1-65535: {number}")
    return number


def _number(value: str, unit: str, *, more_than_zero: bool) -> float:
    """A finite number, 0 or more (or more than 0), of ``unit`` (may be empty)."""
    of_unit = f" of {unit}" if unit else ""
    unit = f" {unit}" if unit else ""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number{of_unit}: {value!r}") from None
    # the comparisons are False for nan, which is refused with the rest
    if more_than_zero and not 0 < number < math.inf:
        raise argparse.ArgumentTypeError(f"must be more than 0{unit}: {value}")
    if not 0 <= number < math.inf:
        raise argparse.ArgumentTypeError(f"must be 0 or more{unit}: {value}")
    return number


def port(value: str) -> int:
    """A TCP port, 1-65535 (argparse type)."""
    return _whole_number(value, 1, "port number")


def positive(value: str) -> int:
    """A whole number >= 1 (argparse type)."""
    return _whole_number(value, 1, "whole number")


def non_negative(value: str) -> int:
    """A whole number >= 0 (argparse type)."""
    return _whole_number(value, 0, "whole number")


def positive_number(value: str) -> float:
    """A number more than 0, such as a factor (fractions allowed)."""
    return _number(value, "", more_than_zero=True)


def seconds(value: str) -> float:
    """A duration in seconds, 0 or more (fractions allowed)."""
    return _number(value, "seconds", more_than_zero=False)


def positive_seconds(value: str) -> float:
    """A duration in seconds, more than 0 (fractions allowed)."""
    return _number(value, "seconds", more_than_zero=True)


def rate(value: str) -> float:
    """Events per second, 0 or more (fractions allowed)."""
    return _number(value, "events per second", more_than_zero=False)


def function_names(value: str) -> tuple[str, ...]:
    """Salt functions, comma-separated: ``test.ping,pillar.get`` (argparse type)."""
    names = tuple(name.strip() for name in value.split(","))
    bad = [name for name in names if not _FUNCTION.match(name)]
    if bad:
        raise argparse.ArgumentTypeError(
            f"not a Salt function name (module.function): {bad[0]!r}; "
            "give them comma-separated, e.g. test.ping,pillar.get"
        )
    return names
