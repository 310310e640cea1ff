"""
How every saltfleet command line ends: exit codes, error lines and SIGTERM.

``python -m evil_minions``, ``python -m harness`` and ``python -m benchmarks``
all run their work through :func:`run_cli`, so they end the same way:

- an error of the package's own tree: one ``error: <message>`` line on stderr
  (``<prog>: error: ...`` when ``prog`` is given) and the exit code the
  ``errors`` mapping gives it, normally :data:`EXIT_USAGE` (2);
- Ctrl-C or SIGTERM: a ``stopping ...`` line on stderr at once (stopping a
  stack of 1000 minions takes a while, and a user who sees nothing presses
  Ctrl-C again), then a ``KeyboardInterrupt`` unwinds the work (every
  ``with`` and ``finally`` stops what it started), one more line on stderr,
  exit :data:`EXIT_INTERRUPTED` (130). Work that sets its own handlers (the
  simulator's supervisor) or holds signals for a moment
  (``harness.processes.signals_deferred``) answers in its own way or time;
- argparse's own errors are untouched (``SystemExit`` with code 2);
- anything else is a bug and keeps its traceback.

It lives in the simulator because that is the lowest layer: the harness
re-exports it (``harness.entrypoint``) for itself and the benchmarks.

.. code-block:: python

    def main(argv: Sequence[str] | None = None) -> int:
        return run_cli(_main, argv, errors={HarnessError: EXIT_USAGE})
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any, Final

EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

#: A command line's own work: parses ``argv`` (``None``: ``sys.argv[1:]``)
#: and returns the exit code.
CliMain = Callable[[Sequence[str] | None], int]


#: Said at once on Ctrl-C or SIGTERM, before the work unwinds.
STOPPING: Final = "stopping everything started; this can take a minute"

Handler = Callable[[int, FrameType | None], None]


def _interrupt(line: str) -> Handler:
    """A handler that says ``line`` on the first signal, then unwinds like Ctrl-C."""
    said = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal said
        if not said:
            said = True
            # os.write, not print: a handler that writes to sys.stderr while
            # the main thread is writing to it raises "reentrant call"; a
            # closed stderr (``| tee`` killed by the same Ctrl-C) must not
            # turn the interrupt into a BrokenPipeError
            with contextlib.suppress(OSError):
                os.write(2, f"{line}\n".encode())
        raise KeyboardInterrupt

    return handler


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
    SIGTERM once the work has unwound; :data:`STOPPING` is printed as the
    signal arrives. Ctrl-C is handled so only where Python's own handler is
    in place (a SIGINT ignored by the parent stays ignored). The previous
    handlers are restored on return.

    .. code-block:: python

        code = run_cli(_main, ["status"], errors={ConfigError: 2, EvilMinionsError: 1},
                       prog="evil_minions")
    """
    prefix = f"{prog}: " if prog else ""
    # only the main thread may set signal handlers (tests call main() from others)
    owns_signals = threading.current_thread() is threading.main_thread()
    previous: dict[int, Any] = {}
    if owns_signals:
        handler = _interrupt(f"{prefix}{STOPPING}")
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, handler)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, handler)
    try:
        return main(argv)
    except KeyboardInterrupt:
        print(f"{prefix}{interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except tuple(errors) as exc:
        print(f"{prefix}error: {exc}", file=sys.stderr)
        return next(code for cls, code in errors.items() if isinstance(exc, cls))
    finally:
        for signum, before in previous.items():
            # None: the handler was not set from Python; the default is closest
            signal.signal(signum, signal.SIG_DFL if before is None else before)
