"""A line before 10 s pass in silence, saying what is still at work and for how long.

Long steps print as they go, but some go quiet for half a minute: pip
building a wheel, a scenario that waits for a queue to fill, stopping a
stack. :class:`Ticker` watches a text stream; when nothing was written to it
for ``interval`` seconds (9.5) it writes ``... <what>: still working (<time>)``
itself, naming the step :meth:`Ticker.doing` last named.

As a command (standard library only: it runs before the project is
installed), it runs a command with its output passed through, ticking::

    python -m harness.progress "installing the project" -- python -m pip install ...

It exits with the command's code.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

# under 10 s, so that no silence reaches 10 s with the check's own 0.25 s
INTERVAL = 9.5


def span(seconds: float) -> str:
    """``42 s`` or ``3 min 05 s``."""
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


class _Watched:
    """``stream``, noting when it was last written to."""

    def __init__(self, stream: TextIO, wrote: Callable[[], None]) -> None:
        self._stream = stream
        self._wrote = wrote

    def write(self, text: str) -> int:
        if text:
            self._wrote()
        return self._stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class Ticker:
    """Say what is under way whenever ``stream`` has been silent for ``interval`` s."""

    def __init__(
        self,
        stream: TextIO,
        interval: float = INTERVAL,
        *,
        prefix: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.prefix = prefix
        self.clock = clock
        self.lock = threading.Lock()
        self.what = ""
        # written before each line: "\n" where the stream may be mid-line
        self.lead = ""
        self.since = self.last = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def doing(self, what: str) -> None:
        """``what`` is under way from now (the next line names it)."""
        with self.lock:
            self.what = what
            self.since = self.last = self.clock()

    def wrote(self) -> None:
        """Something was written: the silence starts again."""
        with self.lock:
            self.last = self.clock()

    def describe(self, now: float) -> str | None:
        """What is under way at ``now``, or ``None`` for nothing (called locked)."""
        if not self.what:
            return None
        return f"{self.what}: still working ({span(now - self.since)})"

    def due(self) -> str | None:
        """The line to write now, or ``None``."""
        with self.lock:
            now = self.clock()
            if now - self.last < self.interval:
                return None
            line = self.describe(now)
            if line is None:
                return None
            self.last = now
            return f"{self.prefix}... {line}"

    def _run(self) -> None:
        while not self._stop.wait(min(0.25, self.interval / 4)):
            line = self.due()
            if line:
                self.stream.write(self.lead + line + "\n")
                self.stream.flush()

    def start(self) -> None:
        """Start watching (a daemon thread)."""
        self._thread = threading.Thread(target=self._run, name="ticker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; no line comes after this returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@contextmanager
def ticking_stdout(
    what: str, interval: float = INTERVAL, prefix: str = ""
) -> Iterator[Ticker]:
    """``sys.stdout`` watched by a :class:`Ticker` doing ``what`` until the block ends.

    Everything the block prints (``print`` included) counts as progress.
    """
    real = sys.stdout
    ticker = Ticker(real, interval, prefix=prefix)
    ticker.doing(what)
    sys.stdout = _Watched(real, ticker.wrote)
    ticker.start()
    try:
        yield ticker
    finally:
        ticker.stop()
        sys.stdout = real


def run(what: str, argv: Sequence[str], interval: float = INTERVAL) -> int:
    """Run ``argv``, its output (stderr too) passed through line by line, ticking."""
    ticker = Ticker(sys.stdout, interval)
    ticker.doing(what)
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    except OSError as exc:
        print(f"{what}: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    ticker.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            ticker.wrote()
            sys.stdout.write(line)
            sys.stdout.flush()
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    finally:
        ticker.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``WHAT -- COMMAND ...``; exits with the command's code, 2 for a bad line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m harness.progress WHAT -- COMMAND ...", file=sys.stderr)
        return 2
    try:
        return run(args[0], args[2:])
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
