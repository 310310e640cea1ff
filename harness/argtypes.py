"""argparse value types for the command lines above the stack.

They are :mod:`evil_minions.argtypes` (the simulator's CLI uses them too, and
it is the lowest layer); this module hands them on, so that nothing above the
stack imports the simulator.
"""

from __future__ import annotations

from evil_minions import argtypes

__all__ = [
    "function_names",
    "non_negative",
    "port",
    "positive",
    "positive_number",
    "positive_seconds",
    "rate",
    "seconds",
]

function_names = argtypes.function_names
non_negative = argtypes.non_negative
port = argtypes.port
positive = argtypes.positive
positive_number = argtypes.positive_number
positive_seconds = argtypes.positive_seconds
rate = argtypes.rate
seconds = argtypes.seconds
