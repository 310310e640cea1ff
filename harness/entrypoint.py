"""The entry helper of every saltfleet command line, for the harness and the benchmarks.

:func:`run_cli` lives in the simulator (the lowest layer, see
:mod:`evil_minions.entrypoint`, exported by ``evil_minions``); nothing above
the stack imports the simulator, so they take it from here. :func:`run_harness_cli` is ``run_cli`` with the
harness's errors and wording.
"""

from __future__ import annotations

from collections.abc import Sequence

from evil_minions import EXIT_INTERRUPTED, EXIT_USAGE, CliMain, run_cli
from harness.errors import HarnessError

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "run_cli", "run_harness_cli"]


def run_harness_cli(main: CliMain, argv: Sequence[str] | None = None) -> int:
    """
    Run ``main(argv)``: a HarnessError is one ``error:`` line and exit 2, Ctrl-C 130.

    .. code-block:: python

        def main(argv: Sequence[str] | None = None) -> int:
            return run_harness_cli(_main, argv)
    """
    return run_cli(
        main,
        argv,
        errors={HarnessError: EXIT_USAGE},
        interrupted="interrupted; everything started was stopped",
    )
