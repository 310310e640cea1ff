"""The line a user sees when a step goes quiet: what is at work and for how long."""

from __future__ import annotations

import io
import sys

from harness import progress
from harness.progress import Ticker
from tests.conftest import FakeClock


def test_a_quiet_step_is_named_with_its_time_every_interval() -> None:
    clock = FakeClock()
    ticker = Ticker(io.StringIO(), 10, prefix="  ", clock=clock)
    assert ticker.due() is None  # nothing under way yet
    ticker.doing("full queue")
    clock.now += 9
    assert ticker.due() is None
    clock.now += 1
    assert ticker.due() == "  ... full queue: still working (10 s)"
    clock.now += 5
    ticker.wrote()  # the step printed something itself
    clock.now += 9
    assert ticker.due() is None
    clock.now += 61
    assert ticker.due() == "  ... full queue: still working (1 min 25 s)"


def test_the_command_passes_its_output_and_code_and_ticks_when_quiet(capsys) -> None:
    code = progress.run(
        "building timelib",
        [
            sys.executable,
            "-c",
            "import sys, time; print('started', flush=True); time.sleep(1.5); "
            "print('to stderr', file=sys.stderr); sys.exit(3)",
        ],
        interval=0.4,
    )
    out = capsys.readouterr().out
    assert code == 3
    assert out.startswith("started\n")
    assert "... building timelib: still working (" in out
    assert out.rstrip().endswith("to stderr")


def test_a_bad_command_line_or_a_missing_program_is_said_plainly(capsys) -> None:
    assert progress.main(["installing"]) == 2
    assert (
        "usage: python -m harness.progress WHAT -- COMMAND" in capsys.readouterr().err
    )
    assert progress.main(["installing", "--", "/nonexistent/pip"]) == 127
    assert "installing: cannot run /nonexistent/pip" in capsys.readouterr().err


def test_what_the_block_prints_counts_as_progress(capsys) -> None:
    before = sys.stdout
    with progress.ticking_stdout("a scenario", interval=0.5) as ticker:
        ticker.last -= 1  # as if the scenario had been quiet for a second
        print("a line of its own")
        assert ticker.due() is None
    assert sys.stdout is before
    assert capsys.readouterr().out == "a line of its own\n"
