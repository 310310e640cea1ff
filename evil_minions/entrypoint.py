"""
How every saltfleet command line ends: exit codes, error lines and SIGTERM.

``python -m evil_minions``, ``python -m harness`` and ``python -m benchmarks``
all run their work through :func:`run_cli`, so they end the same way:

- an error of the package's own tree: one ``error: <message>`` line on stderr
  (``<prog>: error: ...`` when ``prog`` is given) and the exit code the
  ``errors`` mapping gives it, normally :data:`EXIT_USAGE` (2);
- Ctrl-C or SIGTERM: a ``KeyboardInterrupt`` unwinds the work (every
  ``with`` and ``finally`` stops what it started), one line on stderr, exit
  :data:`EXIT_INTERRUPTED` (130);
- argparse's own errors are untouched (``SystemExit`` with code 2);
- anything else is a bug and keeps its traceback.

It lives in the simulator because that is the lowest layer: the harness
re-exports it (``harness.entrypoint``) for itself and the benchmarks.

.. code-block:: python

    def main(argv: Sequence[str] | None = None) -> int:
        return run_cli(_main, argv, errors={HarnessError: EXIT_USAGE})
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Final

EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

#: A command line's own work: parses ``argv`` (``None``: ``sys.argv[1:]``)
#: and returns the exit code.
CliMain = Callable[[Sequence[str] | None], int]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM unwinds like Ctrl-C, so whatever was started is stopped
    raise KeyboardInterrupt


def run_cli(
    main: CliMain,
    argv: Sequence[str] | None = None,
    *,
    errors: Mapping[type[Exception], int],
    prog: str | None = None,
    interrupted: str = "interrupted",
) -> int:
    """
    Run ``main(argv)``; turn the errors in ``errors`` and interrupts into exit codes.

    ``errors`` maps exception classes to exit codes; the first class (in the
    mapping's order) the error is an instance of wins, so list subclasses
    before their bases. ``interrupted`` is the line printed after Ctrl-C or
    SIGTERM. The previous SIGTERM handler is restored on return.

    .. code-block:: python

        code = run_cli(_main, ["status"], errors={ConfigError: 2, EvilMinionsError: 1},
                       prog="evil_minions")
    """
    prefix = f"{prog}: " if prog else ""
    # only the main thread may set signal handlers (tests call main() from others)
    owns_signals = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if owns_signals else None
    try:
        return main(argv)
    except KeyboardInterrupt:
        print(f"{prefix}{interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except tuple(errors) as exc:
        print(f"{prefix}error: {exc}", file=sys.stderr)
        return next(code for cls, code in errors.items() if isinstance(exc, cls))
    finally:
        if owns_signals:
            # None: the handler was not set from Python; the default is closest
            signal.signal(
                signal.SIGTERM, signal.SIG_DFL if previous is None else previous
            )
