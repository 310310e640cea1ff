"""Run Salt's tests; run again alone the ones that only its slow-callback check failed.

Salt 3008's ``tests/pytests/unit/conftest.py`` fails any unit test during
which an asyncio callback holds the event loop for longer than 50 ms. That is
a timing assertion, and on a busy two-core machine it fails tests at random:
in CI a rest_tornado callback that only logs a traceback took 173 ms. A
handler that really blocks the loop fails the check every time it runs; a
test the machine slowed down passes when it runs again with nothing beside it.

So pytest runs once. If it failed, and every failure was that check and
nothing else, just those tests run again, alone (no xdist), up to
``reruns`` times. Any other failure fails the run at once, and a test that
fails the check in every run fails the run. What ran again, and how it ended,
is printed (and returned in :attr:`Outcome.note`): a pass after a rerun is
never silent.

Command line (what ``nox -s tests`` runs)::

    python -m series.timing_reruns [--reruns N] [--slow-callbacks FILE]
        [--timing-sensitive FILE] [PYTEST_OPTION ...] -- PATH ...

Tests that exceed the check on the pristine release itself, on this kind of
machine, are listed in ``patches/upstream-slow-callbacks`` and run with a
raised threshold (``--slow-callbacks``; see
``series/pytest_plugins/saltfleet_timing.py``): a rerun would not help them.

Tests whose own assertions measure wall time, and fail on the pristine release
when the machine is loaded, are listed in ``patches/upstream-timing-sensitive``
(``--timing-sensitive``): any failure of one of them is run again alone, as a
slow-callback failure is; failing again alone still fails the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from series.pytest_plugins.saltfleet_timing import known_slow

PLUGIN_DIR = Path(__file__).parent / "pytest_plugins"
PLUGIN = "saltfleet_timing"
# pytest: "tests were collected and run but some of the tests failed"
TESTS_FAILED = 1
DEFAULT_RERUNS = 2
CHECK = "upstream's asyncio slow-callback check (50 ms)"


@dataclass
class Outcome:
    """How the run ended: pytest's exit code, its output, what ran again."""

    returncode: int
    #: with ``capture``: each run's output; messages about reruns go with the run
    runs: list[str] = field(default_factory=list)
    reran: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def output(self) -> str:
        """Every run's output, in order."""
        return "".join(self.runs)


#: what upstream's tests make at a fixed path, whatever TMPDIR says:
#: tests/pytests/unit/test_master.py runs with ``cachedir: /tmp`` and gets
#: the job process directory made there
FIXED_PATHS = (Path("/tmp/proc"),)


@contextlib.contextmanager
def _fixed_paths_removed() -> Iterator[None]:
    """Remove the :data:`FIXED_PATHS` the block made, if they are empty
    directories (what another program keeps there is left alone)."""
    absent = [path for path in FIXED_PATHS if not os.path.lexists(path)]
    try:
        yield
    finally:
        for path in absent:
            with contextlib.suppress(OSError):  # not empty, or not a directory
                path.rmdir()


