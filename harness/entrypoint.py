"""The entry helper of every saltfleet command line, for the harness and the benchmarks.

:func:`run_cli` lives in the simulator (the lowest layer, see
:mod:`evil_minions.entrypoint`); the benchmarks must not import the simulator,
so they take it from here.
"""

from evil_minions.entrypoint import EXIT_INTERRUPTED, EXIT_USAGE, run_cli

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "run_cli"]