def run(
    pytest_cmd: Sequence[str],
    paths: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    workers: int = 1,
    reruns: int = DEFAULT_RERUNS,
    slow_callbacks: Path | None = None,
    timing_sensitive: Path | None = None,
    capture: bool = False,
    timeout: float | None = None,
) -> Outcome:
    """Run ``pytest_cmd`` (``python -m pytest`` and options) on ``paths``.

    ``slow_callbacks``: a file of tests known to exceed the check on the
    pristine release; they run with a raised threshold. ``timing_sensitive``:
    a file of tests whose any failure is run again alone. ``capture`` collects
    the output of every run in :attr:`Outcome.runs` instead of letting it
    through. ``timeout`` bounds all runs together;
    :class:`subprocess.TimeoutExpired` goes to the caller.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    outputs: list[str] = []
    said: list[str] = []  # with capture: goes in front of the next run's output
    env = _with_plugin(dict(os.environ if env is None else env))
    sensitive = (
        frozenset(known_slow(timing_sensitive)) if timing_sensitive else frozenset()
    )

    def tell(line: str) -> None:
        if capture:
            said.append(f"\n== saltfleet: {line}\n")
        else:
            print(f"saltfleet: {line}", flush=True)

    # Everything the runs write to a temp directory goes in this one and goes
    # with it: upstream's tests leave trees (salt-temp-*, tmpXXXX/{pillar,roots})
    # in TMPDIR, and pytest's basetemp (pytest-of-<user>, 100 MB a run). Short
    # name: the tests make unix sockets under both, limited to 107 characters.
    with tempfile.TemporaryDirectory(prefix="sf-") as tmp, _fixed_paths_removed():
        record = Path(tmp) / "failed.json"
        env["TMPDIR"] = str(Path(tmp) / "t")
        Path(env["TMPDIR"]).mkdir()
        base = [
            *pytest_cmd,
            "--basetemp",
            str(Path(tmp) / "b"),
            "-p",
            PLUGIN,
            # a line naming the running test when one runs long (dots only
            # come when a test ends)
            "-p",
            "saltfleet_progress",
            "--saltfleet-timing-record",
            str(record),
        ]
        if slow_callbacks is not None:
            base += ["--saltfleet-slow-callbacks", str(slow_callbacks)]

        def pytest(args: Sequence[str]) -> int:
            left = None if deadline is None else max(1.0, deadline - time.monotonic())
            pipe = subprocess.PIPE if capture else None
            # SIGTERM/SIGINT wait until Popen has returned: raised between
            # its fork and its return, the interrupt would leave a pytest
            # running that nothing kills. The child starts with the old mask.
            stopping = {signal.SIGTERM, signal.SIGINT}
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
            try:
                proc = subprocess.Popen(
                    [*base, *args],
                    cwd=cwd,
                    env=env,
                    stdout=pipe,
                    stderr=pipe,
                    text=True,
                    preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, mask),
                )
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            try:
                stdout, stderr = proc.communicate(timeout=left)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            if capture:
                outputs.append("".join(said) + stdout + stderr)
                said.clear()
            return proc.returncode

        returncode = pytest([*(["-n", str(workers)] if workers > 1 else []), *paths])
        reran: list[str] = []
        note = ""
        cause = CHECK
        for attempt in range(1, reruns + 1):
            if returncode != TESTS_FAILED:
                break
            timing = timing_only_failures(record, sensitive)
            if timing is None:
                break
            # a rerun runs only these, so later ones fail a subset of the first
            reran = reran or timing
            if sensitive.intersection(timing):
                cause = f"{CHECK} or, known timing-sensitive, their own timing"
            tell(
                f"{len(timing)} test(s) failed only {cause}; running them again "
                f"alone ({attempt} of {reruns}): {' '.join(timing)}"
            )
            record.unlink(missing_ok=True)
            returncode = pytest(timing)
            if returncode == 0:
                note = (
                    f"{len(reran)} test(s) failed only {cause} and passed "
                    f"when run again alone: {' '.join(reran)}"
                )
                tell(note)
        if reran and returncode != 0:
            note = f"{len(reran)} test(s) failed {cause} and did not pass when run again alone"
            tell(note)
    if said and outputs:
        outputs[-1] += "".join(said)
    return Outcome(returncode, outputs, reran, note)


def timing_only_failures(
    record: Path, sensitive: frozenset[str] = frozenset()
) -> list[str] | None:
    """The failed tests, if the slow-callback check alone failed every one.

    A test in ``sensitive`` (known to fail its own timing under load on the
    pristine release) counts whatever failed it. ``None`` when the record is
    missing or empty (pytest did not get to write it) or any failure was
    something else.
    """
    try:
        failed = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(failed, dict) or not failed:
        return None
    if not all(timing or test in sensitive for test, timing in failed.items()):
        return None
    return sorted(failed)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _with_plugin(env: dict[str, str]) -> dict[str, str]:
    parts = [
        str(PLUGIN_DIR),
        *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
    ]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """``[--reruns N] [--slow-callbacks FILE] [--timing-sensitive FILE] [PYTEST_OPTION ...] -- PATH ...``.

    Exits with pytest's code, or 2 for a bad command line. SIGTERM (nox or
    CI stopping the run) ends it like Ctrl-C: the running pytest is killed
    and the record's temporary directory removed, instead of both staying.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    args = list(sys.argv[1:] if argv is None else argv)
    reruns = DEFAULT_RERUNS
    lists: dict[str, Path | None] = {
        "--slow-callbacks": None,
        "--timing-sensitive": None,
    }
    while args[:1] in (["--reruns"], ["--slow-callbacks"], ["--timing-sensitive"]):
        flag, value = args[0], args[1] if len(args) > 1 else ""
        if flag == "--reruns" and not value.isdigit():
            print(
                "error: --reruns takes a whole number, e.g. --reruns 2", file=sys.stderr
            )
            return 2
        if flag == "--reruns":
            reruns = int(value)
        else:
            listed = lists[flag] = Path(value).resolve()
            if not value or not listed.is_file():
                print(f"error: {flag}: no such file: {value!r}", file=sys.stderr)
                return 2
        args = args[2:]
    if "--" not in args:
        print(
            "error: separate pytest's options from the test paths with --, e.g. "
            "python -m series.timing_reruns -- tests/pytests/unit/test_master.py",
            file=sys.stderr,
        )
        return 2
    cut = args.index("--")
    options, paths = args[:cut], args[cut + 1 :]
    workers = 1
    if "-n" in options:
        at = options.index("-n")
        if at + 1 >= len(options) or not options[at + 1].isdigit():
            print("error: -n takes a number of workers, e.g. -n 2", file=sys.stderr)
            return 2
        workers = int(options[at + 1])
        del options[at : at + 2]
    outcome = run(
        [sys.executable, "-m", "pytest", *options],
        paths,
        cwd=Path.cwd(),
        workers=workers,
        reruns=reruns,
        slow_callbacks=lists["--slow-callbacks"],
        timing_sensitive=lists["--timing-sensitive"],
    )
    return outcome.returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("timing_reruns: interrupted; pytest was stopped", file=sys.stderr)
        sys.exit(130)
